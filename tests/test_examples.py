"""The examples the README points to run end to end (in a temporary folder)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the scripts call `python` and `tokenmill`: take this interpreter's (and its scripts folder) first
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def run_example(*args: str) -> str:
    done = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_packed_lm_example_prints_rows_with_document_boundaries(tmp_path):
    out = run_example("examples/packed_lm.py", str(tmp_path / "lm"))
    assert out.startswith("40 documents,")
    rows = [line for line in out.splitlines() if line.startswith("row ")]
    assert len(rows) == 3
    bounds = [int(x) for x in out.split("cu_seqlens of the 3 rows flattened: [")[1].split("]")[0].split(", ")]
    assert bounds[0] == 0 and bounds[-1] == 3 * 32 and bounds == sorted(bounds)
    assert {0, 32, 64} <= set(bounds), "every row starts a new segment"


def test_multilingual_example_runs_end_to_end(tmp_path):
    done = subprocess.run(["bash", "examples/multilingual.sh", str(tmp_path / "raw"), str(tmp_path / "bin")],
                          cwd=REPO, capture_output=True, text=True, timeout=600, env=ENV)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "5 directions" in out and "eng_Latn-hin_Deva" in out and "epochs over data" in out
    assert "resumed stream equals the uninterrupted one: True" in out
    steps = out.split("steps per rank: [")[1].split("]")[0].split(", ")
    assert len(set(steps)) == 1, "both ranks run the same number of steps"
    assert "__hin_Deva__" in out, "the decoder-side language tag is in the target rows"
