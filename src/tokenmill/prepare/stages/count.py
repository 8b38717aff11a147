"""``count.train`` and ``index.train``: the training inputs' line index made by two rounds of tasks over
byte ranges (:mod:`~tokenmill.prepare.line_count`), on an engine whose tasks run elsewhere
(``counts_in_tasks``). The clean stage's plan then cuts the lines as one counting pass would."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tokenmill.prepare import line_count
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.run.tasking import fresh_plan, run_tasks, task_count, task_record
from tokenmill.prepare.stages.base import TaskedStage
from tokenmill.prepare.stages.cleaned import CleanPlan, clean_plan, train_input_bytes

COUNT_STAGES = ("count.train", "index.train")


def count_inputs(ctx: RunContext, plan: CleanPlan) -> list[dict[str, Any]]:
    """The line index of every training input (what ``Source.index_state`` holds after its counting
    pass), made by two rounds of tasks over byte ranges."""
    paths = plan.index_paths()
    every = ctx.read_options.index_every
    rounds = [ctx.folder.task_set(stage, plan.key) for stage in COUNT_STAGES]
    if fresh_plan(ctx, rounds[0]):
        ranges = line_count.byte_ranges(paths, task_count(ctx, train_input_bytes(ctx)))
        rounds[0].write_plan(len(ranges), ranges=ranges, every=every)
    ranges = rounds[0].plan()["ranges"]  # a run resumed with another task count keeps the planned ranges
    run_tasks(ctx, rounds[0], in_phase=True)
    counted = rounds[0].records()
    if fresh_plan(ctx, rounds[1]):
        rounds[1].write_plan(len(ranges), ranges=ranges, every=every,
                             before=line_count.newlines_before(ranges, counted))
    run_tasks(ctx, rounds[1], in_phase=True)
    offsets = [record["offsets"] for record in rounds[1].records()]
    states = line_count.file_indexes(paths, ranges, counted, offsets, every)
    if plan.tgt_files is not None:
        line_count.check_pairs(states)
    return states


def remove_rounds(ctx: RunContext, key: str) -> None:
    """Delete both rounds' tasks (the clean plan holds the index they made)."""
    for stage in COUNT_STAGES:
        ctx.folder.task_set(stage, key).remove()


class CountRound(TaskedStage):
    """Task side of one round: ``count.train`` (newlines of a byte range) or ``index.train`` (the offsets of
    the range's indexed lines). The coordinator side is :func:`count_inputs` (run inside the clean plan)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def run_task(self, ctx: RunContext, index: int, workers: int) -> dict[str, Any]:
        tasks = ctx.folder.planned_tasks(self.name)
        details = tasks.plan()
        paths = clean_plan(ctx, "train").index_paths()

        def body(folder: Path, attempt: int) -> dict[str, Any]:
            started = time.perf_counter()
            where = details["ranges"][index]
            path, every = paths[where["file"]], int(details["every"])
            if self.name == COUNT_STAGES[0]:
                found = line_count.count_range(path, where["start"], where["stop"], every)
                lines = found.get("newlines", found.get("index", {}).get("n_lines", 0))
            else:
                offsets = [] if where["stop"] is None else line_count.range_offsets(
                    path, where["start"], where["stop"], int(details["before"][index]), every)
                found, lines = {"offsets": offsets}, len(offsets)
            return task_record(started, lines, attempt, **found)

        return tasks.run_once(index, body)
