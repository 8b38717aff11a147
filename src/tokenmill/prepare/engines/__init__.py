"""Where a stage's tasks run: registered engine parts (``local``, ``ray``, ``slurm``; see :mod:`.base`)."""

from tokenmill.prepare.engines.base import (
    CLUSTER_BYTES_PER_TASK,
    LOCAL_BYTES_PER_TASK,
    Engine,
    EnginePart,
    OnDone,
    TaskFunction,
    engine_names,
    engine_options,
    engine_part,
    register_engine,
)
from tokenmill.prepare.engines.local import LOCAL, LocalEngine
from tokenmill.prepare.engines.ray import RAY
from tokenmill.prepare.engines.slurm import SLURM

BUILTIN = (LOCAL, RAY, SLURM)
"""The engines that come with tokenmill (each registered when its module is imported)."""


def get_engine(name: str, config: object) -> Engine:
    """The engine that runs a coordinator's tasks for a run of engine ``name``."""
    return engine_part(name).start(config)


__all__ = ["BUILTIN", "CLUSTER_BYTES_PER_TASK", "LOCAL_BYTES_PER_TASK", "Engine", "EnginePart", "LocalEngine",
           "OnDone", "TaskFunction", "engine_names", "engine_options", "engine_part", "get_engine",
           "register_engine"]
