"""Long native calls that Ctrl-C can still stop within a fraction of a second.

Python runs its signal handlers only between bytecodes of the main thread, so a long C++ call made
from the main thread (SentencePiece's trainer runs for minutes) holds a Ctrl-C back until it returns.
:func:`interruptible` makes the call in a daemon thread instead and has the main thread wait for it in
short steps: a Ctrl-C raises :class:`KeyboardInterrupt` in the main thread at once, and the process
exits as a killed run does (the call's half-done output lives in memory or in temporary files only).
The abandoned call is still running native code then, with threads of its own: an ordinary interpreter exit
would run C++ static destructors under those threads (SentencePiece's trainer then aborts the process with
"terminate called without an active exception"), so the command line ends such a process with
:func:`os._exit` once it has printed its message (:func:`abandoned` says when). The call must release
the GIL to be worth it (SentencePiece's and Hugging Face ``tokenizers``' trainers do); otherwise the main
thread waits as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

POLL_SECONDS = 0.1
"""How often the waiting main thread lets Python run its signal handlers."""


_ABANDONED: list[str] = []
"""The calls :func:`interruptible` stopped waiting for (Ctrl-C). Their native threads may outlive the
Python thread that made the call (SentencePiece's trainer keeps its own pool), so the calls are counted,
not their Python threads."""


def abandoned() -> bool:
    """Whether :func:`interruptible` stopped waiting for a call (Ctrl-C) in this process."""
    return bool(_ABANDONED)


def interruptible(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` run in a daemon thread while this thread waits for it, Ctrl-C-able;
    returns its result or raises its exception here."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = call(*args, **kwargs)
        except BaseException as error:  # handed to the waiting thread, which raises it
            outcome["error"] = error

    worker = threading.Thread(target=work, name=f"tokenmill-{getattr(call, '__name__', 'call')}", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(POLL_SECONDS)
    except BaseException:  # Ctrl-C: the call is left running
        _ABANDONED.append(worker.name)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


__all__ = ["abandoned", "interruptible"]
