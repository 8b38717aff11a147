"""Settings of ``tokenmill prepare``: one dataclass, loadable from YAML, overridable by flags.

Names follow fairseq-preprocess (``source_lang``, ``trainpref``, ``nwordssrc`` ...) and
``spm_train`` (``vocab_size``, ``model_type``, ``character_coverage`` ...) so the flags users
already know work; a YAML key is the flag name with ``_`` for ``-``. Unknown keys are errors.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from tokenmill.errors import ConfigError
from tokenmill.store.format import Layout
from tokenmill.text.filters import FilterConfig
from tokenmill.text.normalize import Normalizer

SPLITS = ("train", "valid", "test")
TOKENIZERS = ("sentencepiece", "none", "t2t-subword")


@dataclass
class PrepareConfig:
    """Everything one ``prepare`` run needs. Paths are as given (relative to the working directory)."""

    # ---- inputs
    destdir: str = "data-bin"
    """Output directory (fairseq's --destdir)."""
    source_lang: str | None = None
    """Source language code: files are {pref}.{source_lang} (fairseq's --source-lang)."""
    target_lang: str | None = None
    """Target language code; leave empty for monolingual data (fairseq's --only-source)."""
    trainpref: list[str] = field(default_factory=list)
    """Training prefixes (or files for tsv/jsonl); several are concatenated in order."""
    validpref: list[str] = field(default_factory=list)
    """Validation prefixes/files (fairseq allows comma-separated lists)."""
    testpref: list[str] = field(default_factory=list)
    """Test prefixes/files."""
    input_format: str = "text"
    """text (one file per side) | tsv (two columns) | jsonl (two keys)."""
    source_key: str | None = None
    """JSONL key of the source side (default: source_lang; "text" for monolingual JSONL, like Megatron's
    --json-keys)."""
    target_key: str | None = None
    """JSONL key of the target side (default: target_lang)."""
    on_invalid_utf8: str = "error"
    """error (stop at file:line) | replace (U+FFFD, counted) | skip (drop the pair, counted)."""
    align_suffix: str | None = None
    """Word alignments beside the pairs, {pref}.{align_suffix}: one Pharaoh line ("0-0 1-2") per pair,
    positions of whitespace tokens (fairseq-preprocess's --align-suffix; needs --tokenizer none)."""
    on_malformed: str = "error"
    """TSV/JSONL rows without both fields: error | skip (counted)."""

    # ---- cleaning
    normalize: Normalizer = field(default_factory=Normalizer)
    """Unicode clean-up: nfkc, fullwidth, remove_control, collapse_whitespace."""
    filters: FilterConfig = field(default_factory=FilterConfig)
    """Pair filters applied to train (and, with --filter-heldout, to valid/test)."""
    filter_heldout: bool = False
    """Apply the filters to valid/test too (by default they are only normalized)."""
    dedup: bool = True
    """Drop exact duplicate training pairs (first occurrence kept)."""
    leakage: str = "pair"
    """Drop training pairs that also appear in valid/test: pair | source | target | either | off."""

    # ---- tokenizer
    tokenizer: str = "sentencepiece"
    """sentencepiece | none (input is whitespace-tokenized) | t2t-subword."""
    spm_model: str | None = None
    """Use this SentencePiece .model instead of training one."""
    vocab_size: int = 8000
    """SentencePiece vocabulary size (spm_train's --vocab_size)."""
    model_type: str = "unigram"
    """unigram | bpe | char | word (spm_train's --model_type)."""
    character_coverage: float = 0.9995
    """Share of characters the model covers: 1.0 for small alphabets, 0.9995 for CJK."""
    input_sentence_size: int = 1_000_000
    """Train on a reservoir sample of this many lines, drawn while streaming."""
    user_defined_symbols: list[str] = field(default_factory=list)
    """Pieces never split, e.g. language tags (comma-separated); also put in the dictionaries."""
    byte_fallback: bool = False
    """Unknown characters become UTF-8 byte pieces instead of <unk>."""
    joint_spm: bool = True
    """One SentencePiece model for both sides (False: one per language)."""
    approx_vocab_size: int = 8192
    """t2t-subword: target vocabulary size (T2T's build_to_target_size)."""
    file_byte_budget: int = 10_000_000
    """t2t-subword: bytes of text sampled per file to count tokens."""
    max_subtoken_length: int | None = None
    """t2t-subword: longest subtoken considered (None: unlimited)."""

    # ---- dictionaries (fairseq-preprocess names)
    joined_dictionary: bool = False
    """One dictionary for both languages."""
    srcdict: str | None = None
    """Reuse this dict.txt for the source side."""
    tgtdict: str | None = None
    """Reuse this dict.txt for the target side."""
    nwordssrc: int = -1
    """Keep at most this many source dictionary entries (-1: all)."""
    nwordstgt: int = -1
    """Keep at most this many target dictionary entries (-1: all)."""
    thresholdsrc: int = 0
    """Drop source words seen fewer times."""
    thresholdtgt: int = 0
    """Drop target words seen fewer times."""
    padding_factor: int = 8
    """Pad dictionaries to a multiple of this (fp16-friendly embeddings)."""

    # ---- output
    layout: str = "fairseq"
    """fairseq (fairseq-train reads it) | megatron (megatron-core reads it)."""
    shard_size: int = 0
    """Split train into shardNNN/ folders of at most this many pairs (0: no shards)."""
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    """Tokenizer threads (default: all cores)."""
    seed: int = 1
    """Seed of the tokenizer's training sample."""
    chunk_lines: int = 65536
    """Lines per batch handed to the tokenizer."""

    # ---------------------------------------------------------------- construction
    @property
    def monolingual(self) -> bool:
        return not self.target_lang

    @property
    def langs(self) -> list[str]:
        return [self.source_lang] if self.monolingual else [self.source_lang, self.target_lang]  # type: ignore[list-item]

    def split_prefixes(self) -> dict[str, list[str]]:
        return {split: getattr(self, f"{split}pref") for split in SPLITS if getattr(self, f"{split}pref")}

    def validate(self) -> PrepareConfig:
        if not self.source_lang:
            raise ConfigError("--source-lang is required (files are read as {prefix}.{lang} and named after it)")
        if not self.trainpref:
            raise ConfigError("--trainpref is required: the training data to prepare")
        if self.input_format not in ("text", "tsv", "jsonl"):
            raise ConfigError(f"--input-format must be text, tsv or jsonl, not {self.input_format!r}")
        if self.input_format == "tsv" and self.monolingual:
            raise ConfigError("tsv input holds pairs: give --target-lang as well")
        if self.tokenizer not in TOKENIZERS:
            raise ConfigError(f"--tokenizer must be one of {', '.join(TOKENIZERS)}, not {self.tokenizer!r}")
        if self.spm_model and self.tokenizer != "sentencepiece":
            raise ConfigError("--spm-model only applies to --tokenizer sentencepiece")
        if self.spm_model and not Path(self.spm_model).is_file():
            raise ConfigError(f"--spm-model {self.spm_model} does not exist")
        for name in ("srcdict", "tgtdict"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise ConfigError(f"--{name} {path} does not exist")
        try:
            Layout(self.layout)
        except ValueError:
            raise ConfigError(f"--layout must be fairseq or megatron, not {self.layout!r}") from None
        if self.shard_size < 0 or self.workers < 1 or self.chunk_lines < 1 or self.padding_factor < 1:
            raise ConfigError("--shard-size must be >= 0; --workers, --chunk-lines and --padding-factor >= 1")
        if self.align_suffix and (self.tokenizer != "none" or self.input_format != "text" or self.monolingual):
            raise ConfigError(
                "--align-suffix needs --tokenizer none, --input-format text and both languages: alignment "
                "positions count the whitespace tokens that are stored"
            )
        if self.align_suffix and self.on_invalid_utf8 == "skip":
            raise ConfigError("--align-suffix cannot be combined with --on-invalid-utf8 skip (use error or replace)")
        if self.leakage not in ("pair", "source", "target", "either", "off"):
            raise ConfigError(f"--leakage must be pair, source, target, either or off, not {self.leakage!r}")
        if self.joined_dictionary and self.srcdict and self.tgtdict and self.srcdict != self.tgtdict:
            raise ConfigError("--joined-dictionary with different --srcdict and --tgtdict")
        return self

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_NESTED = {"normalize": Normalizer, "filters": FilterConfig}
_LISTS = {"trainpref", "validpref", "testpref", "user_defined_symbols"}


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part for part in value.split(",") if part]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    raise ConfigError(f"expected a string or a list, got {value!r}")


def _nested(kind: type, value: Any, key: str) -> Any:
    if isinstance(value, kind):
        return value
    if not isinstance(value, dict):
        raise ConfigError(f"config key {key!r} must be a mapping of {kind.__name__} settings")
    known = {f.name for f in fields(kind)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise ConfigError(f"unknown {key} setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if kind is FilterConfig and isinstance(value.get("langid_candidates"), list):
        value = {**value, "langid_candidates": tuple(value["langid_candidates"])}
    try:
        return kind(**value)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"bad {key} settings: {error}") from None


def build_config(settings: dict[str, Any]) -> PrepareConfig:
    """A validated config from a mapping (YAML content merged with flags); unknown keys are errors."""
    known = {f.name for f in fields(PrepareConfig)}
    normalized = {key.replace("-", "_"): value for key, value in settings.items()}
    unknown = sorted(set(normalized) - known)
    if unknown:
        raise ConfigError(f"unknown setting(s) {', '.join(unknown)}; see `tokenmill prepare --help`")
    values: dict[str, Any] = {}
    for key, value in normalized.items():
        if key in _NESTED:
            values[key] = _nested(_NESTED[key], value, key)
        elif key in _LISTS:
            values[key] = _as_list(value)
        else:
            values[key] = value
    try:
        config = PrepareConfig(**values)
    except TypeError as error:
        raise ConfigError(f"bad settings: {error}") from None
    return config.validate()


def load_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a YAML config (``yaml.safe_load`` only); relative data paths stay relative to the CWD."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except OSError as error:
        raise ConfigError(f"cannot read config {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of settings")
    return data
