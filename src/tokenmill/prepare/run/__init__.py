"""A prepare run: its context (:mod:`.context`: settings, :mod:`.folder`, records, :mod:`.summary`),
running tasks (:mod:`.tasking`), the loop over the stages (:mod:`.runner`) and the entry points
(:mod:`.entry`: ``prepare``, ``run_task``, ``write_slurm_script``, ``status``).

The entry points are loaded on first use (PEP 562): the stages import the context from this package, and
the entry points import the stages, so this package's own import loads neither.
"""

from __future__ import annotations

import importlib
from typing import Any

_ENTRY_POINTS = ("prepare", "run_task", "status", "write_slurm_script")


def __getattr__(name: str) -> Any:
    if name in _ENTRY_POINTS:
        return getattr(importlib.import_module("tokenmill.prepare.run.entry"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_ENTRY_POINTS)
