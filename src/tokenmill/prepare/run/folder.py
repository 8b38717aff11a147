"""The run's folder: every path a prepare run reads or writes under ``DESTDIR`` (one owner for the names).

``DESTDIR/.work/`` holds what the stages pass to each other (cleaned text, work ids, masks, tasks' parts)
and the staged outputs (``.work/out``: published into ``DESTDIR`` at the end). A direction of a
many-direction run works in the same folder with its own sub-folders (``.work/clean/{direction}/`` ...).
The names of the published files come from :mod:`tokenmill.store.layout`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokenmill.prepare.object_storage import INPUTS_DIR
from tokenmill.prepare.publish import STAGING_DIR
from tokenmill.prepare.tasks import TASKS_DIR, TaskSet
from tokenmill.store.layout import dict_name, dropped_path, shard_dir

WORK_DIR = ".work"


@dataclass(frozen=True)
class WorkFolder:
    """The paths of one run (``direction``: one direction of a many-direction run, which keeps its work
    files in sub-folders of its own and shares the staged outputs)."""

    root: Path
    direction: str | None = None

    @property
    def work(self) -> Path:
        return self.root / WORK_DIR

    @property
    def out(self) -> Path:
        """Where stages write the directory's outputs; the publish step puts them in place at the end."""
        return self.work / STAGING_DIR

    @property
    def inputs(self) -> Path:
        """Where URL inputs are staged (:class:`~tokenmill.prepare.object_storage.StagedInputs`)."""
        return self.work / INPUTS_DIR

    @property
    def tasks(self) -> Path:
        return self.work / TASKS_DIR

    def _work_file(self, kind: str, name: str) -> Path:
        base = self.work / kind
        return (base / self.direction / name) if self.direction else base / name

    # ---------------------------------------------------------------- work files
    def clean_path(self, split: str, lang: str) -> Path:
        """The cleaned text of one split and side (``lang`` ``align``: the cleaned alignments)."""
        return self._work_file("clean", f"{split}.{lang}")

    def numbers_path(self, split: str) -> Path:
        """The 1-based input item numbers (int64) of the items the clean stage kept in one split, in order:
        what the provenance maps start from (:mod:`~tokenmill.prepare.stages.provenance`)."""
        return self._work_file("clean", f"{split}.numbers")

    def ids_prefix(self, split: str, lang: str) -> Path:
        """The work-id store of one split and side (the encode stage's output)."""
        return self._work_file("ids", f"{split}.{lang}")

    def words_path(self, split: str, lang: str) -> Path:
        """The words of whitespace-tokenized text in one split and side, in order of first appearance: word
        ``i`` is work id ``i`` in its id store."""
        return self.ids_prefix(split, lang).with_name(f"{split}.{lang}.words.json")

    def counts_path(self, split: str, lang: str) -> Path:
        """The bincount of one split and side's work ids, when the encode stage counted them as it wrote them
        (then the dictionary stage does not read the ids again)."""
        return self.ids_prefix(split, lang).with_name(f"{split}.{lang}.counts.npy")

    def unknown_path(self, split: str, lang: str) -> Path:
        """Surface text -> [work id, count] of the pieces SentencePiece called unknown in one split and side."""
        return self.ids_prefix(split, lang).with_name(f"{split}.{lang}.unknown.json")

    def keep_path(self, split: str) -> Path:
        """The piece filters' mask over a split's encoded items."""
        return self.ids_prefix(split, "keep").with_name(f"{split}.keep.npy")

    def dropped_path(self, split: str) -> Path:
        """The sample of what cleaning dropped in ``split`` (read by ``tokenmill report``)."""
        return dropped_path(self.root, split, self.direction)

    def task_set(self, stage: str, key: str) -> TaskSet:
        """The tasks of ``stage`` (``.work/tasks/{stage}``, a direction's in ``.work/tasks/{direction}/{stage}``)
        for stage key ``key``."""
        return TaskSet(self._task_root(stage), stage, key)

    def planned_tasks(self, stage: str) -> TaskSet:
        """The tasks of ``stage`` for the key their plan was written with (a task process's view)."""
        return TaskSet.planned(self._task_root(stage), stage)

    def _task_root(self, stage: str) -> Path:
        return self.tasks / self.direction / stage if self.direction else self.tasks / stage

    # ---------------------------------------------------------------- staged outputs
    def staged(self, name: str, shard: int | None = None) -> Path:
        """The staged output ``name`` (in ``shardNNN/`` when ``shard`` is given)."""
        return self.out / (shard_dir(shard) if shard is not None else "") / name

    def dict_path(self, lang: str | None) -> Path:
        """The staged fairseq dictionary of ``lang`` (``None``: ``dict.txt`` of monolingual data)."""
        return self.out / dict_name(lang)
