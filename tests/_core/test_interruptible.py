"""A long native call made through :func:`interruptible` returns its result, raises its error, and lets
Ctrl-C through at once."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from tokenmill._core import interruptible as interruptible_module
from tokenmill._core.interruptible import abandoned, interruptible

pytestmark = pytest.mark.serial  # times how soon Ctrl-C takes effect: in the serial part (tests/conftest.py)


def test_the_call_returns_its_result_and_raises_its_error():
    assert interruptible(divmod, 17, 5) == (3, 2)
    with pytest.raises(ZeroDivisionError):
        interruptible(divmod, 1, 0)


def test_ctrl_c_stops_the_wait_while_the_call_goes_on(monkeypatch):
    # Python's own Ctrl-C handler, whatever the test runner installed (pytest-xdist's workers ignore SIGINT)
    monkeypatch.setattr(interruptible_module, "_ABANDONED", [])  # this process's record, restored after
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        # time.sleep releases the GIL as SentencePiece's trainer does; a direct call would hold Ctrl-C for 30 s
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        started = time.monotonic()
        assert not abandoned()
        with pytest.raises(KeyboardInterrupt):
            interruptible(time.sleep, 30)
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 10  # stopped at the Ctrl-C, not at the end of the 30 s call
    assert abandoned(), "the command line then exits at once (os._exit) instead of running C++ destructors"
