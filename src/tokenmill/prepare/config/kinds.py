"""What the settings of ``tokenmill prepare`` take: the choices (``Literal``), ranges and patterns that their type
hints name, and the names shared by the sections (splits, the settings recorded only when set, the run-only ones)."""

from __future__ import annotations

import re
from typing import Literal, get_args

from tokenmill.settings import LANG_CODE, Pattern, Range
from tokenmill.text.readers import OnInvalidUtf8, OnMalformed

SPLITS = ("train", "valid", "test")
PREFIXES = ("trainpref", "validpref", "testpref")
# the names of tokenmill.text.sources.FORMATS
InputFormat = Literal["text", "tsv", "jsonl", "parquet", "arrow", "hf-dataset", "hf-cache"]
Documents = Literal["line", "blank-line"]
Leakage = Literal["pair", "source", "target", "either", "off"]
Tokenizer = Literal["sentencepiece", "hf", "tiktoken", "t2t-subword", "none"] | str
"""A tokenizer backend's name: the built-in ones, or one registered with
:func:`tokenmill.vocab.tokenizer.register_backend` (checked against the registry by the tokenizer section)."""
HFModelType = Literal["byte-level-bpe", "bpe", "unigram", "wordpiece"]
NormalizationRule = Literal["nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity"]
MegatronTokenizer = Literal["HuggingFaceTokenizer", "TikTokenizer", "SentencePieceTokenizer", "GPT2BPETokenizer",
                            "Llama2Tokenizer"]  # the last one is refused with the way to get its ids
ModelType = Literal["unigram", "bpe", "char", "word"]
CleanPreset = Literal["bitext", "web"]
NearDedupSides = Literal["both", "src", "tgt"]
LayoutName = Literal["fairseq", "megatron"]  # tokenmill.store.format.Layout's values
EngineName = Literal["local", "ray", "slurm"] | str
"""A registered engine's name (:func:`tokenmill.prepare.engines.engine_names`): the built-in ones are the
command line's choices; a program may register more (checked against the registry when validated)."""
Encoder = Literal["auto", "reference", "fast"]  # tokenmill.vocab.encoder_choice.EncoderMode's values
TOKENIZERS: tuple[str, ...] = get_args(get_args(Tokenizer)[0])
LANG_CODE_RE = re.compile(LANG_CODE.regex)
DIRECTION_NAME = re.compile(r"\w+-\w+")  # letters, digits, _: a name that stays a plain file name
NON_EMPTY = Pattern(r"(?s).+", "a non-empty string")
SUFFIX = Pattern(r"[^/\\\s]+", "a file-name suffix (not empty; no '/', '\\' or spaces)")
AtLeast0 = Range(0)
AtLeast1 = Range(1)

RECORDED_IF_SET = ("clean_preset", "decontaminate", "decontaminate_ngram", "lm_filters", "near_dedup",
                   "near_dedup_ngram", "near_dedup_bands", "near_dedup_rows", "near_dedup_seed", "near_dedup_sides",
                   "split_sentences", "lang", "keep_newlines", "sentence_splitter")
"""Settings added after manifests were first written: the manifest records them only when they differ from
their defaults (see :meth:`PrepareConfig.recorded`)."""
RUN_ONLY = ("engine", "tasks", "ray_address", "encoder", "encoder_check_docs")
"""Settings of how a run is carried out, not of what it makes: left out of the manifest's settings (the
output is the same for every value) and recorded under its ``run`` key instead."""
MEGATRON_KEYS = ("input", "output_prefix", "tokenizer_type", "vocab_file", "merge_file")
"""Settings that only Megatron's preprocess_data flags set: their presence means Megatron's semantics."""

FLAG_PREFIX = {"normalize": "", "filters": "filter-"}
"""Flags of nested settings: normalizer fields keep their names (--nfkc), filters get --filter-."""


def flag_name(name: str, group: str | None = None) -> str:
    """The flag of a setting: ``vocab_size`` -> ``--vocab-size``, (``max_ratio``, filters) -> ``--filter-max-ratio``."""
    return "--" + (FLAG_PREFIX[group] if group else "") + name.replace("_", "-")


__all__ = ["FLAG_PREFIX", "LANG_CODE", "LANG_CODE_RE", "MEGATRON_KEYS", "NON_EMPTY", "PREFIXES", "RECORDED_IF_SET",
           "RUN_ONLY", "SPLITS", "SUFFIX", "TOKENIZERS", "AtLeast0", "AtLeast1", "CleanPreset", "Documents", "Encoder",
           "EngineName", "HFModelType", "InputFormat", "LayoutName", "Leakage", "MegatronTokenizer", "ModelType",
           "NearDedupSides",
           "NormalizationRule", "OnInvalidUtf8", "OnMalformed", "Tokenizer", "flag_name"]
