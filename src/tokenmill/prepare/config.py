"""Settings of ``tokenmill prepare``: one dataclass, loadable from YAML, overridable by flags.

Names follow fairseq-preprocess (``source_lang``, ``trainpref``, ``nwordssrc`` ...) and
``spm_train`` (``vocab_size``, ``model_type``, ``character_coverage`` ...) so the flags users
already know work; a YAML key is the flag name with ``_`` for ``-``. Unknown keys are errors.

One source of truth: a field's type hint says what it takes (``Literal`` choices, ``Annotated``
ranges; checked by :mod:`tokenmill.settings`, the same hint gives the flag's type), its
``metadata["help"]`` is the flag's help, and :data:`SECTIONS` names the help section a run of fields
is listed in (the ``# ---- name`` comments mark the same runs for the reader).
:meth:`PrepareConfig.validate` checks everything, input files included, before any work starts.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import glob
import json
import logging
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args

import yaml

from tokenmill.errors import ConfigError, TokenmillError, opening
from tokenmill.prepare.engines import engine_options, engine_part
from tokenmill.settings import (
    LANG_CODE,
    Pattern,
    Range,
    check_settings,
    did_you_mean,
    hints,
    is_sequence,
    problem,
)
from tokenmill.store.remote import is_url
from tokenmill.text.charclass import script_table
from tokenmill.text.filters import FilterConfig
from tokenmill.text.normalize import Normalizer
from tokenmill.text.readers import OnInvalidUtf8, OnMalformed, resolve_prefix
from tokenmill.text.sources import detect_format
from tokenmill.vocab.dictionary import Dictionary
from tokenmill.vocab.sentencepiece import SentencePieceEncoder

log = logging.getLogger(__name__)
SPLITS = ("train", "valid", "test")
InputFormat = Literal["text", "tsv", "jsonl", "parquet", "arrow", "hf-dataset"]  # tokenmill.text.sources.FORMATS
Documents = Literal["line", "blank-line"]
Leakage = Literal["pair", "source", "target", "either", "off"]
Tokenizer = Literal["sentencepiece", "hf", "tiktoken", "t2t-subword", "none"]
HFModelType = Literal["byte-level-bpe", "bpe", "unigram", "wordpiece"]
NormalizationRule = Literal["nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity"]
MegatronTokenizer = Literal["HuggingFaceTokenizer", "TikTokenizer", "SentencePieceTokenizer", "GPT2BPETokenizer",
                            "Llama2Tokenizer"]  # the last one is refused with the way to get its ids (see below)
LANG_CODE_RE = re.compile(LANG_CODE.regex)
_MEGATRON_TOKENIZERS = {"HuggingFaceTokenizer": "hf", "TikTokenizer": "tiktoken",
                        "SentencePieceTokenizer": "sentencepiece", "GPT2BPETokenizer": "hf"}
ModelType = Literal["unigram", "bpe", "char", "word"]
CleanPreset = Literal["bitext"]
NearDedupSides = Literal["both", "src", "tgt"]
LayoutName = Literal["fairseq", "megatron"]  # tokenmill.store.format.Layout's values
EngineName = Literal["local", "ray", "slurm"] | str
"""A registered engine's name (:func:`tokenmill.prepare.engines.engine_names`): the built-in ones are the
command line's choices; a program may register more (checked against the registry when validated)."""
Encoder = Literal["auto", "reference", "fast"]  # tokenmill.vocab.encoder_choice.EncoderMode's values
_ENCODER_HELP = (
    "auto: encode with the fast encoder (pip install 'tokenmill[fast]') where it supports the model, proven on a "
    "sample of each run's documents (other ids: the tokenizer's own library, with a warning); reference: always the "
    "tokenizer's own library; fast: the fast encoder or an error."
)
_CHECK_HELP = (
    "Random documents in the sample that proves the fast encoder (besides the longest ones, ones in other scripts "
    "and ones holding special-token text)."
)
RECORDED_IF_SET = ("clean_preset", "decontaminate", "decontaminate_ngram", "near_dedup", "near_dedup_ngram",
                   "near_dedup_bands", "near_dedup_rows", "near_dedup_seed", "near_dedup_sides")
"""Settings added after manifests were first written: the manifest records them only when they differ from
their defaults (see :meth:`PrepareConfig.recorded`)."""
RUN_ONLY = ("engine", "tasks", "ray_address", "encoder", "encoder_check_docs")
"""Settings of how a run is carried out, not of what it makes: left out of the manifest's settings (the
output is the same for every value) and recorded under its ``run`` key instead."""
TOKENIZERS: tuple[str, ...] = get_args(Tokenizer)
_DIRECTION = re.compile(r"\w+-\w+")  # letters, digits, _: a name that stays a plain file name
_NON_EMPTY = Pattern(r"(?s).+", "a non-empty string")
_SUFFIX = Pattern(r"[^/\\\s]+", "a file-name suffix (not empty; no '/', '\\' or spaces)")

AtLeast0 = Range(0)
AtLeast1 = Range(1)


@dataclass
class PrepareConfig:
    """Everything one ``prepare`` run needs. Paths are as given (relative to the working directory)."""

    # ---- inputs
    destdir: Annotated[str, _NON_EMPTY] = field(
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
                          "hf-dataset: folders), comma-separated; concatenated in order."},
    )
    validpref: list[str] = field(
        default_factory=list,
        metadata={"help": "Validation prefixes or files, comma-separated."},
    )
    testpref: list[str] = field(default_factory=list, metadata={"help": "Test prefixes or files, comma-separated."})
    input_format: InputFormat = field(
        default="text",
        metadata={"help": "Input layout: text (one file per language), tsv (two columns), jsonl (one object per "
                          "line), parquet, arrow (IPC file or stream) or hf-dataset (a datasets.save_to_disk folder); "
                          "one row per item for the last three (pip install tokenmill[parquet]). Parquet, Arrow and "
                          "save_to_disk folders are found by their content whatever is given."},
    )
    source_key: Annotated[str | None, _NON_EMPTY] = field(
        default=None,
        metadata={"help": 'JSONL key or table column of the source side (default: the source language; "text" for '
                          "monolingual input, as Megatron's --json-keys); a dotted path reaches a struct field "
                          "(translation.en)."},
    )
    target_key: Annotated[str | None, _NON_EMPTY] = field(
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
    align_suffix: Annotated[str | None, _SUFFIX] = field(
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

    # ---- cleaning
    normalize: Normalizer = field(
        default_factory=Normalizer,
        metadata={"help": "Unicode clean-up: nfkc, fullwidth, remove_control, collapse_whitespace."},
    )
    filters: FilterConfig = field(
        default_factory=FilterConfig,
        metadata={"help": "Pair filters applied to train (and, with --filter-heldout, to valid/test)."},
    )
    filter_heldout: bool = field(
        default=False,
        metadata={"help": "Apply the filters to valid/test too (by default they are only normalized)."},
    )
    dedup: bool = field(
        default=True,
        metadata={"help": "Drop exact duplicate training pairs (the first occurrence is kept)."},
    )
    leakage: Leakage = field(
        default="pair",
        metadata={"help": "Drop training pairs that also appear in valid/test: the same pair, source, target, either "
                          "side, or off."},
    )
    clean_preset: CleanPreset | None = field(
        default=None,
        metadata={"help": "Turn on a set of filters: bitext = bicleaner-hardrules' model-free rules and OpusFilter's "
                          "numeral, punctuation, HTML, repetition and common-substring filters at their tools' "
                          "thresholds (filters you give yourself win; see docs/how-to/cleaning.md)."},
    )
    decontaminate: list[str] = field(
        default_factory=list,
        metadata={"help": "Drop training items that share a word n-gram with any of these text files (e.g. a FLORES "
                          "or WMT test set, one segment per line), either side of a pair; comma-separated."},
    )
    decontaminate_ngram: Annotated[int, AtLeast1] = field(
        default=13,
        metadata={"help": "Words per n-gram of --decontaminate (a line with fewer words is compared whole)."},
    )
    near_dedup: bool = field(
        default=False,
        metadata={"help": "Drop near-duplicate training items (MinHash + LSH over word n-grams): of each cluster "
                          "of near-duplicates the item that comes first in the input is kept "
                          "(docs/how-to/near-duplicates.md)."},
    )
    near_dedup_ngram: Annotated[int, AtLeast1] = field(
        default=5,
        metadata={"help": "Words per shingle of --near-dedup (an item with fewer words is one shingle)."},
    )
    near_dedup_bands: Annotated[int, AtLeast1] = field(
        default=14,
        metadata={"help": "LSH bands of --near-dedup (permutations = bands x rows; more bands: more pairs found)."},
    )
    near_dedup_rows: Annotated[int, AtLeast1] = field(
        default=8,
        metadata={"help": "MinHash values per LSH band of --near-dedup (more rows: only closer pairs meet)."},
    )
    near_dedup_seed: Annotated[int, AtLeast0] = field(
        default=1,
        metadata={"help": "Seed of --near-dedup's MinHash permutations."},
    )
    near_dedup_sides: NearDedupSides = field(
        default="both",
        metadata={"help": "Which side of a pair --near-dedup compares: both (the pair as one item), src or tgt "
                          "(monolingual data: the document)."},
    )

    # ---- tokenizer
    tokenizer: Tokenizer = field(
        default="sentencepiece",
        metadata={"help": "Subword tokenizer: sentencepiece, hf (Hugging Face tokenizers), tiktoken, t2t-subword, or "
                          "none (the input is already whitespace-tokenized)."},
    )
    tokenizer_model: str | None = field(
        default=None,
        metadata={"help": "Use this model instead of training one: a SentencePiece .model, a Hugging Face "
                          "tokenizer.json, a .tiktoken ranks file or a T2T vocab.subwords file (Megatron's "
                          "--tokenizer-model)."},
    )
    tokenizer_options: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "Settings of the tokenizer backend when it loads a model, as key=value pairs (YAML: a "
                          "mapping), e.g. tiktoken pattern=..., eod_token=<|endoftext|>, preset=cl100k."},
    )
    spm_model: str | None = field(
        default=None,
        metadata={"help": "Use this SentencePiece .model instead of training one (the same as --tokenizer-model)."},
    )
    hf_model_type: HFModelType = field(
        default="byte-level-bpe",
        metadata={"help": "hf: the model trained when no --tokenizer-model is given (byte-level-bpe as GPT-2/Llama "
                          "3/Qwen)."},
    )
    min_frequency: Annotated[int, AtLeast0] = field(
        default=2,
        metadata={"help": "hf: a merge or piece must be seen this many times in the training sample."},
    )
    vocab_size: Annotated[int, Range(8, why="SentencePiece needs room for its special pieces")] = field(
        default=8000,
        metadata={"help": "SentencePiece vocabulary size (spm_train's --vocab_size)."},
    )
    model_type: ModelType = field(
        default="unigram",
        metadata={"help": "SentencePiece model type (spm_train's --model_type)."},
    )
    character_coverage: Annotated[float, Range(0, 1, open_low=True)] = field(
        default=0.9995,
        metadata={"help": "Share of characters the model covers: 1.0 for small alphabets, 0.9995 for CJK."},
    )
    input_sentence_size: Annotated[int, AtLeast1] = field(
        default=1_000_000,
        metadata={"help": "Train the tokenizer on at most this many lines of the cleaned training text: a uniform "
                          "sample, the lines whose seeded hashes of their line numbers are smallest (--seed picks "
                          "it; the same lines for any task count or engine). Many directions: shared among the "
                          "languages by --spm-temperature. T2T subword samples by --file-byte-budget instead."},
    )
    user_defined_symbols: list[str] = field(
        default_factory=list,
        metadata={"help": "Pieces never split, e.g. language tags, comma-separated; also put in the dictionaries."},
    )
    byte_fallback: bool = field(
        default=False,
        metadata={"help": "Unknown characters become UTF-8 byte pieces instead of <unk>."},
    )
    normalization_rule_name: NormalizationRule = field(
        default="nmt_nfkc",
        metadata={"help": "SentencePiece's normalization (spm_train's --normalization_rule_name; nmt_nfkc_cf also "
                          "case-folds)."},
    )
    split_digits: bool = field(
        default=False,
        metadata={"help": "SentencePiece: every digit its own piece (spm_train's --split_digits)."},
    )
    max_sentence_length: Annotated[int, AtLeast1] = field(
        default=4192,
        metadata={"help": "SentencePiece: longer training lines are skipped, in bytes (spm_train's "
                          "--max_sentence_length)."},
    )
    shuffle_input_sentence: bool = field(
        default=False,
        metadata={"help": "SentencePiece: spm_train's switch, passed on and recorded in the model, but without effect"
                          " here: the trainer is given the whole --input-sentence-size sample tokenmill drew, so it "
                          "never samples or shuffles."},
    )
    hard_vocab_limit: bool = field(
        default=False,
        metadata={"help": "SentencePiece: fail when the text cannot give --vocab-size pieces (off: a smaller model "
                          "and a warning)."},
    )
    control_symbols: list[str] = field(
        default_factory=list,
        metadata={"help": "SentencePiece: control symbols, comma-separated (spm_train's --control_symbols)."},
    )
    spm_extra_options: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "Any other spm_train option, as key=value pairs (YAML: a mapping), e.g. "
                          "max_sentencepiece_length=8."},
    )
    joint_spm: bool = field(
        default=True,
        metadata={"help": "One SentencePiece model for both languages (--no-joint-spm: one per language)."},
    )
    approx_vocab_size: Annotated[int, AtLeast1] = field(
        default=8192,
        metadata={"help": "T2T subword: target vocabulary size (T2T's build_to_target_size)."},
    )
    file_byte_budget: Annotated[int, AtLeast1] = field(
        default=10_000_000,
        metadata={"help": "T2T subword: bytes of text sampled per file to count tokens."},
    )
    max_subtoken_length: Annotated[int | None, AtLeast1] = field(
        default=None,
        metadata={"help": "T2T subword: longest subtoken considered (default: unlimited)."},
    )

    # ---- dictionaries (fairseq-preprocess names)
    joined_dictionary: bool = field(default=False, metadata={"help": "One dictionary for both languages."})
    srcdict: str | None = field(default=None, metadata={"help": "Reuse this fairseq dict.txt for the source side."})
    tgtdict: str | None = field(default=None, metadata={"help": "Reuse this fairseq dict.txt for the target side."})
    nwordssrc: Annotated[int, Range(-1, why="-1 keeps all")] = field(
        default=-1,
        metadata={"help": "Keep at most this many source dictionary entries (-1: all)."},
    )
    nwordstgt: Annotated[int, Range(-1, why="-1 keeps all")] = field(
        default=-1,
        metadata={"help": "Keep at most this many target dictionary entries (-1: all)."},
    )
    thresholdsrc: Annotated[int, AtLeast0] = field(default=0, metadata={"help": "Drop source words seen fewer times."})
    thresholdtgt: Annotated[int, AtLeast0] = field(default=0, metadata={"help": "Drop target words seen fewer times."})
    padding_factor: Annotated[int, AtLeast1] = field(
        default=8,
        metadata={"help": "Pad dictionaries to a multiple of this (fp16-friendly embeddings)."},
    )

    # ---- output
    layout: LayoutName = field(
        default="fairseq",
        metadata={"help": "Store layout: fairseq (fairseq-train reads it) or megatron (megatron-core reads it)."},
    )
    shard_size: Annotated[int, Range(0, why="0 means no shards")] = field(
        default=0,
        metadata={"help": "Split train into shardNNN/ folders of at most this many pairs (0: no shards)."},
    )

    # ---- megatron (tools/preprocess_data.py's flags)
    input: list[str] = field(
        default_factory=list,
        metadata={"help": "Megatron's --input: JSONL (or Parquet, Arrow, a save_to_disk folder) files or globs, "
                          "comma-separated (monolingual; --json-keys picks the text)."},
    )
    output_prefix: str | None = field(
        default=None,
        metadata={"help": "Megatron's --output-prefix: writes {output_prefix}_{key}_document.bin/.idx in the Megatron"
                          " layout, ids of the tokenizer itself, nothing cleaned unless a cleaning flag asks for it."},
    )
    tokenizer_type: MegatronTokenizer | None = field(
        default=None,
        metadata={"help": "Megatron's --tokenizer-type (HuggingFaceTokenizer, TikTokenizer, SentencePieceTokenizer, "
                          "GPT2BPETokenizer)."},
    )
    vocab_file: str | None = field(
        default=None,
        metadata={"help": "Megatron's --vocab-file: GPT2BPETokenizer's vocab.json."},
    )
    merge_file: str | None = field(
        default=None,
        metadata={"help": "Megatron's --merge-file: GPT2BPETokenizer's merges.txt."},
    )

    # ---- run
    workers: Annotated[int, AtLeast1] = field(
        default_factory=lambda: os.cpu_count() or 1,
        metadata={"help": "Tokenizer threads (default: all cores)."},
    )
    seed: Annotated[int, AtLeast0] = field(default=1, metadata={"help": "Seed of the tokenizer's training sample."})
    chunk_lines: Annotated[int, AtLeast1] = field(
        default=65536,
        metadata={"help": "Lines per batch handed to the tokenizer."},
    )
    encoder: Encoder = field(default="auto", metadata={"help": _ENCODER_HELP})
    encoder_check_docs: Annotated[int, AtLeast0] = field(default=1000, metadata={"help": _CHECK_HELP})

    # ---- beyond one machine
    engine: EngineName = field(
        default="local",
        metadata={"help": "Where the tasks run: local (this machine), ray (a Ray cluster; pip install tokenmill[ray])"
                          " or slurm (writes an sbatch script of array jobs). The output is byte-identical for every "
                          "engine."},
    )
    tasks: Annotated[int, AtLeast0] = field(
        default=0,
        metadata={"help": "Cut the training split into this many tasks by input order (0: one per GiB of input "
                          "locally, one per 256 MiB on ray/slurm). Each is re-run alone if it fails; the output does "
                          "not depend on the count."},
    )
    ray_address: str | None = field(
        default=None,
        metadata={"help": "--engine ray: the cluster to join (auto, or HOST:PORT of its head); default: start Ray "
                          "here."},
    )
    storage_options: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "fsspec options for URL inputs and --destdir URL (s3://..., gs://...; pip install "
                          "tokenmill[s3]), e.g. client_kwargs={endpoint_url: ...} in YAML, a JSON object or "
                          "key=value,key=value on the command line; credentials also come from the environment as "
                          "fsspec reads it."},
    )

    # ---- many directions at once (Open-NLLB's data_bin/shardNNN layout)
    directions: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "Language directions prepared together with one SentencePiece model and one dictionary, "
                          "e.g. eng_Latn-tur_Latn,eng_Latn-zho_Hans: files at {trainpref}.{direction}.{lang} (and "
                          "valid/test alike); in YAML also a mapping direction -> {trainpref, validpref, testpref} of"
                          " its own prefixes."},
    )
    num_shards: Annotated[int, AtLeast1] = field(
        default=1,
        metadata={"help": "Many directions: split each direction's train into this many shardNNN/ folders (fewer for "
                          "directions with fewer pairs); valid/test go to shard000."},
    )
    spm_temperature: Annotated[float, Range(0, open_low=True)] = field(
        default=1.0,
        metadata={"help": "Many directions: SentencePiece's training sample takes language l's lines in proportion to"
                          " n_l^(1/T), so small languages keep their characters (1: as they come; 5: NLLB-like)."},
    )
    lang_token_format: str = field(
        default="__{lang}__",
        metadata={"help": "Many directions: language tokens added to the shared dictionary, one per language."},
    )
    retrain_tokenizer: bool = field(
        default=False,
        metadata={"help": "Many directions: train SentencePiece again when directions were added (by default the "
                          "model trained on the first directions is kept and only the new directions are encoded)."},
    )

    _labels: ClassVar[dict[str, str]] = {}
    """How messages name a setting that came from a config file ("c.yaml: vocab_size"), by field name
    ("filters.max_ratio" for nested ones); set per instance by :func:`build_config`. Others are named
    by their flag."""

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

    def label(self, name: str) -> str:
        """How messages name setting ``name``: its flag, or ``file: key`` when it came from a config file."""
        return self._labels.get(name) or flag_name(*reversed(name.split(".", 1)))

    def validate(self) -> PrepareConfig:
        """Check every setting, the files named included, before any work; raise one ConfigError."""
        check_settings(PrepareConfig, self, self.label)
        for group in NESTED:
            check_settings(NESTED[group], getattr(self, group), lambda name, g=group: self.label(f"{g}.{name}"))
        if self.multilingual:
            if self.tasks > 1 or engine_part(self.engine).is_cluster:
                raise ConfigError("--directions runs are not cut into tasks yet: use --tasks 1 --engine local")
            return self._validate_multilingual()
        if not self.source_lang:
            raise ConfigError("--source-lang is required (files are read as {prefix}.{lang} and named after it)")
        if not self.trainpref:
            raise ConfigError("--trainpref is required: the training data to prepare")
        if self.source_lang == self.target_lang:
            raise ConfigError(
                f"--source-lang and --target-lang are both {self.source_lang!r}: give two different languages, "
                "or leave out --target-lang for monolingual data"
            )
        if self.json_keys:
            if len(self.json_keys) > 1 or (self.source_key and self.source_key != self.json_keys[0]):
                raise ConfigError(
                    f"--json-keys {','.join(self.json_keys)}: give one key per run (Megatron writes one dataset "
                    "per key; run prepare once per key, each with its own --destdir)"
                )
            self.source_key = self.json_keys[0]
        self._detect_input_format()
        if self.documents == "blank-line" and (not self.monolingual or self.input_format != "text"):
            raise ConfigError("--documents blank-line is for monolingual plain text (no --target-lang, text input)")
        if self.append_eod and (not self.monolingual or self.tokenizer == "t2t-subword"):
            raise ConfigError("--append-eod is for monolingual data with --tokenizer sentencepiece or none")
        if not self.eod_symbol or any(c.isspace() for c in self.eod_symbol):
            raise ConfigError(f"--eod-symbol must be one token without spaces, got {self.eod_symbol!r}")
        if self.input_format == "tsv" and self.monolingual:
            raise ConfigError("tsv input holds pairs: give --target-lang as well")
        if self.spm_model and self.tokenizer != "sentencepiece":
            raise ConfigError("--spm-model only applies to --tokenizer sentencepiece")
        if self.align_suffix and (self.tokenizer != "none" or self.input_format != "text" or self.monolingual):
            raise ConfigError(
                "--align-suffix needs --tokenizer none, --input-format text and both languages: alignment "
                "positions count the whitespace tokens that are stored"
            )
        if self.align_suffix and self.on_invalid_utf8 == "skip":
            raise ConfigError("--align-suffix cannot be combined with --on-invalid-utf8 skip (use error or replace)")
        self._validate_tokenizer()
        self._validate_engine()
        self._validate_near_dedup()
        if self.joined_dictionary and self.srcdict and self.tgtdict and self.srcdict != self.tgtdict:
            raise ConfigError("--joined-dictionary with different --srcdict and --tgtdict")
        if self.monolingual and self.tgtdict:
            raise ConfigError("--tgtdict is for the target side: monolingual data (no --target-lang) has none")
        self._check_given_files()
        for split, prefixes in self.split_prefixes().items():
            if self.input_format == "text":
                self._check_inputs(f"--{split}pref", prefixes, self.langs)
            else:
                self._check_files(f"--{split}pref", prefixes)
            if self.align_suffix:
                self._check_inputs(f"--{split}pref with --align-suffix", prefixes, [self.align_suffix])
        return self

    def _detect_input_format(self) -> None:
        """A table format found by content (Parquet's PAR1, Arrow's magic, a save_to_disk folder; a URL by its
        extension) wins over the format given: such a file read as text or JSON lines is only garbage."""
        first = next((p for prefixes in self.split_prefixes().values() for p in prefixes), None)
        if first is None:
            return
        if not is_url(first) and any(c in first for c in "*?["):
            first = next(iter(sorted(glob.glob(first))), first)
        found = detect_format(first)
        if found is not None and found != self.input_format:
            log.info("--input-format %s: %s is %s by its content; reading it as %s", self.input_format, first,
                     found, found)
            self.input_format = found  # type: ignore[assignment]

    def _validate_engine(self) -> None:
        """Tasks and engines: the engine is registered (:mod:`tokenmill.prepare.engines`) and takes the engine
        options given, its library is installed, and what a cluster engine needs can be cut into tasks."""
        part = engine_part(self.engine)
        part.check({option: getattr(self, option, None) for option in engine_options()})
        if self.tasks > 1 or part.is_cluster:
            what = ("--align-suffix" if self.align_suffix else
                    "--documents blank-line" if self.documents == "blank-line" else None)
            if what:
                raise ConfigError(f"{what} is not cut into tasks yet: use --tasks 1 --engine local with it")

    def _validate_near_dedup(self) -> None:
        """--near-dedup runs on the clean tasks' parts: inputs that are cleaned in one piece are refused."""
        if not self.near_dedup:
            return
        what = ("--align-suffix" if self.align_suffix else "--documents blank-line" if self.documents == "blank-line"
                else "--directions" if self.directions else None)
        if what:
            raise ConfigError(f"--near-dedup does not work with {what} yet: leave one of them out")
        if self.monolingual and self.near_dedup_sides == "tgt":
            raise ConfigError("--near-dedup-sides tgt needs a target side (--target-lang): use src or both")

    def _validate_tokenizer(self) -> None:
        """The tokenizer's files and Megatron's flags fit together (checked before any work)."""
        _refuse_llama2(self.tokenizer_type)
        if self.tokenizer_model and self.spm_model and self.tokenizer_model != self.spm_model:
            raise ConfigError("--tokenizer-model and --spm-model name different models; give one")
        if self.tokenizer_model and self.tokenizer == "none":
            raise ConfigError(f"--tokenizer-model does not apply to --tokenizer {self.tokenizer}")
        for name in ("tokenizer_model", "vocab_file", "merge_file"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise ConfigError(f"{self.label(name)}: {path}: no such file")
        if self.tokenizer == "tiktoken" and not self.tokenizer_model:
            raise ConfigError("--tokenizer tiktoken needs --tokenizer-model FILE.tiktoken (it cannot be trained here)")
        if self.tokenizer_type == "GPT2BPETokenizer" and not (self.vocab_file and self.merge_file):
            raise ConfigError("--tokenizer-type GPT2BPETokenizer needs --vocab-file (vocab.json) and --merge-file")
        if bool(self.vocab_file) != bool(self.merge_file):
            raise ConfigError("--vocab-file and --merge-file come together (GPT-2's vocab.json and merges.txt)")
        if self.vocab_file and self.tokenizer != "hf":
            raise ConfigError("--vocab-file/--merge-file make a GPT-2 byte-level BPE: use --tokenizer hf "
                              "(or --tokenizer-type GPT2BPETokenizer)")
        if self.output_prefix or self.input:
            if not self.output_prefix:
                raise ConfigError("--input comes with --output-prefix (Megatron's preprocess_data flags)")
            if not self.monolingual or self.validpref or self.testpref:
                raise ConfigError(
                    "--output-prefix writes one Megatron dataset from --input: no --target-lang, --validpref or "
                    "--testpref (Megatron splits one dataset by --split at training time)"
                )

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
        if "{lang}" not in self.lang_token_format or any(c.isspace() for c in self.lang_token_format):
            raise ConfigError(
                f"--lang-token-format {self.lang_token_format!r} must contain {{lang}} and no spaces "
                "(e.g. __{lang}__)"
            )
        self._check_given_files()
        for name, files in self.directions.items():
            langs = name.split("-")
            for split in SPLITS:
                try:
                    self._check_inputs(f"--{split}pref", files.get(f"{split}pref") or [], langs)
                except ConfigError as error:
                    raise ConfigError(f"direction {name}: {error}") from None
        return self

    def _check_given_files(self) -> None:
        """The SentencePiece model and the dictionaries given exist and are what they claim to be; the
        scripts of the script filters exist."""
        for name in ("src_script", "tgt_script"):
            script = getattr(self.filters, name)
            if script is not None:
                try:
                    script_table(script)
                except ConfigError as error:
                    raise ConfigError(f"{self.label('filters.' + name)}: {error}") from None
        if self.spm_model:
            _check_spm_model(self.spm_model, self.label("spm_model"))
        for name in ("srcdict", "tgtdict"):
            path = getattr(self, name)
            if path:
                _check_dictionary(path, self.label(name))

    def _check_inputs(self, flag: str, prefixes: list[str], suffixes: list[str]) -> None:
        """Every ``{prefix}.{suffix}`` exists, resolved exactly as the pipeline will (compressed variants too)."""
        for prefix in prefixes:
            if is_url(prefix):  # checked when the run copies it (see tokenmill.prepare.object_storage)
                continue
            for suffix in suffixes:
                try:
                    resolve_prefix(prefix, suffix)
                except TokenmillError as error:
                    raise ConfigError(f"{flag}: {error}") from None

    def _check_files(self, flag: str, files: list[str]) -> None:
        """tsv/jsonl input: the prefixes are the files."""
        for path in files:
            if not is_url(path) and any(c in path for c in "*?["):
                if not glob.glob(path):
                    raise ConfigError(f"{flag}: {path}: no file matches this pattern")
                continue
            if not is_url(path) and not Path(path).is_file() and detect_format(path) != self.input_format:
                state = "is a directory, not a file" if Path(path).is_dir() else "no such file"
                raise ConfigError(
                    f"{flag}: {path}: {state} (with --input-format {self.input_format} the prefixes are the files)"
                )

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

    def recorded(self) -> dict[str, Any]:
        """The settings as the manifest records them: :meth:`to_dict` less the settings of
        :data:`RECORDED_IF_SET` at their defaults (near-dedup's are all kept once it is on) and the bitext
        rules that are off (:meth:`FilterConfig.recorded`), so a run that uses none of them writes the manifest
        it wrote before they existed."""
        settings = self.to_dict()
        for item in fields(self):
            if self.near_dedup and item.name.startswith("near_dedup"):
                continue  # near-dedup's settings, all of them, once it is on
            if item.name in RECORDED_IF_SET and getattr(self, item.name) == (
                    item.default if item.default_factory is dataclasses.MISSING else item.default_factory()):
                del settings[item.name]
        kept = self.filters.recorded()
        settings["filters"] = {name: value for name, value in settings["filters"].items() if name in kept}
        return settings


NESTED: dict[str, type] = {"normalize": Normalizer, "filters": FilterConfig}
NESTED_HELP: dict[str, dict[str, str]] = {
    "normalize": {
        "nfkc": "Unicode NFKC; SentencePiece's nmt_nfkc rule does this too.",
        "fullwidth": "Full-width ASCII forms and U+3000 to half-width (seed script's q2b).",
        "remove_control": "Delete control chars and U+FEFF; whitespace-like controls -> space.",
        "collapse_whitespace": "Whitespace runs -> one space, strip both ends.",
    },
    "filters": {
        "drop_empty": "Drop pairs with an empty side.",
        "min_chars": "Per side, characters (code points); 0 = no minimum.",
        "max_chars": "Per side; default: no maximum.",
        "min_tokens": "Per side, tokens: the tokenizer's pieces, counted after encoding (whitespace tokens with "
                      "--tokenizer none); 0 = no minimum.",
        "max_tokens": "Per side, tokens counted as --filter-min-tokens does; default: no maximum.",
        "max_ratio": "Longer side / shorter side, e.g. 9 (Moses); default: off.",
        "ratio_unit": "What max_ratio compares: tokens (counted as --filter-min-tokens does) or chars.",
        "drop_identical": "Drop pairs whose source equals the target.",
        "max_nonletter": "Max share of non-letters among non-space chars, e.g. 0.5.",
        "src_script": 'Unicode script(s) of the source, e.g. "Latin", "Han+Hiragana".',
        "tgt_script": "Same for the target.",
        "min_script_fraction": "Share of letters that must be in the expected script.",
        "src_lang": 'Expected language of the source (py3langid code, e.g. "en").',
        "tgt_lang": "Expected language of the target.",
        "langid_candidates": "Restrict language-ID to these labels; default: all.",
    },
}
"""``--help`` of the nested settings' flags (``--nfkc``, ``--filter-min-tokens``), by group and field: their
classes live in :mod:`tokenmill.text`, which knows nothing of flags."""
SECTIONS: dict[str, str] = {
    "destdir": "inputs",
    "normalize": "cleaning",
    "tokenizer": "tokenizer",
    "joined_dictionary": "dictionaries (fairseq-preprocess names)",
    "layout": "output",
    "input": "megatron (tools/preprocess_data.py's flags)",
    "workers": "run",
    "engine": "beyond one machine",
    "directions": "many directions at once (Open-NLLB's data_bin/shardNNN layout)",
}
"""The sections of ``prepare --help`` (the ``# ---- name`` comments of :class:`PrepareConfig`), by the field
that opens each: a field is in the section last opened at or above it, in field order."""


def field_help(group: str | None, item: dataclasses.Field) -> str:  # type: ignore[type-arg]
    """The help text of a config field: for a field of a nested group (``normalize``, ``filters``) the group's
    entry in :data:`NESTED_HELP`, else the field's own ``metadata["help"]`` (the bitext rules of
    :mod:`tokenmill.text.filters` carry theirs); ``""`` when there is none."""
    nested = NESTED_HELP.get(group, {}).get(item.name) if group is not None else None
    return nested or str(item.metadata.get("help", ""))


def field_sections() -> dict[str, str]:
    """Each :class:`PrepareConfig` field's section title (see :data:`SECTIONS`)."""
    found: dict[str, str] = {}
    title = ""
    for item in fields(PrepareConfig):
        title = SECTIONS.get(item.name, title)
        found[item.name] = title
    return found
FLAG_PREFIX = {"normalize": "", "filters": "filter-"}
"""Flags of nested settings: normalizer fields keep their names (--nfkc), filters get --filter-."""
_PREFIXES = ("trainpref", "validpref", "testpref")


_PATH_SETTINGS = ("destdir", "tokenizer_model", "spm_model", "srcdict", "tgtdict", "vocab_file", "merge_file")
_PATH_LIST_SETTINGS = ("trainpref", "validpref", "testpref", "input", "decontaminate")


def absolute_paths(settings: dict[str, Any]) -> dict[str, Any]:
    """Settings with every local path made absolute (URLs stay as they are): what a process started in
    another directory (a Slurm job, a Ray worker) needs to find the same files."""
    out = dict(settings)

    def absolute(path: str) -> str:
        return path if is_url(path) else os.path.abspath(path)

    for name in _PATH_SETTINGS:
        if out.get(name):
            out[name] = absolute(out[name])
    for name in _PATH_LIST_SETTINGS:
        if out.get(name):
            out[name] = [absolute(p) for p in out[name]]
    return out


def flag_name(name: str, group: str | None = None) -> str:
    """The flag of a setting: ``vocab_size`` -> ``--vocab-size``, (``max_ratio``, filters) -> ``--filter-max-ratio``."""
    return "--" + (FLAG_PREFIX[group] if group else "") + name.replace("_", "-")


def _file_identity(path: str) -> tuple[str, str, int, int]:
    """(path as given, absolute path, mtime, size): a file checked once is not loaded again unchanged."""
    stat = os.stat(path)
    return path, os.path.abspath(path), stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=16)
def _checked_spm(identity: tuple[str, str, int, int]) -> None:
    SentencePieceEncoder(identity[0])


@functools.lru_cache(maxsize=16)
def _checked_dictionary(identity: tuple[str, str, int, int]) -> None:
    Dictionary.load(identity[0])


def _check_spm_model(path: str, label: str) -> None:
    fix = "give a .model file written by spm_train or tokenmill prepare"
    with opening(path, "a SentencePiece model", fix, label=label):
        if Path(path).is_dir():
            raise IsADirectoryError(path)
        _checked_spm(_file_identity(path))


def _check_dictionary(path: str, label: str) -> None:
    fix = "give a fairseq dict.txt (one '<token> <count>' per line)"
    with opening(path, "a fairseq dictionary", fix, label=label):
        if Path(path).is_dir():
            raise IsADirectoryError(path)
        _checked_dictionary(_file_identity(path))


def _as_list(value: Any, label: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part for part in value.split(",") if part]
    if isinstance(value, list | tuple) and all(isinstance(v, str | int | float) and not isinstance(v, bool)
                                               for v in value):
        return [str(v) for v in value]
    raise ConfigError(f"{label}: expected a list of strings (or one comma-separated string), got {value!r}")


def _nested(kind: type, value: Any, group: str, label: Any) -> Any:
    """A Normalizer/FilterConfig from a mapping (flags and file keys merged), every value checked."""
    if isinstance(value, kind):
        return value
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ConfigError(f"{label(group)}: expected a mapping of {group} settings, got {value!r}")
    known = [f.name for f in fields(kind)]
    for key in value:
        if key not in known:
            raise ConfigError(
                f"{_where(label(group))}unknown {group} setting {str(key)!r}{did_you_mean(str(key), known)}; "
                f"known: {', '.join(known)}"
            )
    values = dict(value)
    for key, item in values.items():
        if is_sequence(hints(kind)[key]) and item is not None:
            values[key] = tuple(_as_list(item, label(f"{group}.{key}")))
    check_settings(kind, values, lambda name: label(f"{group}.{name}"))
    return kind(**values)


def _where(label: str) -> str:
    """The ``file: `` part of a label (nothing for a flag)."""
    return label.rsplit(": ", 1)[0] + ": " if ": " in label else ""


def _directions(value: Any, settings: dict[str, Any], label: str) -> dict[str, dict[str, list[str]]]:
    """Directions as {name: {"trainpref": [...], ...}}; a bare name takes {pref}.{name} of the global prefixes."""
    if isinstance(value, dict):
        entries = value
    else:
        entries = dict.fromkeys(_as_list(value, label))
    result: dict[str, dict[str, list[str]]] = {}
    for name, files in entries.items():
        name = str(name)
        if files is None:
            files = {split: [f"{p}.{name}" for p in _as_list(settings.get(split), split)] for split in _PREFIXES}
        elif isinstance(files, dict):
            for key in files:
                if key not in _PREFIXES:
                    raise ConfigError(
                        f"{_where(label)}direction {name}: unknown key {str(key)!r}"
                        f"{did_you_mean(str(key), _PREFIXES)}; use {', '.join(_PREFIXES)}"
                    )
            files = {split: _as_list(files.get(split), f"{label}.{name}.{split}") for split in _PREFIXES}
        else:
            raise ConfigError(f"{label}: direction {name}: expected a mapping of {', '.join(_PREFIXES)} (or nothing)")
        result[name] = files
    return result


def _suggest(key: str) -> str:
    """`` (did you mean ...)`` for an unknown top-level key: a field, or a nested one written at the top
    (``nfkc`` -> ``normalize: {nfkc: ...}``; ``filter_max_tokens`` -> ``filters: {max_tokens: ...}``)."""
    candidates = {f.name: repr(f.name) for f in fields(PrepareConfig)}
    for group, kind in NESTED.items():
        for item in fields(kind):
            nested = f"{group}: {{{item.name}: ...}}"
            candidates.setdefault(item.name, nested)
            candidates.setdefault(FLAG_PREFIX[group].replace("-", "_") + item.name, nested)
    close = key if key in candidates else next(iter(difflib.get_close_matches(key, list(candidates), n=1)), None)
    return f" (did you mean {candidates[close]}?)" if close else ""


def build_config(
    settings: dict[str, Any],
    *,
    overrides: dict[str, Any] | None = None,
    config_file: str | os.PathLike[str] | None = None,
) -> PrepareConfig:
    """A validated config from a mapping (e.g. YAML content) and ``overrides`` (e.g. flags) on top of it.

    Unknown keys are errors with the nearest known one suggested; every value is type-checked. With
    ``config_file``, messages about settings that came from ``settings`` name the file and the key.
    """
    where = f"{os.fspath(config_file)}: " if config_file is not None else ""
    known = {f.name for f in fields(PrepareConfig)}
    from_file = {str(key).replace("-", "_"): value for key, value in settings.items()}
    flags = {str(key).replace("-", "_"): value for key, value in (overrides or {}).items()}
    for source, prefix in ((from_file, where), (flags, "")):
        for key in source:
            if key not in known:
                raise ConfigError(
                    f"{prefix}unknown setting {key!r}{_suggest(key)}; `tokenmill prepare --help` lists them"
                )
    labels: dict[str, str] = {}
    if config_file is not None:
        for key, value in from_file.items():
            if key in NESTED and isinstance(value, dict):
                overridden = flags.get(key) or {}
                labels[key] = f"{where}{key}"
                labels.update({f"{key}.{name}": f"{where}{key}.{name}" for name in value if name not in overridden})
            elif key not in flags:
                labels[key] = f"{where}{key}"
    merged = {**from_file}
    for key, value in flags.items():
        if key in NESTED and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value

    def label(name: str) -> str:
        if name in NESTED:
            return labels.get(name) or name  # a mapping in YAML or Python; its flags are its fields'
        return labels.get(name) or flag_name(*reversed(name.split(".", 1)))

    merged = preset_defaults(megatron_defaults(merged))
    values: dict[str, Any] = {}
    for key, value in merged.items():
        if key == "directions":
            values[key] = _directions(value, merged, label(key))
        elif key in _MAPPINGS:
            values[key] = _mapping(value, label(key))
        elif key in NESTED:
            values[key] = _nested(NESTED[key], value, key, label)
        elif is_sequence(hints(PrepareConfig)[key]):
            values[key] = _as_list(value, label(key))
        else:
            issue = problem(hints(PrepareConfig)[key], value, label(key))
            if issue:
                raise ConfigError(issue)
            values[key] = value
    config = PrepareConfig(**values)
    object.__setattr__(config, "_labels", labels)
    return config.validate()


_MAPPINGS = ("tokenizer_options", "spm_extra_options", "storage_options")


def _mapping(value: Any, label: str) -> dict[str, Any]:
    """A mapping setting: a YAML mapping, or from a flag a JSON object or ``key=value,key=value`` (values read
    as YAML scalars)."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, str) and value.lstrip().startswith("{"):  # JSON from a flag
        try:
            parsed = json.loads(value)
        except ValueError as error:
            raise ConfigError(f"{label}: not valid JSON ({error}); give a JSON object or key=value,key=value") from None
        if not isinstance(parsed, dict):
            raise ConfigError(f"{label}: expected a JSON object, got {value!r}")
        return parsed
    if isinstance(value, str):
        result: dict[str, Any] = {}
        for part in (p for p in value.split(",") if p.strip()):
            key, sep, text = part.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"{label}: expected key=value pairs separated by commas, got {part!r}")
            try:
                result[key.strip()] = yaml.safe_load(text) if text.strip() else ""
            except yaml.YAMLError:
                result[key.strip()] = text
        return result
    raise ConfigError(f"{label}: expected a mapping (or key=value,key=value), got {value!r}")


MEGATRON_KEYS = ("input", "output_prefix", "tokenizer_type", "vocab_file", "merge_file")
"""Settings that only Megatron's preprocess_data flags set: their presence means Megatron's semantics."""


def _refuse_llama2(tokenizer_type: object) -> None:
    """Megatron's Llama2Tokenizer: one error with the flags that give its ids."""
    if tokenizer_type == "Llama2Tokenizer":
        raise ConfigError(
            "--tokenizer-type Llama2Tokenizer: use --tokenizer-type SentencePieceTokenizer --tokenizer-model "
            "tokenizer.model (the same SentencePiece ids; Megatron's Llama2Tokenizer also puts a BOS id before "
            "each document, which tokenmill does not add)")


def megatron_defaults(settings: dict[str, Any]) -> dict[str, Any]:
    """Settings given with Megatron's flags (``--input``, ``--output-prefix``) mean what preprocess_data does:
    JSONL in, one key per run, the Megatron layout with the tokenizer's own ids, and nothing normalized,
    filtered or deduplicated unless a cleaning setting asks for it (given settings always win)."""
    if not (settings.get("input") or settings.get("output_prefix")):
        return settings
    out = dict(settings)
    keys = _as_list(out.get("json_keys"), "--json-keys") or ["text"]
    patterns = _as_list(out.get("input"), "--input")
    files = [match for pattern in patterns for match in (sorted(glob.glob(pattern)) or [pattern])]
    defaults: dict[str, Any] = {
        "trainpref": files,
        "input_format": "jsonl",
        "json_keys": keys,
        "source_lang": keys[0] if LANG_CODE_RE.fullmatch(keys[0]) else "text",
        "layout": "megatron",
        "dedup": False,
        "leakage": "off",
        "normalize": {"nfkc": False, "fullwidth": False, "remove_control": False, "collapse_whitespace": False},
        "filters": {"drop_empty": False},
    }
    if out.get("output_prefix"):
        defaults["destdir"] = os.path.dirname(str(out["output_prefix"])) or "."
    _refuse_llama2(out.get("tokenizer_type"))
    if out.get("tokenizer_type"):
        defaults["tokenizer"] = _MEGATRON_TOKENIZERS.get(str(out["tokenizer_type"]), out["tokenizer_type"])
    for key, value in defaults.items():
        if key in ("normalize", "filters") and isinstance(out.get(key), dict):
            out[key] = {**value, **out[key]}
        elif out.get(key) in (None, [], "") and value is not None:
            out[key] = value
    return out


MAX_YAML_DEPTH = 64
"""Deepest nest of ``[``/``{`` a config may have (settings nest two or three deep)."""


def _flow_depth(text: str) -> int:
    """The deepest nest of brackets and braces in ``text``, counted over the bracket characters alone (quoting
    is ignored: an overestimate only for strings of many unclosed brackets)."""
    depth = deepest = 0
    for bracket in re.findall(r"[\[\]{}]", text):
        depth = depth + 1 if bracket in "[{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest


CLEAN_PRESETS: dict[str, dict[str, Any]] = {
    "bitext": {
        "not_too_long": 1024, "not_too_short": 3, "length_ratio": 3.0, "no_identical": True, "no_literals": True,
        "no_only_symbols": 0.1, "no_only_numbers": 0.5, "no_urls": True, "no_breadcrumbs": True,
        "no_glued_words": True, "no_repeated_words": 1, "no_unicode_noise": True, "no_space_noise": True,
        "no_paren": True, "no_escaped_unicode": True, "no_bad_encoding": True, "no_titles": True,
        "no_number_inconsistencies": True, "no_script_inconsistencies": True, "terminal_punctuation": -2.0,
        "html_tags": True, "repetition": 2, "common_substring": 0.9,
    },
}
"""The filters each ``--clean-preset`` turns on, with their thresholds (bicleaner-hardrules' defaults for its
rules, OpusFilter's for its filters; OpusFilter's numerals filter is left out: no_number_inconsistencies
already drops pairs whose digits differ)."""


def preset_defaults(settings: dict[str, Any]) -> dict[str, Any]:
    """Settings with the filters of ``clean_preset`` added under those given (given filters always win)."""
    preset = settings.get("clean_preset")
    if preset is None or preset not in CLEAN_PRESETS:  # an unknown name is reported by the type check
        return settings
    given = settings.get("filters")
    if given is not None and not isinstance(given, dict):
        return settings  # not a mapping: reported as such by the filters' check
    return {**settings, "filters": {**CLEAN_PRESETS[preset], **(given or {})}}


def load_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a YAML config (``yaml.safe_load`` only); relative data paths stay relative to the CWD."""
    fix = "give a YAML file of settings (see examples/config.yaml)"
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        if _flow_depth(text) > MAX_YAML_DEPTH:  # YAML's parsers take quadratic time (then recurse) on deep nests
            raise ConfigError(f"{path}: brackets nested deeper than {MAX_YAML_DEPTH}; {fix}")
        data = yaml.safe_load(text)
    except IsADirectoryError:
        raise ConfigError(f"{path} is a directory, not a config file; {fix}") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config file ({error.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; {fix}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        place = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        reason = getattr(error, "problem", None) or " ".join(str(error).split())
        raise ConfigError(f"{place}: not valid YAML ({reason})") from None
    except (ValueError, RecursionError) as error:  # e.g. an integer of more digits than Python converts
        raise ConfigError(f"{path}: not valid YAML ({' '.join(str(error).split())[:200]}); {fix}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of settings (key: value lines); {fix}")
    return data
