"""Running a stage's tasks from the coordinator: how many, whether at all, and on which engine.

A task-capable stage plans its tasks (a :class:`~tokenmill.prepare.tasks.TaskSet` under ``.work/tasks``),
hands them to :func:`run_tasks` (the engine runs the runner's task function, which builds a context and
the one stage in the task's process) and merges their parts. Each task writes its own folder and marker,
so a task that finished is never run again, whatever engine or task count a resumed run uses.
"""

from __future__ import annotations

import os
import socket
import time
from math import ceil
from typing import Any

from tqdm import tqdm

from tokenmill.errors import TokenmillError
from tokenmill.prepare.config import absolute_paths
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.tasks import TaskSet


def task_count(ctx: RunContext, input_bytes: int) -> int:
    """--tasks, or one task per GiB of training input locally (per 256 MiB on a cluster engine)."""
    if ctx.config.engine.tasks:
        return ctx.config.engine.tasks
    return max(1, ceil(input_bytes / ctx.engine.bytes_per_task))


def task_record(started: float, lines: int, attempt: int, **extra: Any) -> dict[str, Any]:
    """What a task returns (and leaves as its marker): lines, seconds, attempt, where it ran, and ``extra``."""
    return {"lines": int(lines), "seconds": round(time.perf_counter() - started, 3), "attempt": attempt,
            "host": socket.gethostname(), "pid": os.getpid(), **extra}


def run_tasks(ctx: RunContext, tasks: TaskSet, *, in_phase: bool = False) -> None:
    """Run the tasks of ``tasks`` not finished yet on the run's engine (the coordinator's part); in a
    ``--phase`` run only when ``in_phase`` (tasks that run inside a coordinator phase: no jobs of their own);
    else they must have run before this phase (the stage's records say which are missing)."""
    left = tasks.left()
    if left and ctx.phase is not None and not in_phase:
        tasks.records()  # raises: the tasks of this stage must have run before this phase
    if ctx.execute is None:
        raise TokenmillError(f"stage {tasks.stage}: tasks are run by a coordinator, not by a task process")
    engine = ctx.engine.start(ctx.config)
    per_task_workers = ctx.engine.task_workers(ctx.config.run.workers)
    settings = absolute_paths(ctx.config.to_dict())  # a worker may start in another directory
    finished = tasks.count - len(left)
    with tqdm(total=tasks.count, initial=finished, desc=f"{tasks.stage} tasks ({engine.name})", unit=" task",
              disable=not ctx.progress, leave=False) as bar:
        lines = [0]

        def done(record: dict[str, Any]) -> None:
            lines[0] += record["lines"]
            bar.set_postfix_str(f"{lines[0] / max(bar.format_dict['elapsed'], 1e-9):,.0f} lines/s")
            bar.update(1)

        direction = ctx.folder.direction  # a task of a many-direction run's direction builds that direction's context
        calls = [(settings, tasks.stage, index, per_task_workers, *([direction] if direction else []))
                 for index in left]
        results = engine.run(ctx.execute, calls, done)
    nodes = {index: result["node"] for index, result in zip(left, results, strict=True) if "node" in result}
    ctx.task_table[tasks.stage] = [
        {"task": i, "lines": r["lines"], "seconds": r["seconds"], "attempts": r["attempt"], "host": r["host"],
         **({"node": nodes[i]} if i in nodes else {})}
        for i, r in enumerate(tasks.records())
    ]


def fresh_plan(ctx: RunContext, tasks: TaskSet) -> bool:
    """Whether ``tasks`` needs its plan written (none yet, or --force)."""
    return tasks.read_plan() is None or ctx.stages.force
