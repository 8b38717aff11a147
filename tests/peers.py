"""Run code in a peer's own virtual environment (megatron-core, fairseq, tensor2tensor) as a test oracle.

Peers live in their own venvs because their pins clash with ours. ``scripts/setup_peers.sh`` makes
them under ``.peers/<name>``; ``TOKENMILL_<NAME>_PYTHON`` points at another interpreter. Tests that
need a missing peer skip with the reason, so a plain ``pytest`` works anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_PROBES = {
    "megatron": "import megatron.core.datasets.indexed_dataset",
    "fairseq": "import fairseq.data",
    "t2t": "from tensor2tensor.data_generators import text_encoder",
    "bicleaner": "from hardrules.hardrules import Hardrules",
    "opusfilter": "from opusfilter import filters",
    "datatrove": "from datatrove.pipeline.filters import GopherQualityFilter",
}


def peer_python(name: str) -> str | None:
    """The interpreter that has peer ``name`` installed, or None."""
    candidates = [os.environ.get(f"TOKENMILL_{name.upper()}_PYTHON"), str(REPO / ".peers" / name / "bin" / "python")]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return candidate
    if name == "megatron":
        try:
            import megatron.core.datasets.indexed_dataset  # noqa: F401
        except Exception:
            return None
        return sys.executable
    return None


def require_peer(name: str) -> str:
    """The peer's interpreter, or skip the calling test with a reason saying how to get it."""
    python = peer_python(name)
    if python is None:
        how = f"run `bash scripts/setup_peers.sh {name}` or set TOKENMILL_{name.upper()}_PYTHON"
        pytest.skip(f"peer {name} not installed: {how}")
    return python


def run_peer(name: str, code: str, payload: object = None, timeout: float = 600) -> object:
    """Run ``code`` in peer ``name``'s interpreter; it reads JSON ``payload`` from stdin as ``PAYLOAD``
    and reports by printing one JSON line prefixed with ``RESULT:``. Returns that decoded value."""
    python = require_peer(name)
    prelude = "import json, sys\nPAYLOAD = json.loads(sys.stdin.read())\n"
    env = dict(os.environ, PYTHONWARNINGS="ignore", TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run(
        [python, "-c", prelude + code],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=REPO,
    )
    if proc.returncode != 0:
        raise AssertionError(f"peer {name} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT:"):
            return json.loads(line[len("RESULT:") :])
    raise AssertionError(f"peer {name} printed no RESULT line:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
