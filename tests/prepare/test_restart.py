"""A run killed with SIGKILL at any point, then re-run, gives byte-identical output."""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest
import yaml

from tokenmill.store.manifest import verify_directory

POINTS = [
    "clean.train:midway",
    "clean.train",
    "tokenizer:before-record",
    "encode.train.zh:midway",
    "encode.valid.en",
    "dictionary:before-record",
    "binarize.train.en:midway",
    "binarize.train.zh:before-record",
    "binarize.test.zh",
    "publish:before-manifest",
]


def run_prepare(config_path, crash_at=None):
    env = dict(os.environ)
    env.pop("TOKENMILL_CRASH_AT", None)
    if crash_at:
        env["TOKENMILL_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-m", "tokenmill", "prepare", "-c", str(config_path), "-q", "--no-report"],
                          env=env, capture_output=True, text=True)


def data_files(directory):
    return sorted(
        p.relative_to(directory) for p in directory.rglob("*") if p.is_file() and ".state" not in p.parts
    )


def same_content(expected, actual):
    """Byte-identical files; for manifest.json, all but its "run" record (stage wall times)."""
    if expected.name == "manifest.json":
        without_run = [{**json.loads(p.read_text(encoding="utf-8")), "run": None} for p in (expected, actual)]
        return without_run[0] == without_run[1]
    return filecmp.cmp(expected, actual, shallow=False)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted run's files, and the config every killed run uses (same destdir)."""
    from tests.prepare.conftest import SAMPLE

    root = tmp_path_factory.mktemp("restart")
    out = root / "out"
    settings = {
        "source_lang": "en", "target_lang": "zh", "trainpref": str(SAMPLE / "train"),
        "validpref": str(SAMPLE / "valid"), "testpref": str(SAMPLE / "test"), "vocab_size": 150,
        "character_coverage": 1.0, "chunk_lines": 50, "workers": 1, "shard_size": 200, "destdir": str(out),
    }
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump(settings), encoding="utf-8")
    assert run_prepare(config).returncode == 0
    snapshot = root / "uninterrupted"
    shutil.copytree(out, snapshot)
    shutil.rmtree(out)
    return snapshot, out, config


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_killed_then_rerun_is_byte_identical(reference, point):
    snapshot, out, config = reference
    shutil.rmtree(out, ignore_errors=True)
    killed = run_prepare(config, crash_at=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not (out / "manifest.json").exists(), "a killed run never leaves a finished-looking directory"
    finished = run_prepare(config)
    assert finished.returncode == 0, finished.stderr
    assert data_files(out) == data_files(snapshot)
    different = [str(p) for p in data_files(snapshot) if not same_content(snapshot / p, out / p)]
    assert different == [], different
    assert verify_directory(out) == []
