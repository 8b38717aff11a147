"""The folders of a tasked stage: its plan, one folder per task, completion markers, per-task locks.

A stage cut into tasks (``clean.train``, ``encode.train.en``...) lives in ``.work/tasks/{stage}/``:
``plan.json`` (the stage's key, the task count and what each task reads) and ``NNNNN/`` per task. A task
writes its files inside its folder and its marker ``NNNNN/done.json`` last (atomically, with the plan's
key), so a folder without a marker is an unfinished task: it is emptied and run again, alone; a finished
one is never run again. A plan written for another
key (changed inputs or settings) is discarded with every task under it. Two copies of one task (a
Slurm requeue, a Ray retry) never run at once: each holds ``NNNNN.lock``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from tokenmill.errors import TokenmillError
from tokenmill.fsutil import write_json

TASKS_DIR = "tasks"
PLAN = "plan.json"
DONE = "done.json"


class TaskKilled(TokenmillError):
    """A task's process was killed (out of memory, by hand): the run stops, and what it finished stays
    for the next run (its finished tasks are not run again), as when the whole run is killed."""


class TaskSet:
    """The tasks of one stage under ``root`` (``.work/tasks/{stage}``), for one stage key."""

    def __init__(self, root: Path, stage: str, key: str) -> None:
        self.root = root
        self.stage = stage
        self.key = key

    @classmethod
    def planned(cls, root: Path, stage: str) -> TaskSet:
        """The tasks of ``stage`` under ``root`` for the key their plan was written with: for a task process
        that cannot work the key out (it depends on stage records only the coordinator reads); without a
        plan, :meth:`plan` says to run the plan step."""
        path = root / PLAN
        key = json.loads(path.read_text(encoding="utf-8")).get("key", "") if path.exists() else ""
        return cls(root, stage, key)

    # ---------------------------------------------------------------- the plan
    def read_plan(self) -> dict[str, Any] | None:
        """The plan for this key, or None (none yet, or one for other inputs or settings)."""
        path = self.root / PLAN
        if not path.exists():
            return None
        plan = json.loads(path.read_text(encoding="utf-8"))
        return plan if plan.get("key") == self.key else None

    def plan(self) -> dict[str, Any]:
        """The plan; an error naming the step to run when there is none."""
        plan = self.read_plan()
        if plan is None:
            raise TokenmillError(
                f"{self.root}: no task plan for the current inputs and settings of stage {self.stage}; "
                "run the plan step first (tokenmill prepare ... --phase plan)"
            )
        return plan

    def write_plan(self, tasks: int, **details: Any) -> dict[str, Any]:
        """Start this stage's tasks afresh: earlier tasks (other key or task count) are removed."""
        if self.root.exists():
            shutil.rmtree(self.root)
        self.root.mkdir(parents=True)
        plan = {"key": self.key, "stage": self.stage, "tasks": int(tasks), **details}
        write_json(self.root / PLAN, plan)
        return plan

    @property
    def count(self) -> int:
        return int(self.plan()["tasks"])

    # ---------------------------------------------------------------- tasks
    def folder(self, index: int) -> Path:
        return self.root / f"{index:05d}"

    def done(self, index: int) -> dict[str, Any] | None:
        """What finished task ``index`` recorded for this plan's key, or None when it has not finished (a
        marker left by a task of an earlier plan does not count)."""
        marker = self.folder(index) / DONE
        if not marker.exists():
            return None
        record = json.loads(marker.read_text(encoding="utf-8"))
        return record if record.get("key") == self.key else None

    def left(self) -> list[int]:
        return [i for i in range(self.count) if self.done(i) is None]

    def records(self) -> list[dict[str, Any]]:
        """Every task's marker, in task order (all must have finished)."""
        records = [self.done(i) for i in range(self.count)]
        missing = [i for i, r in enumerate(records) if r is None]
        if missing:
            raise TokenmillError(
                f"stage {self.stage}: tasks {_ranges(missing)} of {self.count} have not finished; "
                "run them (tokenmill prepare ... --task I) or run prepare without --phase"
            )
        return records  # type: ignore[return-value]

    def run_once(self, index: int, body: Callable[[Path, int], dict[str, Any]]) -> dict[str, Any]:
        """Run task ``index`` unless it has finished: under its lock, in an empty folder, ``body(folder,
        attempt)`` (attempt 1 for the first run; a retry after a kill counts up) returns the record that
        becomes its marker. A finished task is never run again: its record comes back as it is."""
        self.check_index(index)
        if (record := self.done(index)) is not None:
            return record
        lock = FileLock(str(self.root / f"{index:05d}.lock"))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise TokenmillError(
                f"task {index} of stage {self.stage} is running elsewhere ({lock.lock_file})"
            ) from None
        try:
            if (record := self.done(index)) is not None:  # finished while we waited for the lock
                return record
            folder = self.folder(index)
            if folder.exists():  # an unfinished attempt (killed): start it again from nothing
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            attempts = self.root / f"{index:05d}.attempts"
            attempt = (int(attempts.read_text()) if attempts.exists() else 0) + 1
            write_json(attempts, attempt)
            record = {**body(folder, attempt), "key": self.key}
            write_json(folder / DONE, record, sort_keys=False)  # last: counters keep their order
            return record
        finally:
            lock.release()

    def remove(self) -> None:
        """Delete every task's parts once the stage's merged output is recorded (they are copies)."""
        if self.root.exists():
            shutil.rmtree(self.root)

    def check_index(self, index: int) -> None:
        if not 0 <= index < self.count:
            raise TokenmillError(f"--task {index}: stage {self.stage} has tasks 0..{self.count - 1}")


def task_status(folder: Path) -> list[dict[str, Any]]:
    """Per tasked stage under ``folder`` (``.work/tasks``; a many-direction run's in ``{direction}/``, named
    ``{direction}.{stage}``): tasks planned, done and left (``--status``)."""
    rows = []
    for plan_file in [*sorted(folder.glob(f"*/{PLAN}")), *sorted(folder.glob(f"*/*/{PLAN}"))]:
        plan = json.loads(plan_file.read_text(encoding="utf-8"))
        stage = plan_file.parent
        direction = "" if stage.parent == folder else f"{stage.parent.name}."
        done = [i for i in range(int(plan["tasks"])) if (stage / f"{i:05d}" / DONE).exists()]
        left = sorted(set(range(int(plan["tasks"]))) - set(done))
        rows.append({"stage": direction + plan["stage"], "tasks": int(plan["tasks"]), "done": len(done),
                     "left": left})
    return rows


def format_status(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no tasks planned yet (run the plan phase, or prepare without --phase)"
    return "\n".join(
        f"{row['stage']}: {row['done']} of {row['tasks']} tasks done"
        + (f"; left: {_ranges(row['left'])}" if row["left"] else "")
        for row in rows
    )


def _ranges(indexes: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    out: list[str] = []
    start = prev = None
    for i in [*indexes, None]:  # type: ignore[list-item]
        if start is not None and (i is None or i != prev + 1):  # type: ignore[operator]
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if i is not None and start is None:
            start = i
        prev = i
    return ", ".join(out)


__all__ = ["DONE", "PLAN", "TASKS_DIR", "TaskKilled", "TaskSet", "format_status", "task_status"]
