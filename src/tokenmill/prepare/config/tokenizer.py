"""The tokenizer section: which backend (``--tokenizer``), a model to load or the settings to train one with
(SentencePiece's spm_train names, Hugging Face tokenizers' and T2T subword's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from tokenmill.errors import ConfigError
from tokenmill.prepare.config.files import check_spm_model
from tokenmill.prepare.config.kinds import (
    TOKENIZERS,
    AtLeast0,
    AtLeast1,
    HFModelType,
    ModelType,
    NormalizationRule,
    Tokenizer,
)
from tokenmill.prepare.config.section import Section
from tokenmill.settings import Range, did_you_mean
from tokenmill.vocab.tokenizer import BACKENDS

if TYPE_CHECKING:
    from tokenmill.prepare.config.model import PrepareConfig


@dataclass(frozen=True)
class TokenizerSettings(Section):
    """The tokenizer and its backend's settings (``name`` is the ``--tokenizer`` setting)."""

    TITLE: ClassVar[str] = "tokenizer"

    name: Tokenizer = field(
        default="sentencepiece",
        metadata={"key": "tokenizer",
                  "help": "Subword tokenizer: sentencepiece, hf (Hugging Face tokenizers), tiktoken, t2t-subword, or "
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

    def check_types(self, config: PrepareConfig) -> None:
        """The section's settings fit their types, and ``--tokenizer`` names a built-in or registered backend."""
        super().check_types(config)
        if self.name != "none" and self.name not in BACKENDS:
            names = [*TOKENIZERS, *(name for name in BACKENDS if name not in TOKENIZERS and name != "whitespace")]
            raise ConfigError(f"{config.label('tokenizer')} must be one of {', '.join(names)}, got {self.name!r}"
                              f"{did_you_mean(self.name, names)}")

    def checked(self, config: PrepareConfig) -> TokenizerSettings:
        """The model given fits the backend and exists; a backend that cannot be trained here has one."""
        if self.spm_model and self.name != "sentencepiece":
            raise ConfigError("--spm-model only applies to --tokenizer sentencepiece")
        if self.tokenizer_model and self.spm_model and self.tokenizer_model != self.spm_model:
            raise ConfigError("--tokenizer-model and --spm-model name different models; give one")
        if self.tokenizer_model and self.name == "none":
            raise ConfigError(f"--tokenizer-model does not apply to --tokenizer {self.name}")
        if self.tokenizer_model and not Path(self.tokenizer_model).is_file():
            raise ConfigError(f"{config.label('tokenizer_model')}: {self.tokenizer_model}: no such file")
        if self.name == "tiktoken" and not self.tokenizer_model:
            raise ConfigError("--tokenizer tiktoken needs --tokenizer-model FILE.tiktoken (it cannot be trained here)")
        return self

    def check_files(self, config: PrepareConfig) -> None:
        """A given SentencePiece model loads."""
        if self.spm_model:
            check_spm_model(self.spm_model, config.label("spm_model"))
