"""Engines as registered parts: where a stage's tasks run, and what the run asks of the engine.

An engine part says, by its attributes, everything the core needs: whether it is a cluster engine
(``is_cluster``: the training split always goes through tasks, cut smaller, one worker per task), whether
the input counting and the dedup partitions are also settled by task rounds (``counts_in_tasks``),
whether it runs as scheduler jobs (``scheduled``: ``prepare()`` without ``--phase`` refuses, with the
part's message), the settings it reads (``options``: others engines refuse them) and the optional package
it needs. ``start(config)`` gives the :class:`Engine` that runs a coordinator's tasks. The core never
branches on an engine's name: a new engine is a new module that calls :func:`register_engine`.

An :class:`Engine` gets one module-level function and a list of argument tuples (plain JSON-able values:
the settings as a dict, the stage name, the task index) and returns the results in the same order. The
task writes its own outputs and marker under the run's folder, so an engine only has to run each call
once to completion; a task that dies is retried by the engine or stops the run naming the task.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tokenmill.errors import ConfigError
from tokenmill.settings import did_you_mean

TaskFunction = Callable[..., dict[str, Any]]
OnDone = Callable[[dict[str, Any]], None]
"""Called with each task's record as it finishes (progress), in finishing order."""

LOCAL_BYTES_PER_TASK = 1 << 30
CLUSTER_BYTES_PER_TASK = 256 << 20


def _nothing(record: dict[str, Any]) -> None:
    """The default :data:`OnDone`."""


class Engine(Protocol):
    name: str

    def run(
        self, function: TaskFunction, calls: Sequence[tuple[Any, ...]], on_done: OnDone = _nothing
    ) -> list[dict[str, Any]]:
        """``[function(*call) for call in calls]``, wherever the engine runs them."""
        ...


@dataclass
class EnginePart:
    """One registered engine (see the module's docstring)."""

    name: str
    start: Callable[[Any], Engine]
    """The engine that runs the coordinator's tasks, from the run's settings."""
    is_cluster: bool = False
    """Tasks run on other machines: the training split always goes through tasks (with any --tasks)."""
    bytes_per_task: int = LOCAL_BYTES_PER_TASK
    """Training input per task when --tasks is not given (a cluster engine's tasks are smaller:
    :data:`CLUSTER_BYTES_PER_TASK`)."""
    counts_in_tasks: bool = False
    """The input's line count and the dedup partitions are settled by rounds of tasks too (the local
    engine runs tasks one after another: there one pass in the coordinator costs less)."""
    spreads_tasks: bool = False
    """Its tasks run side by side (one worker each) rather than one after another with every core."""
    scheduled: str | None = None
    """Runs as scheduler jobs: the message ``prepare()`` without a phase gives (None: runs here)."""
    options: tuple[str, ...] = ()
    """Settings only this engine reads (given with another engine they are refused)."""
    needs: tuple[str, str] | None = None
    """(module, pip extra) it needs installed."""
    describe: str = ""

    def check(self, given: dict[str, Any]) -> None:
        """Refuse what this engine cannot run with: another engine's options, a missing package."""
        for option, value in given.items():
            if value and option not in self.options:
                owner = next((p.name for p in _ENGINES.values() if option in p.options), "another engine")
                flag = "--" + option.replace("_", "-")
                raise ConfigError(f"{flag} {value} is for --engine {owner} (the engine is {self.name})")
        if self.needs and importlib.util.find_spec(self.needs[0]) is None:
            raise ConfigError(f"--engine {self.name} needs {self.needs[0].capitalize()}: "
                              f"pip install 'tokenmill[{self.needs[1]}]'")

    def task_workers(self, workers: int) -> int:
        """Workers inside each task: every core when tasks run one after another, else one."""
        return 1 if self.spreads_tasks else workers


_ENGINES: dict[str, EnginePart] = {}


def register_engine(part: EnginePart) -> EnginePart:
    """Add (or replace) an engine; ``--engine NAME`` and ``engine: NAME`` then choose it."""
    _ENGINES[part.name] = part
    return part


def engine_part(name: str) -> EnginePart:
    """The registered engine ``name``, or a ConfigError listing the engines."""
    part = _ENGINES.get(name)
    if part is None:
        raise ConfigError(f"--engine {name}: no such engine{did_you_mean(name, _ENGINES)}; "
                          f"engines: {', '.join(sorted(_ENGINES))}")
    return part


def engine_names() -> list[str]:
    return sorted(_ENGINES)


def engine_options() -> set[str]:
    """Every engine-only setting of the registered engines (``ray_address``)."""
    return {option for part in _ENGINES.values() for option in part.options}
