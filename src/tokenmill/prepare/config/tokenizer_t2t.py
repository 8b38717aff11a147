"""The T2T subword backend's own training settings (``config.tokenizer.t2t``): T2T's vocabulary builder learns
from a byte budget of each cleaned file, aiming at an approximate size."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, ClassVar

from tokenmill.prepare.config.kinds import AtLeast1
from tokenmill.prepare.config.section import BackendSettings
from tokenmill.vocab.t2t_backend import T2TTrainSettings

if TYPE_CHECKING:
    from tokenmill.prepare.config.model import PrepareConfig


@dataclass(frozen=True)
class T2TTraining(BackendSettings):
    """The target size, the sample and the longest subtoken of T2T's ``build_to_target_size``."""

    TITLE: ClassVar[str] = "tokenizer: T2T subword training"
    BACKEND: ClassVar[str] = "t2t-subword"

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

    def train_settings(self, config: PrepareConfig) -> T2TTrainSettings:
        """The builder's settings; its reserved tokens are T2T's two, then the shared user-defined symbols."""
        return T2TTrainSettings(
            target_size=self.approx_vocab_size, max_subtoken_length=self.max_subtoken_length,
            reserved_tokens=["<pad>", "<EOS>", *config.tokenizer.user_defined_symbols],
        )
