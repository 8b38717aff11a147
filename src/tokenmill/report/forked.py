"""Work of the report done in a forked child process while the parent does other work.

The report's parts are pure functions of the directory and the settings, and most of them hold
the GIL (matplotlib's drawing, the batching planners' loops), so threads would not overlap them;
a fork does, on a second core, and starts in milliseconds with every module already imported.
The child sends its result back as JSON through a pipe (no pickle); the parent reads it when it
needs it. Where there is no second core or no ``fork`` (Windows, macOS's default), or the child
fails for any reason, the parent computes the same thing itself when asked for it: the result is
the same either way, only the wall time differs. A process that has loaded a library which minds
being forked (see :func:`can_fork`) does not fork either.

A fork copies only the forking thread: a lock another thread held at that moment (a progress bar's,
a thread pool's, a C library's) stays held in the child forever, and a child that waits on it would
leave the parent reading the pipe forever. So the parent reads with ``select`` and watches the
child's CPU time: a child that used none for :data:`STALL_SECONDS` while the parent waited is taken
as stuck, killed, and the parent computes the result itself.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from tokenmill._core.forking import FORK_SHY as _FORK_SHY

T = TypeVar("T")


def can_fork() -> bool:
    """True on Linux with more than one usable CPU, when nothing loaded here minds a fork: Ray or gRPC,
    or Hugging Face ``tokenizers`` without ``TOKENIZERS_PARALLELISM`` set (after its threads ran, a
    fork prints its warning on stderr and turns them off)."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    if any(name in sys.modules for name in _FORK_SHY):
        return False
    if "tokenizers" in sys.modules and "TOKENIZERS_PARALLELISM" not in os.environ:
        return False
    try:
        return len(os.sched_getaffinity(0)) > 1
    except OSError:
        return (os.cpu_count() or 1) > 1


STALL_SECONDS = 30.0
"""How long a child may use no CPU while asleep (neither runnable, waiting for a busy CPU, nor in disk
I/O) while the parent waits before it is taken as deadlocked; a working child uses CPU all the time,
so this only bounds a hang."""


def _progress(pid: int) -> tuple[bytes, int] | None:
    """The child's state letter and CPU ticks (user + system) from ``/proc``; None where unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return fields[0], int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        return None


def _read_unless_stuck(fd: int, pid: int) -> bytes | None:
    """Everything the child writes until it closes the pipe, or None when it stalls (see above)."""
    chunks: list[bytes] = []
    seen = _progress(pid)
    moved = time.monotonic()
    while True:
        ready, _, _ = select.select([fd], [], [], min(1.0, STALL_SECONDS))
        if ready:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            moved = time.monotonic()
            continue
        now, state = time.monotonic(), _progress(pid)
        if state is not None and (state != seen or state[0] in (b"R", b"D")):  # running, runnable or on disk
            seen, moved = state, now
        elif now - moved > STALL_SECONDS:
            return None


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"not JSON-able: {type(value).__name__}")


class Forked(Generic[T]):
    """``build()`` run in a forked child from construction on; :meth:`result` returns its value (JSON
    round-tripped). ``parallel=False``, no fork here, or a failed or stuck child: :meth:`result` calls
    ``build()`` itself (so its exceptions are raised in the parent, as without a child)."""

    def __init__(self, build: Callable[[], T], parallel: bool = True) -> None:
        self.build = build
        self._pid: int | None = None
        self._fd = -1
        if not (parallel and can_fork()):
            return
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the caller's code, never flushes the parent's buffers
            status = 1
            try:
                os.close(read_end)
                data = json.dumps(build(), default=_plain, ensure_ascii=False).encode("utf-8")
                view = memoryview(data)
                while view:
                    view = view[os.write(write_end, view) :]
                status = 0
            except BaseException:  # any failure: the parent computes it again and raises it there
                pass
            finally:
                os._exit(status)
        os.close(write_end)
        self._pid, self._fd = pid, read_end

    @property
    def forked(self) -> bool:
        """Whether a child is computing (or computed) the result."""
        return self._pid is not None

    def running(self) -> bool:
        """Whether the child is still computing (nothing written to the pipe yet); False without one."""
        if self._pid is None:
            return False
        ready, _, _ = select.select([self._fd], [], [], 0)
        return not ready

    def result(self) -> T:
        """The child's result, or ``build()`` computed here."""
        if self._pid is None:
            return self.build()
        pid, self._pid = self._pid, None
        data: bytes | None = None
        try:
            data = _read_unless_stuck(self._fd, pid)
        finally:
            os.close(self._fd)
            if data is None:  # stuck (or the parent was interrupted): the child is not waited for
                _kill(pid)
            _, status = os.waitpid(pid, 0)
        if status != 0 or not data:
            return self.build()
        return json.loads(data.decode("utf-8"))  # type: ignore[no-any-return]

    def cancel(self) -> None:
        """Stop a child whose result is no longer wanted (the parent failed)."""
        if self._pid is None:
            return
        pid, self._pid = self._pid, None
        _kill(pid)
        os.close(self._fd)
        os.waitpid(pid, 0)


def _kill(pid: int) -> None:
    """SIGKILL a child not yet reaped (it may have exited already)."""
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


__all__ = ["STALL_SECONDS", "Forked", "can_fork"]
