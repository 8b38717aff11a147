"""The local engine's tasks in processes of their own, so the coordinator keeps none of their memory.

A task makes millions of short-lived objects (lines as Python strings, per-chunk arrays). Run inside the
coordinator, what the allocators keep after it (pymalloc arenas still holding one live object, glibc heap
not trimmed) stayed in the coordinator's resident memory and added up task after task: 40-50 MB more
after the first task of ``clean.train`` and a few MB per task after that, measured at 1M and 4M pairs.

:class:`TaskRunner` starts a helper, a fresh interpreter running :func:`serve`: one per run inside
:func:`one_helper_per_run` (what ``prepare()`` does: the interpreter's start-up, about a second of
importing, is paid once, not once per tasked stage), else one per tasked stage. For each task, the helper
forks a child from its own state, waits for it and reports how it ended. The child
runs the task, leaves its result in a JSON file and exits, so its memory goes back to the system. The
result is the task's record, or the error it raised: a :class:`~tokenmill.errors.TokenmillError` (or a
subclass in :data:`ERROR_TYPES`) is raised again in the coordinator with its message; any other
exception becomes an error naming the task and the original type and message (no pickle between our
processes: nothing a task process writes is ever run as code).

The helper never encodes or trains anything itself, so a fork of it is safe for tokenizers that stop
using threads after a fork (Hugging Face's). Nothing imports the caller's ``__main__`` again, as
multiprocessing's spawn and forkserver would. Without ``fork``, the helper runs each task itself.

Protocol: one JSON line per task on the helper's stdin (``function`` as ``module:qualname``, ``args``,
``result`` path, where the child writes ``{"result": record}`` or ``{"error": {...}}``). One JSON line per
task back on the reply descriptor: ``{"code": N}`` or ``{"signal": N}``. The task's own stdout and stderr
are the coordinator's.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from tokenmill.errors import ConfigError, FormatError, TokenmillError
from tokenmill.prepare.tasks import TaskKilled
from tokenmill.store.remote import NoManifest, RemoteError

ERROR_TYPES: dict[str, type[BaseException]] = {
    error.__name__: error
    for error in (TokenmillError, FormatError, ConfigError, RemoteError, NoManifest, TaskKilled, KeyboardInterrupt)
}
"""The exceptions a task's error is raised again as, by name (the nearest in the error's class hierarchy);
Ctrl-C stays a KeyboardInterrupt, so a run stopped by hand keeps what it finished."""


def function_name(function: Callable[..., Any]) -> str:
    """``module:qualname`` of a module-level function (what the helper imports to run it)."""
    name = f"{function.__module__}:{function.__qualname__}"
    if "<locals>" in name or function.__module__ == "__main__":
        raise ValueError(f"{name}: a task function must be defined at the top level of an importable module")
    return name


def _resolve(name: str) -> Callable[..., Any]:
    module, _, qualname = name.partition(":")
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _outcome(function: Callable[..., Any], args: list[Any]) -> bytes:
    """The JSON result of ``function(*args)``: ``{"result": ...}`` or ``{"error": ...}`` (:func:`_error`)."""
    try:
        return json.dumps({"result": function(*args)}).encode()
    except BaseException as error:  # handed to the coordinator, which raises it
        return json.dumps({"error": _error(error, traceback.format_exc())}).encode()


def _error(error: BaseException, trace: str) -> dict[str, Any]:
    """An exception as plain values: the :data:`ERROR_TYPES` entry it is raised again as (None: not one of
    ours), its own type, its message and where it was raised."""
    kind = type(error)
    known = next((cls.__name__ for cls in kind.__mro__ if ERROR_TYPES.get(cls.__name__) is cls), None)
    original = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    return {"type": known, "original": original, "message": str(error),
            "traceback": f"(in task process {os.getpid()})\n{trace}"}


def _raise(error: dict[str, Any], what: str) -> None:
    """Raise what :func:`_error` recorded: the same tokenmill error with its message, Ctrl-C as Ctrl-C,
    anything else as a :class:`~tokenmill.errors.TokenmillError` naming the task and the original."""
    kind = ERROR_TYPES.get(error.get("type") or "")
    raised = kind(error["message"]) if kind else TokenmillError(
        f"{what} failed: {error['original']}: {error['message']}")
    raised.add_note(error.get("traceback", ""))
    raise raised


def _write(path: Path, payload: bytes) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(payload)
    os.replace(partial, path)  # a task killed while writing leaves no result, not half of one


def _run_one(request: dict[str, Any]) -> dict[str, int]:
    """Run one task in a forked child (inline without fork); how it ended."""
    args, result = request["args"], Path(request["result"])
    try:
        function = _resolve(request["function"])
    except Exception as error:  # the coordinator raises it: the helper goes on
        failure = TokenmillError(f"cannot run {request['function']}: {error}")
        _write(result, json.dumps({"error": _error(failure, traceback.format_exc())}).encode())
        return {"code": 1}
    if not hasattr(os, "fork"):
        _write(result, _outcome(function, args))
        return {"code": 0}
    pid = os.fork()
    if pid == 0:  # the child: run, leave the result, exit without the helper's clean-up (whatever happens)
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C stops the task, not the helper
            _write(result, _outcome(function, args))
            code = 0
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return {"code": os.WEXITSTATUS(status)}


def serve(reply_fd: int, log_level: int) -> None:
    """The helper: run the tasks read from stdin one after another, a reply line for each. It ignores
    Ctrl-C (the task and the coordinator get it) and ends when the coordinator closes its stdin."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if log_level:
        logging.basicConfig(level=log_level, format="%(message)s", stream=sys.stderr)
    with open(reply_fd, "w", encoding="utf-8") as replies:
        for line in sys.stdin:
            replies.write(json.dumps(_run_one(json.loads(line))) + "\n")
            replies.flush()


_HELPER = "from tokenmill.prepare.task_process import serve; serve({fd}, {level})"


_RUN = threading.local()
"""This thread's run in progress: ``helper``, the :class:`TaskRunner` its tasked stages share (or None)."""


@contextlib.contextmanager
def one_helper_per_run() -> Iterator[None]:
    """Inside the block (one prepare run), every tasked stage's tasks fork from one helper, started at the
    first tasked stage and stopped when the block ends; a nested block joins the outer one's run."""
    if getattr(_RUN, "active", False):
        yield
        return
    _RUN.active, _RUN.helper = True, None
    try:
        yield
    finally:
        helper, _RUN.active, _RUN.helper = _RUN.helper, False, None
        if helper is not None:
            helper.close()


@contextlib.contextmanager
def task_runner() -> Iterator[TaskRunner]:
    """The run's helper inside :func:`one_helper_per_run` (started at the first call, started again if it
    died), else a helper of its own that stops when the block ends. A block left by an exception stops the
    helper, as a helper of its own would be (the next tasked stage, if any, starts a fresh one)."""
    if not getattr(_RUN, "active", False):
        with TaskRunner() as runner:
            yield runner
        return
    if _RUN.helper is not None and _RUN.helper.stopped:
        _RUN.helper.close()
        _RUN.helper = None
    if _RUN.helper is None:
        _RUN.helper = TaskRunner()
    try:
        yield _RUN.helper
    except BaseException:
        helper, _RUN.helper = _RUN.helper, None
        helper.close()
        raise


class TaskRunner:
    """The coordinator's side: a helper process that runs tasks (each in a fresh fork) one at a time."""

    def __init__(self) -> None:
        root = logging.getLogger()
        level = logging.getLogger("tokenmill.prepare").getEffectiveLevel() if root.handlers else 0
        self._folder = tempfile.TemporaryDirectory(prefix="tokenmill-tasks-")
        read_fd, write_fd = os.pipe()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _HELPER.format(fd=write_fd, level=level)],
                stdin=subprocess.PIPE, pass_fds=(write_fd,), text=True,
            )
        except BaseException:
            os.close(read_fd)
            self._folder.cleanup()
            raise
        finally:
            os.close(write_fd)
        self._replies = open(read_fd, encoding="utf-8")  # closed in close()
        self._count = 0

    def run(self, function: Callable[..., dict[str, Any]], call: tuple[Any, ...]) -> dict[str, Any]:
        """``function(*call)`` in a task process; its exception is raised here."""
        self._count += 1
        result = Path(self._folder.name) / f"{self._count}.json"
        request = {"function": function_name(function), "args": list(call), "result": str(result)}
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            reply = self._replies.readline()
        except BrokenPipeError:
            reply = ""
        what = f"task {call[1]} #{call[2]}" if len(call) > 2 else "task"
        if not reply:
            raise TaskKilled(f"{what}: the process running the tasks stopped (exit status "
                             f"{self._process.wait()}); re-run prepare to run the tasks left")
        ended = json.loads(reply)
        if "signal" in ended:
            name = signal.Signals(ended["signal"]).name if ended["signal"] in signal.valid_signals() else "?"
            raise TaskKilled(f"{what} was killed by signal {ended['signal']} ({name}); re-run prepare to run "
                             "it and the tasks left (the tasks that finished are not run again)")
        if not result.exists():
            raise TokenmillError(f"{what} ended with exit status {ended['code']} and no result; re-run prepare")
        outcome = json.loads(result.read_bytes())
        result.unlink()
        if "error" in outcome:
            _raise(outcome["error"], what)
        return outcome["result"]

    @property
    def stopped(self) -> bool:
        """Whether the helper has ended (a task of it killed it, or it was stopped)."""
        return self._process.poll() is not None

    def close(self) -> None:
        """Stop the helper (after its current task, if one runs) and remove its folder."""
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):  # the helper may be gone already
                self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._replies.close()
        self._folder.cleanup()

    def __enter__(self) -> TaskRunner:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


__all__ = ["ERROR_TYPES", "TaskRunner", "function_name", "one_helper_per_run", "serve", "task_runner"]
