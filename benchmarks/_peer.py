"""Find a peer's interpreter (megatron-core, fairseq, ...) and drive benchmark workers in it.

Peers live in their own virtual environments because their pins clash with ours. A benchmark runs
its peer half as a subprocess of that interpreter and exchanges one JSON line per step with it
(timings are taken inside the worker, so interpreter start-up and imports never count). Only stdlib
here: worker scripts import this under the peer's interpreter too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULT_PREFIX = "RESULT:"
STEP_PREFIX = "STEP:"
READY = "READY"


def peer_python(name: str) -> str | None:
    """The interpreter that has peer ``name`` installed: ``$TOKENMILL_<NAME>_PYTHON``, else ``.peers/<name>``."""
    candidates = [os.environ.get(f"TOKENMILL_{name.upper()}_PYTHON"), str(REPO / ".peers" / name / "bin" / "python")]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return candidate
    return None


def how_to_get(name: str) -> str:
    """One line telling the user how to make peer ``name`` available."""
    return f"run `bash scripts/setup_peers.sh {name}` or set TOKENMILL_{name.upper()}_PYTHON to its interpreter"


class LockstepWorker:
    """A long-lived worker process driven one step at a time, so that several workers (tokenmill's and a
    peer's) can be interleaved step by step: on a shared, noisy machine every side then sees the same load.

    The worker prints ``READY`` once set up, answers each ``step N`` stdin line with one ``STEP:<json>``
    line, and answers ``finish`` with its ``RESULT:<json>`` line before exiting (see :func:`serve`).
    """

    def __init__(self, python: str, args: list[str], *, what: str) -> None:
        self.what = what
        self._stderr = tempfile.TemporaryFile(mode="w+")
        env = dict(os.environ, PYTHONWARNINGS="ignore", TF_CPP_MIN_LOG_LEVEL="3")
        self._proc = subprocess.Popen(
            [python, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env,
            cwd=REPO,
            bufsize=1,
        )
        self._expect(READY)

    def _expect(self, prefix: str) -> str:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.startswith(prefix):
                return line[len(prefix) :]
        self._proc.wait()
        self._stderr.seek(0)
        raise RuntimeError(f"{self.what} died (exit {self._proc.returncode}):\n{self._stderr.read()[-4000:]}")

    def _send(self, line: str) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(line + "\n")
        self._proc.stdin.flush()

    def step(self, n: int) -> Any:
        """Run step ``n`` in the worker and return what it reported."""
        self._send(f"step {n}")
        return json.loads(self._expect(STEP_PREFIX))

    def finish(self) -> Any:
        """Let the worker finish and return its final result."""
        self._send("finish")
        result = json.loads(self._expect(RESULT_PREFIX))
        self._proc.wait()
        self._stderr.close()
        return result

    def kill(self) -> None:
        """Stop the worker (on an error elsewhere)."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._stderr.close()


def serve(worker: Any) -> None:
    """The worker side of :class:`LockstepWorker`: ``worker.step(n)`` and ``worker.finish()`` return JSON-able
    values. Anything else the libraries print goes to stderr so it cannot be taken for a reply."""
    out = sys.stdout
    sys.stdout = sys.stderr
    out.write(READY + "\n")
    out.flush()
    for line in sys.stdin:
        command = line.split()
        if command[:1] == ["step"]:
            out.write(STEP_PREFIX + json.dumps(worker.step(int(command[1]))) + "\n")
            out.flush()
        elif command[:1] == ["finish"]:
            out.write(RESULT_PREFIX + json.dumps(worker.finish()) + "\n")
            out.flush()
            return
