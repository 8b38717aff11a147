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
    scheduled = engine_part(config.engine.name).scheduled
    if scheduled and phase is None:
        raise ConfigError(scheduled)
    if phase is not None and phase not in COORDINATOR_PHASES:
        raise ConfigError(f"--phase {phase} runs one task: give --task I (coordinator phases: "
                          f"{', '.join(COORDINATOR_PHASES)})")
    if config.multilingual:
        return run_multilingual(config, force=force, progress=progress, execute=execute_task, phase=phase)
    ctx = RunContext(config, force=force, progress=progress, phase=phase, execute=execute_task)
    run_single(ctx)
    return ctx.summary


def run_task(config: PrepareConfig, phase: str, index: int) -> list[dict[str, Any]]:
    """Task ``index`` of phase ``clean`` (one range of the training text) or ``encode`` (that range of every
    side): what a Slurm array task runs (with --directions, task ``index`` of the array is task
    ``index % tasks`` of direction ``index // tasks``, directions in name order). Returns the task's records;
    a stage the coordinator already merged and recorded (a script submitted again after its run finished)
    gives ``{"merged": True}`` and runs nothing."""
    if phase not in TASK_PHASES:
        raise ConfigError(f"--task is for --phase clean or encode, not {phase}")
    if config.multilingual:
        name, index = direction_task(config, index)
        ctx = RunContext(config.direction_config(name), progress=False, phase=phase, direction=name)
    else:
        ctx = RunContext(config, progress=False, phase=phase)
    if phase == "clean":
        stages = {"clean.train": clean_plan(ctx, "train").key}
    else:
        words = splits_words(ctx.config)  # no model: encoded in the tokenizer phase, never as tasks
        stages = {f"encode.train.{lang}": encode_key(ctx, "train", lang)
                  if words or model_path(ctx, lang).exists()
                  else None for lang in ctx.config.langs}  # no model yet: the task says which phases to run first
    return [
        {"stage": ctx.prefix + stage, "task": index, "merged": True, "lines": 0, "seconds": 0.0}
        if key is not None and ctx.done(stage, key)
        else {**task_stage(stage).run_task(ctx, index, config.run.workers), "stage": ctx.prefix + stage}
        for stage, key in stages.items()
    ]


def direction_task(config: PrepareConfig, index: int) -> tuple[str, int]:
    """(direction, its task) of task ``index`` of a many-direction run's Slurm array: ``--tasks`` tasks per
    direction, the directions in name order."""
    names, per_direction = sorted(config.directions.files), config.engine.tasks
    if not per_direction:
        raise ConfigError("--task with --directions needs --tasks N (the tasks of each direction; the config "
                          "the Slurm script runs holds it)")
    if index >= per_direction * len(names):
        raise ConfigError(f"--task {index}: this run has tasks 0..{per_direction * len(names) - 1} "
                          f"({per_direction} for each of its {len(names)} directions)")
    return names[index // per_direction], index % per_direction


def write_slurm_script(config: PrepareConfig) -> Path:
    """``--engine slurm``: the sbatch script of the run (see :mod:`tokenmill.prepare.slurm`); runs nothing.
    With --directions each array holds every direction's tasks (as many for each: the most one needs)."""
    ctx = RunContext(config, progress=False)
    check_destination_folder(ctx)
    ctx.root.mkdir(parents=True, exist_ok=True)
    if not config.multilingual:
        return write_script(config, task_count(ctx, train_input_bytes(ctx)), ctx.work)
    contexts = [RunContext(config.direction_config(name), progress=False, direction=name)
                for name in sorted(config.directions.files)]
    tasks = max(task_count(direction, train_input_bytes(direction)) for direction in contexts)
    return write_script(config, tasks, ctx.work, directions=len(contexts))


def status(config: PrepareConfig) -> str:
    """``--status``: the tasks done and left in each tasked stage of the run."""
    root = work_folder(config.inputs.destdir) if is_url(config.inputs.destdir) else Path(config.inputs.destdir)
    return format_status(task_status(root / WORK_DIR / TASKS_DIR))
