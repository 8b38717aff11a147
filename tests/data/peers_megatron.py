"""Call megatron-core as an oracle from the data tests, exchanging arrays as ``.npy`` files.

Where megatron-core comes from, first match wins:
1. ``import megatron.core`` works in this interpreter: jobs run in-process (CI installs it there);
2. :func:`tests.peers.peer_python` finds an interpreter (``TOKENMILL_MEGATRON_PYTHON``, or the
   ``.peers/megatron`` venv that ``scripts/setup_peers.sh`` makes and CI uses): jobs run in a subprocess of it;
3. otherwise the calling test is skipped with the reason.

A megatron-core import costs seconds, so a test module batches all its jobs into one call, and the peer
interpreter is started once per test process: it imports the oracle and megatron-core once and runs each
module's batch when asked (:func:`tests.peers.peer_server`), as the in-process runner does.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tests.peers import peer_python, peer_server

ORACLE = Path(__file__).with_name("megatron_oracle.py")
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
        peer_server(runner, ORACLE, "run").run(self.workdir, timeout=900)
        self.results = json.loads((self.workdir / "result.json").read_text())
        return self.results

    def get(self, job_id: str, name: str) -> np.ndarray:
        """An array the oracle produced for job ``job_id``."""
        return np.load(self.workdir / f"{job_id}.{name}.npy")
