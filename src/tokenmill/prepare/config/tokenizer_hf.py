"""The Hugging Face tokenizers backend's own training settings (``config.tokenizer.hf``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from tokenmill.prepare.config.kinds import AtLeast0, HFModelType
from tokenmill.prepare.config.section import BackendSettings

if TYPE_CHECKING:
    from tokenmill.prepare.config.model import PrepareConfig


@dataclass(frozen=True)
class HFTraining(BackendSettings):
    """Which Hugging Face model is trained when no ``--tokenizer-model`` is given, and how rare a piece may be."""

    TITLE: ClassVar[str] = "tokenizer: Hugging Face training"
    BACKEND: ClassVar[str] = "hf"

    hf_model_type: HFModelType = field(
        default="byte-level-bpe",
        metadata={"help": "hf: the model trained when no --tokenizer-model is given (byte-level-bpe as GPT-2/Llama "
                          "3/Qwen)."},
    )
    min_frequency: Annotated[int, AtLeast0] = field(
        default=2,
        metadata={"help": "hf: a merge or piece must be seen this many times in the training sample."},
    )

    def train_settings(self, config: PrepareConfig) -> dict[str, Any]:
        """The trainer's settings: the model kind, the shared vocabulary size, the minimum count, and the
        shared user-defined symbols as special tokens (when there are any)."""
        specials = list(config.tokenizer.user_defined_symbols) or None
        return {"kind": self.hf_model_type, "vocab_size": config.tokenizer.vocab_size,
                "min_frequency": self.min_frequency, **({"special_tokens": specials} if specials else {})}
