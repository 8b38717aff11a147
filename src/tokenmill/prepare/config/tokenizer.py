"""The tokenizer section: which backend (``--tokenizer``), a model to load or the settings to train one with: those
every backend reads here, each backend's own in its sub-section (``config.tokenizer.sentencepiece`` with
spm_train's names, ``.hf``, ``.t2t``), whose flat keys and flags are as before (``--character-coverage``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from tokenmill.errors import ConfigError
from tokenmill.prepare.config.files import check_spm_model
from tokenmill.prepare.config.kinds import TOKENIZERS, AtLeast1, Tokenizer
from tokenmill.prepare.config.section import BackendSettings, Section, subsections
from tokenmill.prepare.config.tokenizer_hf import HFTraining
from tokenmill.prepare.config.tokenizer_sentencepiece import SentencePieceTraining
from tokenmill.prepare.config.tokenizer_t2t import T2TTraining
from tokenmill.settings import Range, did_you_mean
from tokenmill.vocab.tokenizer import BACKENDS

if TYPE_CHECKING:
    from tokenmill.prepare.config.model import PrepareConfig


@dataclass(frozen=True)
class TokenizerSettings(Section):
    """The tokenizer and its backends' settings (``name`` is the ``--tokenizer`` setting); a backend's training
    settings are its sub-section's (:meth:`training`)."""

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
    vocab_size: Annotated[int, Range(8, why="SentencePiece needs room for its special pieces")] = field(
        default=8000,
        metadata={"help": "SentencePiece vocabulary size (spm_train's --vocab_size)."},
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
    joint_spm: bool = field(
        default=True,
        metadata={"help": "One SentencePiece model for both languages (--no-joint-spm: one per language)."},
    )

    sentencepiece: SentencePieceTraining = field(default_factory=SentencePieceTraining)
    """SentencePiece's own training settings."""
    hf: HFTraining = field(default_factory=HFTraining)
    """Hugging Face tokenizers' own training settings."""
    t2t: T2TTraining = field(default_factory=T2TTraining)
    """T2T subword's own training settings."""

    def training(self, backend: str) -> BackendSettings | None:
        """The training settings sub-section of backend ``backend`` (None: a backend with none of its own)."""
        return next((getattr(self, name) for name, kind in subsections(type(self)).items()
                     if issubclass(kind, BackendSettings) and kind.BACKEND == backend), None)

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
