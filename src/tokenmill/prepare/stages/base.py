"""The shape of a stage: one small object per stage (and per split and language where it has them).

A stage has a ``name`` (its record's name: ``clean.train``, ``encode.valid.en``), a ``key(ctx)`` (the
fingerprint of everything its output depends on: a stage whose record holds the same key and whose outputs
are intact is up to date), a ``run(ctx)`` (its work: outputs and info) and ``after(ctx, info)`` (what the
run takes from it, whether it ran now or was up to date: summary counts, hand-overs to later stages).

A task-capable stage (:class:`TaskedStage`) also says in which ``--phase`` its tasks run as jobs of their
own (``task_phase``: ``clean``, ``encode``; None: inside the coordinator's phase), and has ``plan`` (write
the tasks' plan), ``run_task`` (one task, in a task process that built the context and this stage alone)
and ``merge`` (the tasks' parts into the stage's output). The runner (:mod:`tokenmill.prepare.run.runner`)
is a loop over the stages; the phase boundaries of a run cut for a scheduler come from ``task_phase``.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

from tokenmill.errors import TokenmillError
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.tasks import TaskSet

Outputs = tuple[list[Path], dict[str, Any]]

PHASES = ("plan", "clean", "tokenizer", "encode", "merge")
"""Steps of a run cut for a scheduler (Slurm): ``plan`` (held-out splits cleaned, train's tasks planned),
``clean`` (one task, ``--task I``), ``tokenizer`` (dedup, merge, tokenizer, encode tasks planned),
``encode`` (one task), ``merge`` (the rest, published). Without a phase a run does them all."""


class Stage:
    """One stage (see the module's docstring)."""

    name: str

    def key(self, ctx: RunContext) -> str:
        raise NotImplementedError

    def run(self, ctx: RunContext) -> Outputs:
        raise NotImplementedError

    def after(self, ctx: RunContext, info: dict[str, Any]) -> None:
        """What the run takes from the stage's info (ran now or up to date); nothing by default."""

    def task_phase(self, ctx: RunContext) -> str | None:
        """The phase whose jobs run this stage's tasks, when it runs as tasks this time (None: it does not,
        or its tasks run inside the coordinator's phase)."""
        return None

    def execute(self, ctx: RunContext) -> dict[str, Any]:
        """Run the stage unless up to date; its info, after :meth:`after`."""
        try:
            info = ctx.record(self.name, self.key(ctx), lambda: self.run(ctx))
        except OSError as error:
            raise stage_io_error(self.name, error, ctx.root) from error
        self.after(ctx, info)
        return info


_FIXES = {
    errno.ENOSPC: "free space on that device or choose another --destdir, then re-run: finished stages are kept",
    errno.EDQUOT: "free space within your quota or choose another --destdir, then re-run: finished stages are kept",
    errno.EFBIG: "the file outgrew a size limit (ulimit -f); raise it or choose another --destdir, then re-run",
    errno.EACCES: "make the folder writable or choose another --destdir",
    errno.EPERM: "make the folder writable or choose another --destdir",
    errno.EROFS: "the file system is read-only: choose another --destdir",
}


def stage_io_error(stage: str, error: OSError, destdir: Path) -> TokenmillError:
    """An operating-system failure inside ``stage`` (a full disk, an unwritable folder) as one error line that
    names the stage, the file (or the folder written to when the system names none) and the fix."""
    fix = _FIXES.get(error.errno or 0)
    where = error.filename or (f"writing in {destdir}" if fix else None)  # a write failure names the folder
    return TokenmillError(f"stage {stage}: {f'{where}: ' if where else ''}{error.strerror or error}; "
                          f"{fix or 'check the path or the connection and re-run: finished stages are kept'}")


class TaskedStage(Stage):
    """A stage that may run as tasks (see the module's docstring)."""

    def plan(self, ctx: RunContext) -> TaskSet:
        raise NotImplementedError

    def run_task(self, ctx: RunContext, index: int, workers: int) -> dict[str, Any]:
        raise NotImplementedError
