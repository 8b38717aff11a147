"""The ``local`` engine: tasks one after another on this machine, each in a process of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokenmill.prepare.engines.base import EnginePart, OnDone, TaskFunction, _nothing, register_engine
from tokenmill.prepare.task_process import task_runner


class LocalEngine:
    """Tasks one after another on this machine, each in a process of its own (each task uses every core
    inside: cleaning workers, tokenizer threads), so a big local run is restartable task by task at no
    cost in speed, and the coordinator's memory does not grow with the tasks it ran
    (:mod:`~tokenmill.prepare.task_process`). A task that raises stops the run with its exception; one
    that is killed stops it with an error naming the task: the next run starts from that task."""

    name = "local"

    def run(
        self, function: TaskFunction, calls: Sequence[tuple[Any, ...]], on_done: OnDone = _nothing
    ) -> list[dict[str, Any]]:
        if not calls:
            return []
        results = []
        with task_runner() as runner:  # the run's helper (prepare() shares one between its stages)
            for call in calls:
                results.append(runner.run(function, call))
                on_done(results[-1])
        return results


def start(config: Any) -> LocalEngine:
    return LocalEngine()


LOCAL = register_engine(EnginePart("local", start, describe="this machine, one task after another"))
