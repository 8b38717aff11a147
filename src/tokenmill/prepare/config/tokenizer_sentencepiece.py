"""The SentencePiece backend's own training settings (``config.tokenizer.sentencepiece``): spm_train's options by
their spm_train names, each still a flat key and flag of its own (``--character-coverage``)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from tokenmill.prepare.config.kinds import AtLeast1, ModelType, NormalizationRule
from tokenmill.prepare.config.section import BackendSettings
from tokenmill.settings import Range
from tokenmill.vocab.sentencepiece import SentencePieceOptions

if TYPE_CHECKING:
    from tokenmill.prepare.config.model import PrepareConfig


@dataclass(frozen=True)
class SentencePieceTraining(BackendSettings):
    """What spm_train is given besides the settings every backend shares (vocabulary size, sample, symbols)."""

    TITLE: ClassVar[str] = "tokenizer: SentencePiece training"
    BACKEND: ClassVar[str] = "sentencepiece"

    model_type: ModelType = field(
        default="unigram",
        metadata={"help": "SentencePiece model type (spm_train's --model_type)."},
    )
    character_coverage: Annotated[float, Range(0, 1, open_low=True)] = field(
        default=0.9995,
        metadata={"help": "Share of characters the model covers: 1.0 for small alphabets, 0.9995 for CJK."},
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

    def train_settings(self, config: PrepareConfig) -> SentencePieceOptions:
        """spm_train's options as given (defaults leave the trainer's behaviour as before): these settings by
        their own names (``spm_extra_options`` as ``extra_options``), the shared ones, and the run's threads and
        seed."""
        own: dict[str, Any] = {item.name: getattr(self, item.name) for item in fields(self)}
        extra = own.pop("spm_extra_options")
        shared = config.tokenizer
        return SentencePieceOptions(
            vocab_size=shared.vocab_size, input_sentence_size=shared.input_sentence_size,
            user_defined_symbols=list(shared.user_defined_symbols), num_threads=config.run.workers,
            seed=config.run.seed, extra_options=dict(extra), **{**own, "control_symbols": list(self.control_symbols)},
        )
