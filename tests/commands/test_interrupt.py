"""Ctrl-C during ``prepare``'s longest native call, SentencePiece training: the run stops at once with exit
status 130 (as a shell reports an interrupted command) and leaves no model that looks finished."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
pytestmark = pytest.mark.serial  # times how soon Ctrl-C takes effect: in the serial part (tests/conftest.py)


def _corpus(path: Path, lines: int, seed: int) -> None:
    """Text whose SentencePiece model takes tens of seconds to train on two cores (many distinct words)."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
             for _ in range(30_000)]
    path.write_text("".join(" ".join(rng.choices(words, k=20)) + "\n" for _ in range(lines)), encoding="utf-8")


def test_ctrl_c_during_sentencepiece_training_exits_130_at_once(tmp_path):
    _corpus(tmp_path / "train.en", 100_000, 1)
    _corpus(tmp_path / "train.de", 100_000, 2)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "tokenmill", "prepare", "--trainpref", str(tmp_path / "train"),
               "--source-lang", "en", "--target-lang", "de", "--destdir", str(out), "--vocab-size", "8000"]
    run = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(SRC)},
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert run.stderr is not None
    seen = []
    for line in run.stderr:  # the sample is drawn: training starts next
        seen.append(line)
        if "sampled" in line:
            break
    else:
        raise AssertionError("prepare ended before training: " + "".join(seen))
    time.sleep(1.0)  # inside the trainer's C++ by now
    asked = time.monotonic()
    run.send_signal(signal.SIGINT)
    rest = run.stderr.read()
    status = run.wait(timeout=60)
    waited = time.monotonic() - asked
    assert status == 130, "".join(seen) + rest
    assert "Traceback" not in rest
    assert waited < 5, f"Ctrl-C took {waited:.1f} s"  # training alone takes tens of seconds
    assert not (out / "spm.model").exists() and not (out / "manifest.json").exists()
