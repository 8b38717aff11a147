"""Tasks as Ray tasks (``--engine ray``; ``pip install tokenmill[ray]``).

Joins the cluster at ``--ray-address`` (``auto`` or the head's ``HOST:PORT``; the driver must run on a
node of it) or starts Ray on this machine. Every node needs tokenmill installed and the output folder
on a shared file system. Tasks are dealt to the live nodes in turn (soft node affinity: a task whose
node is gone runs elsewhere). A worker process that dies mid-task (OOM kill, lost node) is retried by Ray
(``max_retries``); the task starts again from an empty folder, so the output does not change. A task
that still does not finish (out of retries, or the cluster gone) stops the run with
:class:`~tokenmill.prepare.tasks.TaskKilled`, as a killed task of the local engine does: the output
folder keeps the tasks that finished, and the next run does only what is left. A task that raises stops
the run with its error.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from tokenmill.errors import TokenmillError
from tokenmill.prepare.engines.base import OnDone, TaskFunction, _nothing
from tokenmill.prepare.tasks import TaskKilled

MAX_RETRIES = 3
LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def on_node(function: TaskFunction, *args: Any) -> dict[str, Any]:
    """Run a task and add the Ray node it ran on to its record (the task table shows the spread)."""
    record = function(*args)
    return {**record, "node": ray.get_runtime_context().get_node_id()}


def _stay_on_loopback() -> None:
    """Make a Ray started here use 127.0.0.1. Ray turns a loopback node address into the machine's own
    interface address unless ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, which each process reads once, when
    it imports Ray: the processes Ray starts get it from the environment, this one (which imported Ray
    with this module) through the constant it was read into."""
    os.environ.setdefault(LOOPBACK_SWITCH, "0")
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    if os.environ[LOOPBACK_SWITCH] == "0" and hasattr(constants, "ENABLE_RAY_CLUSTER"):
        constants.ENABLE_RAY_CLUSTER = False


class RayEngine:
    name = "ray"

    def __init__(self, address: str | None, *, cpus_per_task: int = 1) -> None:
        self.address = address
        self.cpus_per_task = cpus_per_task

    def _connect(self) -> None:
        if ray.is_initialized():
            return
        if self.address:
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
        else:  # a Ray of our own on this machine, on loopback only
            _stay_on_loopback()
            ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False)

    def run(
        self, function: TaskFunction, calls: Sequence[tuple[Any, ...]], on_done: OnDone = _nothing
    ) -> list[dict[str, Any]]:
        if not calls:
            return []
        self._connect()
        remote = ray.remote(num_cpus=self.cpus_per_task, max_retries=MAX_RETRIES)(on_node)
        nodes = self._nodes()
        refs = [remote.options(scheduling_strategy=self._placement(nodes, i)).remote(function, *call)
                for i, call in enumerate(calls)]
        which = {ref: i for i, ref in enumerate(refs)}
        results: list[dict[str, Any] | None] = [None] * len(refs)
        waiting = list(refs)
        try:
            while waiting:
                try:
                    ready, waiting = ray.wait(waiting, num_returns=1)
                except ray.exceptions.RayError as error:  # the cluster went away under us
                    raise TaskKilled(f"the Ray cluster stopped answering ({type(error).__name__}: {error}); "
                                     "re-run prepare to run the tasks left") from None
                i = which[ready[0]]
                results[i] = self._result(calls[i], ready[0])
                on_done(results[i])  # type: ignore[arg-type]
        except BaseException:  # one task failed for good (or we were interrupted): stop the others
            for ref in waiting:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            raise
        return results  # type: ignore[return-value]

    def _nodes(self) -> list[str]:
        """Ids of the live nodes that can run a task, in a fixed order."""
        return sorted(
            node["NodeID"] for node in ray.nodes()
            if node.get("Alive") and node.get("Resources", {}).get("CPU", 0) >= self.cpus_per_task
        )

    @staticmethod
    def _placement(nodes: list[str], index: int) -> Any:
        """Task ``index`` goes to node ``index mod len(nodes)`` (every node gets its share, unlike Ray's
        best-effort SPREAD); ``soft``: when that node is gone, Ray runs it (or its retry) elsewhere."""
        if not nodes:
            return "SPREAD"
        return NodeAffinitySchedulingStrategy(node_id=nodes[index % len(nodes)], soft=True)

    @staticmethod
    def _result(call: tuple[Any, ...], ref: Any) -> dict[str, Any]:
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as error:  # the task raised: its own error, once
            cause = error.cause if isinstance(error.cause, Exception) else error
            raise TokenmillError(f"task {call[1]} #{call[2]} failed on the Ray cluster: {cause}") from None
        except ray.exceptions.RayError as error:  # workers kept dying (or its node went): out of retries
            raise TaskKilled(
                f"task {call[1]} #{call[2]} did not finish after {MAX_RETRIES} retries on the Ray cluster "
                f"({type(error).__name__}); re-run prepare to run it and the tasks left (the tasks that "
                "finished are not run again)"
            ) from None


__all__ = ["MAX_RETRIES", "RayEngine"]
