"""Run code in a peer's own virtual environment (megatron-core, fairseq, tensor2tensor) as a test oracle.

Peers live in their own venvs because their pins clash with ours. ``scripts/setup_peers.sh`` makes
them under ``.peers/<name>``; ``TOKENMILL_<NAME>_PYTHON`` points at another interpreter. Tests that
need a missing peer skip with the reason, so a plain ``pytest`` works anywhere. An oracle script that
exchanges files through a work folder runs in one :func:`peer_server` per test process.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
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


_DONE = "tokenmill-peer-server:"
_SERVE = f"""
import importlib.util, sys, traceback
spec = importlib.util.spec_from_file_location("tokenmill_peer_oracle", sys.argv[1])
oracle = importlib.util.module_from_spec(spec)
spec.loader.exec_module(oracle)
serve = getattr(oracle, sys.argv[2])
for line in sys.stdin:
    try:
        serve(line.rstrip("\\n"))
        print("{_DONE}ok", flush=True)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        print("{_DONE}failed", flush=True)
"""


class PeerServer:
    """A peer interpreter that imported an oracle script once and calls its ``function(workdir)`` for each
    request: one workdir per line on its stdin, one line starting with ``_DONE`` back on its stdout. Its
    stderr goes to a temporary file, whose tail a failure shows."""

    def __init__(self, python: str, script: Path, function: str) -> None:
        self.log = tempfile.TemporaryFile()
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        self.proc = subprocess.Popen([python, "-c", _SERVE, str(script), function], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        atexit.register(self.close)

    def run(self, workdir: Path, timeout: float) -> None:
        """``function(workdir)`` in the peer; raises with the peer's traceback if it raised, died or hung."""
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
            raise AssertionError(f"peer oracle failed ({why}):\n{self.log.read().decode(errors='replace')[-4000:]}")

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


_SERVERS: dict[tuple[str, str, str], PeerServer] = {}


def peer_server(python: str, script: Path, function: str) -> PeerServer:
    """This test process's server of ``script``'s ``function`` in ``python``, started at the first call (and
    again after a failure): an oracle whose import costs seconds is imported once, not once per module."""
    key = (python, str(script), function)
    server = _SERVERS.get(key)
    if server is None or server.proc.poll() is not None:
        server = _SERVERS[key] = PeerServer(python, script, function)
    return server
