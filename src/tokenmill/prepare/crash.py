"""Test hook: stop a real run with SIGKILL at a named point, to test that re-running finishes it.

``TOKENMILL_CRASH_AT=<point>`` kills the process there. Points are stage names (after the stage is
recorded), ``<stage>:before-record`` (outputs written, record not yet), ``<stage>:midway`` (inside a
stage, after its first chunk), ``<stage>#<task>:midway`` (inside one task) and
``publish:before-manifest``. With ``TOKENMILL_CRASH_ONCE=<file>`` only the first process to get there
dies (it creates the file first): a retried task (Ray) then runs through. Unset, nothing happens.
"""

from __future__ import annotations

import os
import signal


def crash_point(point: str) -> None:
    if os.environ.get("TOKENMILL_CRASH_AT") != point:
        return
    once = os.environ.get("TOKENMILL_CRASH_ONCE")
    if once:
        try:
            with open(once, "x"):
                pass
        except FileExistsError:
            return
    os.kill(os.getpid(), signal.SIGKILL)


__all__ = ["crash_point"]
