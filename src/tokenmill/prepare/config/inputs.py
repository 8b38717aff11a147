"""The inputs section: where the data comes from, how it is read, and where the output goes (``--destdir``)."""

from __future__ import annotations

import dataclasses
import glob
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, ClassVar

from tokenmill.errors import ConfigError
from tokenmill.prepare.config.files import check_files, check_inputs
from tokenmill.prepare.config.kinds import (
    LANG_CODE,
    NON_EMPTY,
    SPLITS,
    SUFFIX,
    Documents,
    InputFormat,
    OnInvalidUtf8,
    OnMalformed,
)
from tokenmill.prepare.config.section import Section
from tokenmill.store.remote import is_url
from tokenmill.text.sources import detect_format

if TYPE_CHECKING:
    from tokenmill.prepare.config.model import PrepareConfig

log = logging.getLogger("tokenmill.prepare.config")


@dataclass(frozen=True)
class InputSettings(Section):
    """The files to read (fairseq-preprocess's names), their format and how bad rows are handled."""

    TITLE: ClassVar[str] = "inputs"

    destdir: Annotated[str, NON_EMPTY] = field(
        default="data-bin",
        metadata={"help": "Output directory (fairseq's --destdir)."},
    )
    source_lang: Annotated[str | None, LANG_CODE] = field(
        default=None,
        metadata={"help": "Source language code: files are read as {prefix}.{source_lang} (fairseq's --source-lang)."},
    )
    target_lang: Annotated[str | None, LANG_CODE] = field(
        default=None,
        metadata={"help": "Target language code; leave it out for monolingual data (fairseq's --only-source)."},
    )
    trainpref: list[str] = field(
        default_factory=list,
        metadata={"help": "Training prefixes (with --input-format tsv, jsonl, parquet, arrow: files or globs; "
                          "hf-dataset, hf-cache: folders), comma-separated; concatenated in order."},
    )
    validpref: list[str] = field(
        default_factory=list,
        metadata={"help": "Validation prefixes or files, comma-separated."},
    )
    testpref: list[str] = field(default_factory=list, metadata={"help": "Test prefixes or files, comma-separated."})
    input_format: InputFormat = field(
        default="text",
        metadata={"help": "Input layout: text (one file per language), tsv (two columns), jsonl (one object per "
                          "line), parquet, arrow (IPC file or stream), hf-dataset (a datasets.save_to_disk folder) or "
                          "hf-cache (a split in the datasets cache); one row per item for the last four (pip install "
                          "tokenmill[parquet]). Parquet, Arrow and datasets folders are found by their content "
                          "whatever is given."},
    )
    source_key: Annotated[str | None, NON_EMPTY] = field(
        default=None,
        metadata={"help": 'JSONL key or table column of the source side (default: the source language; "text" for '
                          "monolingual input, as Megatron's --json-keys); a dotted path reaches a struct field "
                          "(translation.en)."},
    )
    target_key: Annotated[str | None, NON_EMPTY] = field(
        default=None,
        metadata={"help": "JSONL key or table column of the target side (default: the target language; dotted "
                          "paths as above)."},
    )
    json_keys: list[str] = field(
        default_factory=list,
        metadata={"help": "Megatron's name for --source-key with monolingual JSONL; one key per run (Megatron writes "
                          "one dataset per key)."},
    )
    on_invalid_utf8: OnInvalidUtf8 = field(
        default="error",
        metadata={"help": "Invalid UTF-8: error stops at file:line, replace puts U+FFFD, skip drops the pair (both "
                          "counted)."},
    )
    align_suffix: Annotated[str | None, SUFFIX] = field(
        default=None,
        metadata={"help": 'Read word alignments from {prefix}.{align_suffix}: one Pharaoh line ("0-0 1-2") per pair, '
                          "positions of whitespace tokens (fairseq-preprocess's --align-suffix; needs --tokenizer "
                          "none)."},
    )
    on_malformed: OnMalformed = field(
        default="error",
        metadata={"help": "TSV/JSONL rows without both fields: error stops, skip drops them (counted)."},
    )
    documents: Documents = field(
        default="line",
        metadata={"help": "Monolingual text: line is one document per line; blank-line makes blocks of lines "
                          "separated by blank lines into documents (a block's lines joined by a space)."},
    )
    append_eod: bool = field(
        default=False,
        metadata={"help": "Monolingual: end every document with --eod-symbol instead of </s> (Megatron's --append-"
                          "eod)."},
    )
    eod_symbol: str = field(
        default="</s>",
        metadata={"help": "The end-of-document token of --append-eod (e.g. <|endoftext|>); added to the dictionary."},
    )

    @property
    def monolingual(self) -> bool:
        """No target language: one side per item."""
        return not self.target_lang

    @property
    def langs(self) -> list[str]:
        """The languages read: the source's, and the target's for pairs."""
        return [self.source_lang] if self.monolingual else [self.source_lang, self.target_lang]  # type: ignore[list-item]

    def split_prefixes(self) -> dict[str, list[str]]:
        """The prefixes of each split given, in the order train, valid, test."""
        return {split: getattr(self, f"{split}pref") for split in SPLITS if getattr(self, f"{split}pref")}

    def checked(self, config: PrepareConfig) -> InputSettings:
        """The languages and files are given, the reading settings fit each other and the tokenizer; the
        JSONL key of ``--json-keys`` and the format found by content are filled in."""
        self._check_languages()
        inputs = dataclasses.replace(self, source_key=self._json_key(), input_format=self._found_format())
        inputs._check_documents(config.tokenizer.name)
        inputs._check_alignments(config.tokenizer.name)
        return inputs

    def _check_languages(self) -> None:
        if not self.source_lang:
            raise ConfigError("--source-lang is required (files are read as {prefix}.{lang} and named after it)")
        if not self.trainpref:
            raise ConfigError("--trainpref is required: the training data to prepare")
        if self.source_lang == self.target_lang:
            raise ConfigError(
                f"--source-lang and --target-lang are both {self.source_lang!r}: give two different languages, "
                "or leave out --target-lang for monolingual data"
            )

    def _json_key(self) -> str | None:
        """Megatron's ``--json-keys``: one key per run, which is the source key."""
        if not self.json_keys:
            return self.source_key
        if len(self.json_keys) > 1 or (self.source_key and self.source_key != self.json_keys[0]):
            raise ConfigError(
                f"--json-keys {','.join(self.json_keys)}: give one key per run (Megatron writes one dataset "
                "per key; run prepare once per key, each with its own --destdir)"
            )
        return self.json_keys[0]

    def _found_format(self) -> str:
        """A table format found by content (Parquet's PAR1, Arrow's magic, a save_to_disk folder; a URL by its
        extension) wins over the format given: such a file read as text or JSON lines is only garbage."""
        first = next((p for prefixes in self.split_prefixes().values() for p in prefixes), None)
        if first is None:
            return self.input_format
        if not is_url(first) and any(c in first for c in "*?["):
            first = next(iter(sorted(glob.glob(first))), first)
        found = detect_format(first)
        if found is not None and found != self.input_format:
            log.info("--input-format %s: %s is %s by its content; reading it as %s", self.input_format, first,
                     found, found)
            return found
        return self.input_format

    def _check_documents(self, tokenizer: str) -> None:
        if self.documents == "blank-line" and (not self.monolingual or self.input_format != "text"):
            raise ConfigError("--documents blank-line is for monolingual plain text (no --target-lang, text input)")
        if self.append_eod and (not self.monolingual or tokenizer == "t2t-subword"):
            raise ConfigError("--append-eod is for monolingual data with --tokenizer sentencepiece or none")
        if not self.eod_symbol or any(c.isspace() for c in self.eod_symbol):
            raise ConfigError(f"--eod-symbol must be one token without spaces, got {self.eod_symbol!r}")
        if self.input_format == "tsv" and self.monolingual:
            raise ConfigError("tsv input holds pairs: give --target-lang as well")

    def _check_alignments(self, tokenizer: str) -> None:
        if self.align_suffix and (tokenizer != "none" or self.input_format != "text" or self.monolingual):
            raise ConfigError(
                "--align-suffix needs --tokenizer none, --input-format text and both languages: alignment "
                "positions count the whitespace tokens that are stored"
            )
        if self.align_suffix and self.on_invalid_utf8 == "skip":
            raise ConfigError("--align-suffix cannot be combined with --on-invalid-utf8 skip (use error or replace)")

    def check_files(self, config: PrepareConfig) -> None:
        """Every input file exists: ``{prefix}.{lang}`` for text, the files (or matching globs) otherwise."""
        for split, prefixes in self.split_prefixes().items():
            flag = config.label(f"{split}pref")  # --input when Megatron's flag gave the train files
            if self.input_format == "text":
                check_inputs(flag, prefixes, self.langs)
            else:
                check_files(flag, prefixes, self.input_format)
            if self.align_suffix:
                check_inputs(f"--{split}pref with --align-suffix", prefixes, [self.align_suffix])
