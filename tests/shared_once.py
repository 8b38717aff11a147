"""Session fixtures built once per test run, also under pytest-xdist (whose workers are separate processes)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Path]) -> Path:
    """``build(folder)`` run once for the whole test run: under pytest-xdist the first worker to ask builds
    in the run's shared temporary folder, holding a file lock, and the others wait for it and reuse the
    result (pytest-xdist's recipe for session fixtures); in one process it is a plain ``mktemp``. The result
    must only be read (copy it to change it). A failed build is not recorded: the next worker tries again."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return build(tmp_path_factory.mktemp(name))
    shared = tmp_path_factory.getbasetemp().parent  # the run's folder; each worker's basetemp is below it
    folder, done = shared / f"shared-{name}", shared / f"shared-{name}.done"
    with FileLock(str(shared / f"shared-{name}.lock")):
        if not done.exists():
            if folder.exists():
                shutil.rmtree(folder)  # a build that failed half-way
            folder.mkdir()
            result = build(folder)
            done.write_text(str(result), encoding="utf-8")
        return Path(done.read_text(encoding="utf-8"))
