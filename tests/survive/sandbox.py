"""Run readers in a child interpreter, so that a crash (a segfault in a native library), a hang or a huge
allocation is seen as what it is instead of taking the test run down.

The child (``python -m tests.survive.sandbox``) reads one JSON request a line, ``{"reader": name, "args":
{...}}``, runs :data:`tests.survive.readers.READERS` ``[name](**args)`` under ``tracemalloc`` with an address
space limit, and answers one JSON line: ``{"status": "ok", ...what the reader returned}`` or ``{"status":
"error", "tokenmill": bool, "type", "message", "traceback"}``, with ``"peak"`` (bytes tracemalloc saw at the
top). :class:`Sandbox` is the parent's side: a dead child is answered ``{"status": "crash", "code": ...}``,
one that does not answer in time is killed and answered ``{"status": "hang"}``; either way the next request
starts a fresh child.
"""

from __future__ import annotations

import json
import os
import resource
import selectors
import subprocess
import sys
import tempfile
import traceback
import tracemalloc
from pathlib import Path
from typing import Any

ADDRESS_SPACE = 6 << 30
"""The child's address-space limit: a declared size allocated before it is checked fails here, not in swap."""
ROOT = Path(__file__).resolve().parents[2]
STARTUP = 120.0
"""Seconds the child may take to import its readers (the per-read timeout starts after that)."""


class Sandbox:
    """The parent's handle on one reader child (started on first use, restarted after a crash or a hang)."""

    def __init__(self, timeout: float = 20.0) -> None:
        self.timeout = timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.stderr = tempfile.TemporaryFile()  # a file, not a pipe: a chatty child must never block on a full pipe

    def _start(self) -> subprocess.Popen[bytes]:
        path = os.pathsep.join([str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")])
        env = dict(os.environ, PYTHONPATH=path, PYTHONFAULTHANDLER="1", TOKENIZERS_PARALLELISM="false",
                   RAYON_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MALLOC_ARENA_MAX="2")
        # one thread each: per-thread buffers and arenas of a many-core machine would eat the address-space limit
        process = subprocess.Popen([sys.executable, "-m", "tests.survive.sandbox"], cwd=ROOT, env=env,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)
        if (ready := self._answer(process, STARTUP)) != {"ready": True}:  # imports take seconds when loaded
            process.kill()
            raise RuntimeError(f"the sandbox child did not start: {ready}")
        return process

    def _answer(self, process: subprocess.Popen[bytes], timeout: float) -> dict[str, Any]:
        """The child's next answer line; ``{"status": "hang"}`` when it sends none within ``timeout`` seconds,
        ``{"status": "crash"}`` when its output ends (it died)."""
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                return {"status": "hang", "timeout": timeout}
        line = process.stdout.readline()
        if not line:
            return {"status": "crash", "code": process.wait(), "stderr": self._tail()}
        return json.loads(line)

    def _tail(self) -> str:
        self.stderr.seek(max(self.stderr.seek(0, os.SEEK_END) - 3000, 0))
        return self.stderr.read().decode(errors="replace")

    def call(self, reader: str, **args: Any) -> dict[str, Any]:
        """Run ``reader(**args)`` in the child; its answer (see the module)."""
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        process = self.process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps({"reader": reader, "args": args}).encode() + b"\n")
            process.stdin.flush()
        except BrokenPipeError:
            pass
        answer = self._answer(process, self.timeout)
        if answer.get("status") in ("hang", "crash"):
            self.close()
        return answer

    def close(self) -> None:
        """Stop the child (the next call starts a fresh one)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


def _serve() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    from tests.survive.readers import READERS
    from tokenmill.errors import TokenmillError

    out = sys.stdout
    sys.stdout = sys.stderr  # whatever a reader prints must not garble the answers
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        tracemalloc.start()
        try:
            answer = {"status": "ok", **READERS[request["reader"]](**request["args"])}
        except BaseException as error:  # every failure, SystemExit included, is reported to the parent
            answer = {"status": "error", "tokenmill": isinstance(error, TokenmillError),
                      "type": type(error).__name__, "message": str(error)[:2000],
                      "traceback": traceback.format_exc()[-4000:]}
        answer["peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        out.write(json.dumps(answer, default=str) + "\n")
        out.flush()


if __name__ == "__main__":
    _serve()
