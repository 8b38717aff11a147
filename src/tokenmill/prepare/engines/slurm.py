"""The ``slurm`` engine: the run as Slurm jobs (``prepare`` writes their script, :mod:`tokenmill.prepare.slurm`;
each job runs one ``--phase``). The tasks a coordinator phase runs itself run on the local engine."""

from __future__ import annotations

from typing import Any

from tokenmill.prepare.engines.base import CLUSTER_BYTES_PER_TASK, Engine, EnginePart, register_engine
from tokenmill.prepare.engines.local import LocalEngine


def start(config: Any) -> Engine:
    return LocalEngine()


SLURM = register_engine(EnginePart(
    "slurm", start, is_cluster=True, bytes_per_task=CLUSTER_BYTES_PER_TASK,
    scheduled=("--engine slurm runs as Slurm jobs: `tokenmill prepare ... --engine slurm` writes their "
               "script (tokenmill.prepare.run.write_slurm_script in Python)"),
    describe="Slurm array jobs (writes an sbatch script)",
))
