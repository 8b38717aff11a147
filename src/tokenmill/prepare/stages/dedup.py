"""``dedup.train``: the duplicates across the clean tasks, settled partition by partition
(:mod:`~tokenmill.prepare.partitioned_dedup`: flat memory). In the coordinator, or on an engine that
``counts_in_tasks`` by tasks over ranges of partitions, whose outputs are then put one after another."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.prepare.partitioned_dedup import BOUNDS, find_duplicates, join_duplicates
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.run.tasking import fresh_plan, run_tasks, task_count, task_record
from tokenmill.prepare.stages.base import TaskedStage
from tokenmill.prepare.stages.cleaned import train_input_bytes

DEDUP_STAGE = "dedup.train"


def duplicates(ctx: RunContext, folders: list[Path], bases: list[int], partitions: int, out: Path, key: str) -> int:
    """Find the duplicates across the clean parts in ``folders`` into ``out``; their number."""
    if not ctx.engine.counts_in_tasks:
        return find_duplicates(folders, bases, partitions, out)
    tasks = ctx.folder.task_set(DEDUP_STAGE, key)
    if fresh_plan(ctx, tasks):
        n = min(partitions, task_count(ctx, train_input_bytes(ctx)))
        cuts = (np.arange(n + 1) * partitions) // n
        tasks.write_plan(len(cuts) - 1, cuts=cuts.tolist(), bases=bases, partitions=partitions)
    run_tasks(ctx, tasks, in_phase=True)
    found = join_duplicates([tasks.folder(i) for i in range(tasks.count)], out)
    tasks.remove()
    return found


class DedupStage(TaskedStage):
    """Task side of ``dedup.train``: the duplicates in one range of hash partitions."""

    name = DEDUP_STAGE

    def run_task(self, ctx: RunContext, index: int, workers: int) -> dict[str, Any]:
        tasks = ctx.folder.planned_tasks(DEDUP_STAGE)
        details = tasks.plan()
        parts = ctx.folder.task_set("clean.train", "")
        folders = [parts.folder(i) for i in range(len(details["bases"]))]

        def body(folder: Path, attempt: int) -> dict[str, Any]:
            started = time.perf_counter()
            which = range(details["cuts"][index], details["cuts"][index + 1])
            keys = sum(int(b[which.stop] - b[which.start]) for b in (np.load(f / BOUNDS) for f in folders))
            found = find_duplicates(folders, details["bases"], int(details["partitions"]), folder, which)
            return task_record(started, keys, attempt, duplicates=found)

        return tasks.run_once(index, body)
