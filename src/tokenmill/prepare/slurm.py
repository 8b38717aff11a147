"""``--engine slurm``: an sbatch script that runs a prepare as five dependent jobs, two of them arrays.

    plan ──> clean[0..N-1] ──> tokenizer ──> encode[0..N-1] ──> merge

Each job is ``tokenmill prepare -c DESTDIR/.work/slurm/config.yaml --phase P [--task $SLURM_ARRAY_TASK_ID]``;
the config file holds every resolved setting (task count included), so every job sees the same run.
The merge job runs the binarize tasks itself (one per encoded part, one after another: they copy and map
ids, far lighter than encoding).
Jobs wait for the previous one with ``--dependency=afterok``; a failed array task fails its array, and
submitting the script again re-runs only what is not done (finished tasks keep their markers).
``tokenmill prepare -c ... --status`` shows the tasks done and left.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from tokenmill.fsutil import atomic_write
from tokenmill.prepare.config import PrepareConfig, absolute_paths

SLURM_DIR = "slurm"
SCRIPT = "submit.sh"
CONFIG = "config.yaml"


@dataclass(frozen=True)
class Job:
    """One sbatch submission: a name, the phase it runs, and whether it is an array over the tasks."""

    name: str
    phase: str
    array: bool


JOBS = (
    Job("plan", "plan", False),
    Job("clean", "clean", True),
    Job("tokenizer", "tokenizer", False),
    Job("encode", "encode", True),
    Job("merge", "merge", False),
)


def write_script(config: PrepareConfig, tasks: int, work: Path, *, directions: int = 0) -> Path:
    """Write ``work/slurm/config.yaml`` and ``work/slurm/submit.sh``; returns the script's path. A run of
    ``directions`` directions has ``tasks`` tasks for each: its arrays hold ``tasks * directions``."""
    folder = work / SLURM_DIR
    settings = absolute_paths(config.to_dict())
    settings.update(engine="slurm", tasks=tasks)
    if not directions:
        settings.pop("directions", None)
    size = tasks * max(directions, 1)
    config_path = folder / CONFIG
    with atomic_write(config_path) as handle:
        yaml.safe_dump(settings, handle, sort_keys=False, allow_unicode=True)
    run = f"{shlex.quote(sys.executable)} -m tokenmill prepare -c {shlex.quote(str(config_path))} -q"
    lines = [
        "#!/usr/bin/env bash",
        f"# tokenmill prepare on Slurm: {size} tasks per array"
        + (f" ({tasks} for each of {directions} directions)" if directions else "")
        + f"; submit with: bash {shlex.quote(str(folder / SCRIPT))}",
        '# more sbatch options for every job (partition, time, memory): TOKENMILL_SBATCH="--partition=cpu" bash ...',
        "set -euo pipefail",
        'SB="sbatch --parsable ${TOKENMILL_SBATCH:-}"',
        f"RUN={shlex.quote(run)}",
    ]
    previous = None
    for job in JOBS:
        after = f" --dependency=afterok:${previous}" if previous else ""
        array = f" --array=0-{size - 1}" if job.array else ""
        task = r" --task \$SLURM_ARRAY_TASK_ID" if job.array else ""
        lines.append(
            f'{job.name}=$($SB --job-name=tokenmill-{job.name}{after}{array} --wrap "$RUN --phase {job.phase}{task}")'
        )
        previous = job.name
    ids = ", ".join(f"{job.name} ${job.name}" for job in JOBS)
    lines.append(f'echo "submitted: {ids}; progress: $RUN --status"')
    script = folder / SCRIPT
    with atomic_write(script) as handle:
        handle.write("\n".join(lines) + "\n")
    script.chmod(0o755)
    return script


__all__ = ["CONFIG", "JOBS", "SCRIPT", "SLURM_DIR", "Job", "write_script"]
