"""The ``ray`` engine: tasks as Ray tasks on a cluster (``pip install tokenmill[ray]``; see
:mod:`tokenmill.prepare.ray_engine`, imported only when a run starts it)."""

from __future__ import annotations

from typing import Any

from tokenmill._core.optional import require
from tokenmill.prepare.engines.base import CLUSTER_BYTES_PER_TASK, Engine, EnginePart, register_engine


def start(config: Any) -> Engine:
    module = require("tokenmill.prepare.ray_engine", extra="ray", needed_by="--engine ray")
    return module.RayEngine(config.engine.ray_address, cpus_per_task=1)


RAY = register_engine(EnginePart(
    "ray", start, is_cluster=True, bytes_per_task=CLUSTER_BYTES_PER_TASK, counts_in_tasks=True,
    spreads_tasks=True, options=("ray_address",), needs=("ray", "ray"), describe="a Ray cluster",
))
