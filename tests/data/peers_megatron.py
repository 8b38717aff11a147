"""Call megatron-core as an oracle from the data tests, exchanging arrays as ``.npy`` files.

Where megatron-core comes from, first match wins:
1. ``import megatron.core`` works in this interpreter: jobs run in-process (CI installs it there);
2. :func:`tests.peers.peer_python` finds an interpreter (``TOKENMILL_MEGATRON_PYTHON``, or the
   ``.peers/megatron`` venv that ``scripts/setup_peers.sh`` makes and CI uses): jobs run in a subprocess of it;
3. otherwise the calling test is skipped with the reason.

A megatron-core import costs seconds, so a test module batches all its jobs into one call, and the peer
interpreter is started once per test process: it imports the oracle and megatron-core once and runs each
module's batch when asked (:class:`_OracleServer`), as the in-process runner does.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tests.peers import peer_python

ORACLE = Path(__file__).with_name("megatron_oracle.py")
_DONE = "tokenmill-megatron-oracle:"
_SERVE = f"""
import importlib.util, sys, traceback
spec = importlib.util.spec_from_file_location("tokenmill_megatron_oracle", sys.argv[1])
oracle = importlib.util.module_from_spec(spec)
spec.loader.exec_module(oracle)
for line in sys.stdin:
    try:
        oracle.run(line.strip())
        print("{_DONE}ok", flush=True)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        print("{_DONE}failed", flush=True)
"""


class _OracleServer:
    """The peer interpreter with the oracle imported: one request (a workdir) per line on its stdin, one line
    starting with ``_DONE`` back on its stdout; its stderr goes to a temporary file (named in a failure)."""

    def __init__(self, python: str) -> None:
        self.log = tempfile.TemporaryFile()
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        self.proc = subprocess.Popen([python, "-c", _SERVE, str(ORACLE)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        atexit.register(self.close)

    def run(self, workdir: Path, timeout: float) -> None:
        """Run the batch of ``workdir`` (its result.json written by the oracle); raises naming the peer's error."""
        self.proc.stdin.write(f"{workdir}\n")
        self.proc.stdin.flush()
        reply: list[str] = []
        reader = threading.Thread(target=self._read_reply, args=(reply,), daemon=True)
        reader.start()
        reader.join(timeout)
        if not reply or reply[-1] != "ok":
            self.close()
            why = ("it raised" if reply else f"no answer in {timeout:.0f} s" if reader.is_alive()
                   else f"exit {self.proc.returncode}")
            self.log.seek(0)
            tail = self.log.read().decode(errors="replace")[-4000:]
            raise AssertionError(f"megatron oracle failed ({why}):\n{tail}")

    def _read_reply(self, reply: list[str]) -> None:
        for line in self.proc.stdout:
            if line.startswith(_DONE):
                reply.append(line[len(_DONE):].strip())
                return

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_SERVERS: dict[str, _OracleServer] = {}


def _server(python: str) -> _OracleServer:
    """This process's oracle server in ``python`` (a new one if the last one failed)."""
    server = _SERVERS.get(python)
    if server is None or server.proc.poll() is not None:
        server = _SERVERS[python] = _OracleServer(python)
    return server


def _importable_here() -> bool:
    try:
        return importlib.util.find_spec("megatron.core") is not None
    except (ImportError, ValueError):
        return False


def megatron_runner() -> str | None:
    """``"in-process"``, a peer interpreter path, or None when megatron-core is nowhere."""
    if _importable_here():
        return "in-process"
    return peer_python("megatron")


def require_megatron() -> str:
    """The runner, or skip the calling test saying how to provide megatron-core."""
    runner = megatron_runner()
    if runner is None:
        pytest.skip(
            "megatron-core not available: run `bash scripts/setup_peers.sh megatron`, or set "
            "TOKENMILL_MEGATRON_PYTHON to an interpreter that has it"
        )
    return runner


@dataclass
class MegatronJobs:
    """A batch of oracle jobs written into ``workdir``; ``run()`` executes them all at once."""

    workdir: Path
    jobs: list[dict] = field(default_factory=list)
    results: dict = field(default_factory=dict)

    def array(self, name: str, value: np.ndarray) -> str:
        """Save an input array for the oracle; returns the file name to put in a job."""
        file_name = f"input.{name}.npy"
        np.save(self.workdir / file_name, np.asarray(value))
        return file_name

    def add(self, job_id: str, op: str, **params: object) -> str:
        self.jobs.append({"id": job_id, "op": op, **params})
        return job_id

    def run(self) -> dict:
        runner = require_megatron()
        (self.workdir / "request.json").write_text(json.dumps({"jobs": self.jobs}))
        if runner == "in-process":
            sys.path.insert(0, str(ORACLE.parent))
            try:
                spec = importlib.util.spec_from_file_location("tokenmill_megatron_oracle", ORACLE)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                self.results = module.run(self.workdir)
            finally:
                sys.path.remove(str(ORACLE.parent))
            return self.results
        _server(runner).run(self.workdir, timeout=900)
        self.results = json.loads((self.workdir / "result.json").read_text())
        return self.results

    def get(self, job_id: str, name: str) -> np.ndarray:
        """An array the oracle produced for job ``job_id``."""
        return np.load(self.workdir / f"{job_id}.{name}.npy")
