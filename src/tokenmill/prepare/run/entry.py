"""``prepare(config)``: one entry point for single-direction, monolingual and many-direction runs; the steps of
a run cut for a scheduler (``phase``), one task of it (:func:`run_task`), the Slurm script and ``--status``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokenmill.errors import ConfigError
from tokenmill.prepare.config import PrepareConfig
from tokenmill.prepare.engines import engine_part
from tokenmill.prepare.multilingual import run_multilingual
from tokenmill.prepare.object_storage import work_folder
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.run.folder import WORK_DIR
from tokenmill.prepare.run.runner import check_destination_folder, execute_task, run_single
from tokenmill.prepare.run.summary import PrepareSummary
from tokenmill.prepare.run.tasking import task_count
from tokenmill.prepare.slurm import write_script
from tokenmill.prepare.stages import task_stage
from tokenmill.prepare.stages.cleaned import clean_plan, train_input_bytes
from tokenmill.prepare.stages.encoded import encode_key
from tokenmill.prepare.stages.tokenizer import model_path
from tokenmill.prepare.task_process import one_helper_per_run
from tokenmill.prepare.tasks import TASKS_DIR, format_status, task_status
from tokenmill.prepare.tokenizing import splits_words
from tokenmill.store.remote import is_url

COORDINATOR_PHASES = ("plan", "tokenizer", "merge")
TASK_PHASES = ("clean", "encode")


def prepare(
    config: PrepareConfig, *, force: bool = False, progress: bool | None = None, phase: str | None = None
) -> PrepareSummary:
    """Run the whole pipeline; re-running skips stages whose inputs and settings did not change.

    ``phase`` runs one coordinator step of a run cut for a scheduler (``plan``, ``tokenizer``, ``merge``;
    see :data:`tokenmill.prepare.stages.PHASES`); tasks run with :func:`run_task`."""
    if not isinstance(config, PrepareConfig):
        raise ConfigError("prepare() takes a PrepareConfig (see tokenmill.prepare.build_config)")
    with one_helper_per_run():  # the local engine's tasked stages fork their tasks from one helper process
        return _prepare(config, force=force, progress=progress, phase=phase)


def _prepare(config: PrepareConfig, *, force: bool, progress: bool | None, phase: str | None) -> PrepareSummary:
    if config.multilingual:
        if phase is not None:
            raise ConfigError("--phase: runs of many directions are not cut into tasks yet")
        return run_multilingual(config, force=force, progress=progress, execute=execute_task)
    scheduled = engine_part(config.engine.name).scheduled
    if scheduled and phase is None:
        raise ConfigError(scheduled)
    if phase is not None and phase not in COORDINATOR_PHASES:
        raise ConfigError(f"--phase {phase} runs one task: give --task I (coordinator phases: "
                          f"{', '.join(COORDINATOR_PHASES)})")
    ctx = RunContext(config, force=force, progress=progress, phase=phase, execute=execute_task)
    run_single(ctx)
    return ctx.summary


def run_task(config: PrepareConfig, phase: str, index: int) -> list[dict[str, Any]]:
    """Task ``index`` of phase ``clean`` (one range of the training text) or ``encode`` (that range of every
    side): what a Slurm array task runs. Returns the task's records; a stage the coordinator already merged
    and recorded (a script submitted again after its run finished) gives ``{"merged": True}`` and runs
    nothing."""
    if phase not in TASK_PHASES:
        raise ConfigError(f"--task is for --phase clean or encode, not {phase}")
    ctx = RunContext(config, progress=False, phase=phase)
    if phase == "clean":
        stages = {"clean.train": clean_plan(ctx, "train").key}
    else:
        words = splits_words(config)  # no model: encoded in the tokenizer phase, never as tasks
        stages = {f"encode.train.{lang}": encode_key(ctx, "train", lang)
                  if words or model_path(ctx, lang).exists()
                  else None for lang in config.langs}  # no model yet: the task says which phases to run first
    return [
        {"stage": stage, "task": index, "merged": True, "lines": 0, "seconds": 0.0}
        if key is not None and ctx.done(stage, key)
        else task_stage(stage).run_task(ctx, index, config.run.workers)
        for stage, key in stages.items()
    ]


def write_slurm_script(config: PrepareConfig) -> Path:
    """``--engine slurm``: the sbatch script of the run (see :mod:`tokenmill.prepare.slurm`); runs nothing."""
    ctx = RunContext(config, progress=False)
    check_destination_folder(ctx)
    ctx.root.mkdir(parents=True, exist_ok=True)
    return write_script(config, task_count(ctx, train_input_bytes(ctx)), ctx.work)


def status(config: PrepareConfig) -> str:
    """``--status``: the tasks done and left in each tasked stage of the run."""
    root = work_folder(config.inputs.destdir) if is_url(config.inputs.destdir) else Path(config.inputs.destdir)
    return format_status(task_status(root / WORK_DIR / TASKS_DIR))
