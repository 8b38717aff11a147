"""The stages of a prepare run, one module each (see :mod:`.base` for their shape).

:func:`single_run` lists a single-direction run's stages in order; :func:`task_stage` gives the one stage
a task process runs (by the task's stage name). Adding a stage: a module with its class, and a line in
:func:`single_run` (and in :data:`TASK_STAGES` when it runs tasks).
"""

from __future__ import annotations

from collections.abc import Callable

from tokenmill.errors import TokenmillError
from tokenmill.prepare.config import PrepareConfig
from tokenmill.prepare.stages.alignments import AlignmentsStage
from tokenmill.prepare.stages.base import PHASES, Stage, TaskedStage
from tokenmill.prepare.stages.binarize import BinarizeStage
from tokenmill.prepare.stages.clean import CleanStage
from tokenmill.prepare.stages.count import COUNT_STAGES, CountRound
from tokenmill.prepare.stages.dedup import DEDUP_STAGE, DedupStage
from tokenmill.prepare.stages.dictionary import DictionaryStage
from tokenmill.prepare.stages.encode import EncodeStage
from tokenmill.prepare.stages.pieces import PiecesStage
from tokenmill.prepare.stages.provenance import ProvenanceStage, makes_provenance
from tokenmill.prepare.stages.publish import PublishStage
from tokenmill.prepare.stages.tokenizer import SAMPLE_STAGE, SampleStage, TokenizerStage
from tokenmill.prepare.tokenizing import piece_filter, splits_words


def clean_stages(config: PrepareConfig) -> list[Stage]:
    """``clean.{split}``, valid and test first (train's leakage filter reads them)."""
    return [CleanStage(s) for s in ("valid", "test", "train") if s in config.split_prefixes()]


def encode_stages(config: PrepareConfig) -> list[Stage]:
    """``encode.{split}.{lang}`` and, with piece filters, ``pieces.{split}`` (train, and the held-out splits
    when they are filtered)."""
    splits = list(config.split_prefixes())
    stages: list[Stage] = [EncodeStage(split, lang) for split in splits for lang in config.langs]
    if piece_filter(config) is not None:
        stages += [PiecesStage(split) for split in splits if split == "train" or config.cleaning.filter_heldout]
    return stages


def binarize_stages(config: PrepareConfig) -> list[Stage]:
    """``binarize.{split}.{lang}``, then the alignments' stores."""
    splits = list(config.split_prefixes())
    stages: list[Stage] = [BinarizeStage(split, lang) for split in splits for lang in config.langs]
    if config.inputs.align_suffix:
        stages += [AlignmentsStage(split) for split in splits]
    return stages


def provenance_stages(config: PrepareConfig) -> list[Stage]:
    """``provenance.{split}``: the maps from the stores' items to input lines (after the stores)."""
    return [ProvenanceStage(split) for split in config.split_prefixes()] if makes_provenance(config) else []


def single_run(config: PrepareConfig) -> list[Stage]:
    """The stages of a single-direction (or monolingual) run, in order."""
    tokenizer: list[Stage] = [] if splits_words(config) else [TokenizerStage()]
    return [*clean_stages(config), *tokenizer, *encode_stages(config), DictionaryStage(),
            *binarize_stages(config), *provenance_stages(config), PublishStage()]


TASK_STAGES: dict[str, Callable[[str], TaskedStage]] = {
    "clean.train": lambda name: CleanStage("train"),
    "encode.train.": lambda name: EncodeStage("train", name.rsplit(".", 1)[1]),
    "binarize.train.": lambda name: BinarizeStage("train", name.rsplit(".", 1)[1]),
    COUNT_STAGES[0]: CountRound,
    COUNT_STAGES[1]: CountRound,
    DEDUP_STAGE: lambda name: DedupStage(),
    f"{SAMPLE_STAGE}.": SampleStage,
}
"""Task stage name (or its start, ending in ``.``) -> the stage that runs its tasks."""


def task_stage(name: str) -> TaskedStage:
    """The stage whose task ``name`` names (``clean.train``, ``encode.train.en``, ``count.train`` ...)."""
    for known, make in TASK_STAGES.items():
        if name == known or (known.endswith(".") and name.startswith(known)):
            return make(name)
    raise TokenmillError(
        f"stage {name!r} is not cut into tasks (clean.train, encode.train.LANG, binarize.train.LANG and, on a "
        "cluster, count.train, index.train and dedup.train are)")


__all__ = ["PHASES", "Stage", "TaskedStage", "single_run", "task_stage"]
