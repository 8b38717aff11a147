"""The dictionary section: fairseq-preprocess's dictionary settings (reuse, size, thresholds, padding)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, ClassVar

from tokenmill.errors import ConfigError
from tokenmill.prepare.config.files import check_dictionary
from tokenmill.prepare.config.kinds import AtLeast0, AtLeast1
from tokenmill.prepare.config.section import Section
from tokenmill.settings import Range

if TYPE_CHECKING:
    from tokenmill.prepare.config.model import PrepareConfig


@dataclass(frozen=True)
class DictionarySettings(Section):
    """The fairseq dictionaries: given or built, and how they are cut."""

    TITLE: ClassVar[str] = "dictionaries (fairseq-preprocess names)"

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

    def checked(self, config: PrepareConfig) -> DictionarySettings:
        """The dictionaries given fit the languages and each other."""
        if self.joined_dictionary and self.srcdict and self.tgtdict and self.srcdict != self.tgtdict:
            raise ConfigError("--joined-dictionary with different --srcdict and --tgtdict")
        if config.inputs.monolingual and self.tgtdict:
            raise ConfigError("--tgtdict is for the target side: monolingual data (no --target-lang) has none")
        return self

    def check_files(self, config: PrepareConfig) -> None:
        """The dictionaries given load."""
        for name in ("srcdict", "tgtdict"):
            path = getattr(self, name)
            if path:
                check_dictionary(path, config.label(name))
