"""Settings of ``tokenmill prepare``: one dataclass, loadable from YAML, overridable by flags.

Names follow fairseq-preprocess (``source_lang``, ``trainpref``, ``nwordssrc`` ...) and
``spm_train`` (``vocab_size``, ``model_type``, ``character_coverage`` ...) so the flags users
already know work; a YAML key is the flag name with ``_`` for ``-``. Unknown keys are errors.
"""

from __future__ import annotations

import dataclasses
import os
import re
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
_DIRECTION = re.compile(r"\w+-\w+")  # letters, digits, _: a name that stays a plain file name


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
    json_keys: list[str] = field(default_factory=list)
    """Megatron's name for --source-key with monolingual JSONL (one key per run: Megatron writes one
    dataset per key; run prepare once per key)."""
    on_invalid_utf8: str = "error"
    """error (stop at file:line) | replace (U+FFFD, counted) | skip (drop the pair, counted)."""
    align_suffix: str | None = None
    """Word alignments beside the pairs, {pref}.{align_suffix}: one Pharaoh line ("0-0 1-2") per pair,
    positions of whitespace tokens (fairseq-preprocess's --align-suffix; needs --tokenizer none)."""
    on_malformed: str = "error"
    """TSV/JSONL rows without both fields: error | skip (counted)."""
    documents: str = "line"
    """Monolingual text: line (one document per line) | blank-line (documents are blocks of lines
    separated by blank lines; a block's lines are joined by a space into one item)."""
    append_eod: bool = False
    """Monolingual: end every document with --eod-symbol instead of </s> (Megatron's --append-eod)."""
    eod_symbol: str = "</s>"
    """The end-of-document token of --append-eod (e.g. <|endoftext|>); added to the dictionary."""

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

    # ---- many directions at once (Open-NLLB's data_bin/shardNNN layout)
    directions: dict[str, Any] = field(default_factory=dict)
    """Language directions prepared together with one SentencePiece model and one dictionary, e.g.
    eng_Latn-tur_Latn,eng_Latn-zho_Hans: files at {trainpref}.{direction}.{lang} (and valid/test
    alike); in YAML also a mapping direction -> {trainpref, validpref, testpref} of its own prefixes."""
    num_shards: int = 1
    """Many directions: split each direction's train into this many shardNNN/ folders (fewer for
    directions with fewer pairs); valid/test go to shard000."""
    spm_temperature: float = 1.0
    """Many directions: SentencePiece's training sample takes language l's lines in proportion to
    n_l^(1/T), so small languages keep their characters (1: as they come; 5: NLLB-like)."""
    lang_token_format: str = "__{lang}__"
    """Many directions: language tokens added to the shared dictionary, one per language."""
    retrain_tokenizer: bool = False
    """Many directions: train SentencePiece again when directions were added (by default the model
    trained on the first directions is kept and only the new directions are encoded)."""

    # ---------------------------------------------------------------- construction
    @property
    def monolingual(self) -> bool:
        return not self.target_lang

    @property
    def multilingual(self) -> bool:
        return bool(self.directions)

    @property
    def langs(self) -> list[str]:
        return [self.source_lang] if self.monolingual else [self.source_lang, self.target_lang]  # type: ignore[list-item]

    def split_prefixes(self) -> dict[str, list[str]]:
        return {split: getattr(self, f"{split}pref") for split in SPLITS if getattr(self, f"{split}pref")}

    def validate(self) -> PrepareConfig:
        if self.multilingual:
            return self._validate_multilingual()
        if not self.source_lang:
            raise ConfigError("--source-lang is required (files are read as {prefix}.{lang} and named after it)")
        if not self.trainpref:
            raise ConfigError("--trainpref is required: the training data to prepare")
        if self.input_format not in ("text", "tsv", "jsonl"):
            raise ConfigError(f"--input-format must be text, tsv or jsonl, not {self.input_format!r}")
        if self.json_keys:
            if len(self.json_keys) > 1 or (self.source_key and self.source_key != self.json_keys[0]):
                raise ConfigError(
                    f"--json-keys {','.join(self.json_keys)}: give one key per run (Megatron writes one dataset "
                    "per key; run prepare once per key, each with its own --destdir)"
                )
            self.source_key = self.json_keys[0]
        if self.documents not in ("line", "blank-line"):
            raise ConfigError(f"--documents must be line or blank-line, not {self.documents!r}")
        if self.documents == "blank-line" and (not self.monolingual or self.input_format != "text"):
            raise ConfigError("--documents blank-line is for monolingual plain text (no --target-lang, text input)")
        if self.append_eod and (not self.monolingual or self.tokenizer == "t2t-subword"):
            raise ConfigError("--append-eod is for monolingual data with --tokenizer sentencepiece or none")
        if not self.eod_symbol or any(c.isspace() for c in self.eod_symbol):
            raise ConfigError(f"--eod-symbol must be one token without spaces, got {self.eod_symbol!r}")
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

    def _validate_multilingual(self) -> PrepareConfig:
        for name, files in self.directions.items():
            if not _DIRECTION.fullmatch(name):
                raise ConfigError(
                    f"direction {name!r} is not 'src-tgt' (two different language codes of letters, digits and '_', "
                    "e.g. eng_Latn-tur_Latn)"
                )
            src, tgt = name.split("-")
            if src == tgt:
                raise ConfigError(f"direction {name!r}: source and target language are the same")
            if not files.get("trainpref"):
                raise ConfigError(
                    f"direction {name}: no training files (give trainpref for it, or a global --trainpref)"
                )
        wrong = [
            flag for flag, bad in (
                ("--tokenizer other than sentencepiece", self.tokenizer != "sentencepiece"),
                ("--input-format other than text", self.input_format != "text"),
                ("--source-lang/--target-lang (the directions name them)", bool(self.source_lang or self.target_lang)),
                ("--shard-size (use --num-shards)", bool(self.shard_size)),
                ("--align-suffix", bool(self.align_suffix)),
                ("--srcdict/--tgtdict (the shared dictionary is built from the SentencePiece model)",
                 bool(self.srcdict or self.tgtdict)),
                ("--no-joint-spm", not self.joint_spm),
            ) if bad
        ]
        if wrong:
            raise ConfigError("with --directions these settings do not apply: " + "; ".join(wrong))
        if self.spm_model and not Path(self.spm_model).is_file():
            raise ConfigError(f"--spm-model {self.spm_model} does not exist")
        if not self.spm_temperature > 0:
            raise ConfigError(f"--spm-temperature must be > 0, got {self.spm_temperature}")
        if self.num_shards < 1:
            raise ConfigError(f"--num-shards must be >= 1, got {self.num_shards}")
        if "{lang}" not in self.lang_token_format or any(c.isspace() for c in self.lang_token_format):
            raise ConfigError(
                f"--lang-token-format {self.lang_token_format!r} must contain {{lang}} and no spaces "
                "(e.g. __{lang}__)"
            )
        try:
            Layout(self.layout)
        except ValueError:
            raise ConfigError(f"--layout must be fairseq or megatron, not {self.layout!r}") from None
        if self.leakage not in ("pair", "source", "target", "either", "off"):
            raise ConfigError(f"--leakage must be pair, source, target, either or off, not {self.leakage!r}")
        return self

    def direction_config(self, name: str) -> PrepareConfig:
        """The single-direction settings of direction ``name`` (its files, the shared everything else)."""
        src, tgt = name.split("-")
        files = self.directions[name]
        return dataclasses.replace(
            self, directions={}, source_lang=src, target_lang=tgt, trainpref=list(files.get("trainpref", [])),
            validpref=list(files.get("validpref", [])), testpref=list(files.get("testpref", [])),
            num_shards=1, joined_dictionary=True,
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_NESTED = {"normalize": Normalizer, "filters": FilterConfig}
_PREFIXES = ("trainpref", "validpref", "testpref")
_LISTS = {"trainpref", "validpref", "testpref", "user_defined_symbols", "json_keys"}


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


def _directions(value: Any, settings: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """Directions as {name: {"trainpref": [...], ...}}; a bare name takes {pref}.{name} of the global prefixes."""
    if isinstance(value, dict):
        entries = value
    else:
        entries = dict.fromkeys(_as_list(value))
    result: dict[str, dict[str, list[str]]] = {}
    for name, files in entries.items():
        name = str(name)
        if files is None:
            files = {split: [f"{p}.{name}" for p in _as_list(settings.get(split))] for split in _PREFIXES}
        elif isinstance(files, dict):
            unknown = sorted(set(files) - set(_PREFIXES))
            if unknown:
                raise ConfigError(f"direction {name}: unknown key(s) {', '.join(unknown)}; use {', '.join(_PREFIXES)}")
            files = {split: _as_list(files.get(split)) for split in _PREFIXES}
        else:
            raise ConfigError(f"direction {name}: expected a mapping of {', '.join(_PREFIXES)} (or nothing)")
        result[name] = files
    return result


def build_config(settings: dict[str, Any]) -> PrepareConfig:
    """A validated config from a mapping (YAML content merged with flags); unknown keys are errors."""
    known = {f.name for f in fields(PrepareConfig)}
    normalized = {key.replace("-", "_"): value for key, value in settings.items()}
    unknown = sorted(set(normalized) - known)
    if unknown:
        raise ConfigError(f"unknown setting(s) {', '.join(unknown)}; see `tokenmill prepare --help`")
    values: dict[str, Any] = {}
    for key, value in normalized.items():
        if key == "directions":
            values[key] = _directions(value, normalized)
        elif key in _NESTED:
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
