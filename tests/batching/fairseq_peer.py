"""Run :mod:`tests.batching.fairseq_oracle` in fairseq's interpreter, exchanging ``.npy`` files.

The interpreter: ``$TOKENMILL_FAIRSEQ_PYTHON``, else the repository's ``.peers/fairseq`` venv (see
tests/peers.py); tests skip with the reason when none
exists. A fairseq import costs seconds, so a test module sends all its jobs in one call, to one fairseq
interpreter per test process (:func:`tests.peers.peer_server`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.peers import peer_python, peer_server

ORACLE = Path(__file__).with_name("fairseq_oracle.py")


def fairseq_python() -> str | None:
    """The interpreter with fairseq installed, or None."""
    return peer_python("fairseq")


def require_fairseq() -> str:
    python = fairseq_python()
    if python is None:
        pytest.skip("fairseq peer not installed: set TOKENMILL_FAIRSEQ_PYTHON (see shared PEERS notes)")
    return python


def run_jobs(workdir: Path, jobs: list[dict], python: str | None = None) -> dict:
    """Run ``jobs`` in fairseq; returns result.json (arrays are left in ``workdir``)."""
    python = python or require_fairseq()
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "request.json").write_text(json.dumps(jobs))
    peer_server(python, ORACLE, "main").run(workdir, timeout=900)  # fairseq imported once per test process
    return json.loads((workdir / "result.json").read_text())


def split_batches(flat: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    """Inverse of the oracle's flattening."""
    return np.split(flat, np.cumsum(lengths)[:-1]) if len(lengths) else []
