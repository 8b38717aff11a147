"""Where a stage's tasks run: this process (``local``) or a Ray cluster (``ray``).

An engine gets one module-level function and a list of argument tuples (plain JSON-able values: the
settings as a dict, the stage name, the task index) and returns the results in the same order. The
task writes its own outputs and marker under the run's folder, so an engine only has to run each call
once to completion; a task that dies (worker killed, node lost) is retried by the engine, and one that
keeps failing raises with its stage and index. ``slurm`` is not an engine here: it writes a script of
array jobs (see :mod:`tokenmill.prepare.slurm`) whose tasks call the same function.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from tokenmill.errors import ConfigError
from tokenmill.prepare.task_process import TaskRunner

TaskFunction = Callable[..., dict[str, Any]]
OnDone = Callable[[dict[str, Any]], None]
"""Called with each task's record as it finishes (progress), in finishing order."""


def _nothing(record: dict[str, Any]) -> None:
    """The default :data:`OnDone`."""


class Engine(Protocol):
    name: str

    def run(
        self, function: TaskFunction, calls: Sequence[tuple[Any, ...]], on_done: OnDone = _nothing
    ) -> list[dict[str, Any]]:
        """``[function(*call) for call in calls]``, wherever the engine runs them."""
        ...


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
        with TaskRunner() as runner:
            for call in calls:
                results.append(runner.run(function, call))
                on_done(results[-1])
        return results


def get_engine(name: str, *, ray_address: str | None = None, cpus_per_task: int = 1) -> Engine:
    """The engine called ``name`` (Ray's is imported only when asked for: it is an optional extra)."""
    if name == "local":
        return LocalEngine()
    if name == "ray":
        try:
            module = importlib.import_module("tokenmill.prepare.ray_engine")
        except ImportError as error:
            raise ConfigError(f"--engine ray needs Ray ({error}): pip install 'tokenmill[ray]'") from None
        return module.RayEngine(ray_address, cpus_per_task=cpus_per_task)
    raise ConfigError(f"--engine {name}: tasks run on local or ray (slurm writes a script instead)")


__all__ = ["Engine", "LocalEngine", "OnDone", "TaskFunction", "get_engine"]
