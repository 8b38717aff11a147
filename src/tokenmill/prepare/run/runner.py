"""The runner: a loop over a run's stages, the folder's lock, and the entry points (whole runs, one phase
of a run cut for a scheduler, one task).

A run cut into phases (:data:`~tokenmill.prepare.stages.PHASES`) ends a coordinator phase where a stage
declares that its tasks run in the next phase (``task_phase``): those stages' tasks are planned and the
phase is done; the next coordinator phase finds the tasks' records and merges them.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.fsutil import remove_stale_temps
from tokenmill.prepare.config import build_config
from tokenmill.prepare.object_storage import check_destination
from tokenmill.prepare.publish import check_owned
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.stages import PHASES, Stage, TaskedStage, single_run, task_stage
from tokenmill.prepare.tasks import TaskKilled

log = logging.getLogger("tokenmill.prepare")


class PhaseDone(Exception):
    """A ``--phase`` run has done its part (the tasks are left to the array jobs); also how a test stops a
    run between two steps as a killed run would stop."""


def run_stages(ctx: RunContext, stages: list[Stage]) -> bool:
    """Run ``stages`` in order; False when a ``--phase`` run ended at a phase boundary (the tasks of the
    stages whose task phase comes next are planned)."""
    after = PHASES[PHASES.index(ctx.phase) + 1] if ctx.phase in PHASES[:-1] else None
    planned = False
    for stage in stages:
        phase = stage.task_phase(ctx) if after is not None else None
        if phase is not None and phase == after:
            if not ctx.done(stage.name, stage.key(ctx)):
                assert isinstance(stage, TaskedStage)
                stage.plan(ctx)
            planned = True
            continue
        if planned:
            break
        stage.execute(ctx)
    if planned:
        log.info("phase %s done: planned the tasks of the %s phase", ctx.phase, after)
    return not planned


@contextmanager
def exclusive(ctx: RunContext) -> Iterator[None]:
    """Hold ``DESTDIR/.lock`` (another prepare on the same folder fails at once, no waiting), remove a
    killed run's temporaries, and refuse a folder holding files tokenmill did not write.

    A first run that fails with an error leaves no directory behind (a re-run that fails leaves the
    previous output untouched: nothing is published before every stage has finished). A run stopped
    by a killed task keeps what it finished, as a killed run does."""
    root = ctx.root
    created = not root.exists()
    fresh = created or not any(root.iterdir())
    check_owned(root, ctx.out)
    root.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(root / ".lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise TokenmillError(
            f"{root} is being written by another tokenmill prepare (lock {root / '.lock'}); "
            "wait for it to finish or use another --destdir"
        ) from None
    failed = False
    try:
        for directory in [root, *(p for p in root.rglob("*") if p.is_dir())]:
            remove_stale_temps(directory)
        yield
    except (PhaseDone, TaskKilled):
        raise
    except Exception:
        failed = True
        raise
    finally:
        lock.release()
        if failed and fresh:
            _remove_run(root, remove_folder=created)


def _remove_run(root: Path, *, remove_folder: bool) -> None:
    """Delete what a failed first run created: its files, and the folder if the run made it."""
    for entry in list(root.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    if remove_folder:
        with suppress(OSError):
            root.rmdir()


def check_destination_folder(ctx: RunContext) -> None:
    """Settings are validated when the config is built; here: the destination is usable."""
    if ctx.root.exists() and not ctx.root.is_dir():
        raise ConfigError(f"--destdir {ctx.root} is a file; give a directory")
    if ctx.url and ctx.phase in (None, "plan"):
        check_destination(ctx.url, ctx.config.engine.storage_options)


def warn_no_validation(ctx: RunContext, missing: list[str]) -> None:
    """Training without a validation split is usually a mistake: say so once."""
    if missing:
        ctx.summary.warn(
            f"no validation data for {', '.join(missing)}: give --validpref (fairseq-train needs a valid split "
            "unless --disable-validation)"
        )


def warn_untasked(ctx: RunContext) -> None:
    """--tasks 1 with an input that is not cut into tasks yet (config refuses more tasks): say that the
    training split runs the plain one-process path instead of silently doing so."""
    cfg = ctx.config
    what = ("--align-suffix" if cfg.inputs.align_suffix else
            "--documents blank-line" if cfg.inputs.documents == "blank-line" else None)
    if what and cfg.engine.tasks == 1:
        ctx.summary.warn(f"{what} is not cut into tasks yet: --tasks 1 runs the training split without tasks "
                         "(one process, the same output)")


def run_single(ctx: RunContext) -> None:
    """A single-direction run (or one coordinator phase of it) on ``ctx``; its summary is ``ctx.summary``."""
    cfg = ctx.config
    check_destination_folder(ctx)
    if not cfg.megatron.output_prefix and ctx.phase in (None, "merge"):
        warn_no_validation(ctx, [] if cfg.inputs.validpref else [cfg.inputs.source_lang or "this run"])
    warn_untasked(ctx)
    ctx.inputs.refresh = ctx.phase in (None, "plan")  # the coordinator checks URL inputs once
    try:
        with exclusive(ctx):
            run_stages(ctx, single_run(cfg))
    except PhaseDone as done:
        log.info("phase %s done: %s", ctx.phase, done)
    ctx.summary.tasks = ctx.task_table
    ctx.summary.merge_seconds = ctx.merge_seconds


def execute_task(settings: dict[str, Any], stage: str, index: int, workers: int,
                 direction: str | None = None) -> dict[str, Any]:
    """Run one task anywhere (a task process, a Ray worker, a Slurm array task): plain settings in, its
    record out. The process builds the run's context and the one stage, nothing else (for a task of a
    many-direction run's ``direction``: that direction's context)."""
    ctx = RunContext(build_config(settings), progress=False, direction=direction)
    return task_stage(stage).run_task(ctx, index, workers)
