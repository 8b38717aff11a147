"""``prepare(config)``: one entry point for single-direction, monolingual and many-direction runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokenmill.errors import ConfigError
from tokenmill.prepare.config import PrepareConfig
from tokenmill.prepare.multilingual import MultilingualPipeline
from tokenmill.prepare.object_storage import work_folder
from tokenmill.prepare.pipeline import WORK_DIR, Pipeline, PrepareSummary
from tokenmill.prepare.slurm import write_script
from tokenmill.prepare.tasks import TASKS_DIR, format_status, task_status
from tokenmill.prepare.tokenizing import WHITESPACE, backend_name
from tokenmill.store.remote import is_url

COORDINATOR_PHASES = ("plan", "tokenizer", "merge")


def prepare(
    config: PrepareConfig, *, force: bool = False, progress: bool | None = None, phase: str | None = None
) -> PrepareSummary:
    """Run the whole pipeline; re-running skips stages whose inputs and settings did not change.

    ``phase`` runs one coordinator step of a run cut for a scheduler (``plan``, ``tokenizer``, ``merge``;
    see :data:`tokenmill.prepare.pipeline.PHASES`); tasks run with :func:`run_task`."""
    if not isinstance(config, PrepareConfig):
        raise ConfigError("prepare() takes a PrepareConfig (see tokenmill.prepare.build_config)")
    if config.multilingual:
        if phase is not None:
            raise ConfigError("--phase: runs of many directions are not cut into tasks yet")
        return MultilingualPipeline(config, force=force, progress=progress).run()
    if config.engine == "slurm" and phase is None:
        raise ConfigError("--engine slurm runs as Slurm jobs: `tokenmill prepare ... --engine slurm` writes their "
                          "script (tokenmill.prepare.run.write_slurm_script in Python)")
    if phase is not None and phase not in COORDINATOR_PHASES:
        raise ConfigError(f"--phase {phase} runs one task: give --task I (coordinator phases: "
                          f"{', '.join(COORDINATOR_PHASES)})")
    return Pipeline(config, force=force, progress=progress, phase=phase).run()


def run_task(config: PrepareConfig, phase: str, index: int) -> list[dict[str, Any]]:
    """Task ``index`` of phase ``clean`` (one range of the training text) or ``encode`` (that range of every
    side): what a Slurm array task runs. Returns the task's records; a stage the coordinator already merged
    and recorded (a script submitted again after its run finished) gives ``{"merged": True}`` and runs
    nothing."""
    pipeline = Pipeline(config, progress=False, phase=phase)
    if phase == "clean":
        stages = {"clean.train": pipeline.clean_settings("train").key}
    elif phase == "encode":
        words = backend_name(config) == WHITESPACE  # no model: encoded in the tokenizer phase, never as tasks
        stages = {f"encode.train.{lang}": pipeline.encode_key("train", lang)
                  if words or pipeline.model_path(lang).exists()
                  else None for lang in config.langs}  # no model yet: the task says which phases to run first
    else:
        raise ConfigError(f"--task is for --phase clean or encode, not {phase}")
    return [
        {"stage": stage, "task": index, "merged": True, "lines": 0, "seconds": 0.0}
        if key is not None and pipeline.stages.done(stage, key) is not None
        else pipeline.run_task(stage, index, config.workers)
        for stage, key in stages.items()
    ]


def write_slurm_script(config: PrepareConfig) -> Path:
    """``--engine slurm``: the sbatch script of the run (see :mod:`tokenmill.prepare.slurm`); runs nothing."""
    pipeline = Pipeline(config, progress=False)
    pipeline.check_inputs()
    pipeline.root.mkdir(parents=True, exist_ok=True)
    return write_script(config, pipeline.tasked.count(), pipeline.work)


def status(config: PrepareConfig) -> str:
    """``--status``: the tasks done and left in each tasked stage of the run."""
    root = work_folder(config.destdir) if is_url(config.destdir) else Path(config.destdir)
    return format_status(task_status(root / WORK_DIR / TASKS_DIR))
