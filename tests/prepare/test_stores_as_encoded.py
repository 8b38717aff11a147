"""A run that stores the tokenizer's own ids (Megatron's flags) writes its stores while it encodes: no work-id
store is written and read back, and the stores are the bytes the two-pass path (encode, then binarize) writes,
sharded or not, with documents without ids; a store setting changed on a re-run writes the stores again, and a
run killed between the two stages' records finishes with the same bytes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.prepare.test_megatron_flags import documents, hf_model, megatron_run  # noqa: F401  (a fixture)
from tokenmill.prepare import build_config, prepare
from tokenmill.prepare.stages import binarize, encode
from tokenmill.store.manifest import verify_directory

STORES = ("lm_text_document.bin", "lm_text_document.idx")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """60 documents, 4 of them empty (documents without a sequence in Megatron's layout)."""
    docs = documents(60)
    for i in (0, 7, 8, 59):
        docs[i] = ""
    path = tmp_path_factory.mktemp("as-encoded") / "in.jsonl"
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    return path


def store_bytes(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("lm_text_document.*"))
            if ".work" not in p.parts and p.suffix in (".bin", ".idx")}


def work_id_stores(out: Path) -> list[Path]:
    return [p for p in (out / ".work").rglob("*.bin") if "out" not in p.relative_to(out / ".work").parts[:1]]


@pytest.mark.parametrize("shard_size", [0, 7])
def test_the_stores_written_as_encoded_equal_the_two_pass_stores(hf_model, corpus, tmp_path, monkeypatch,  # noqa: F811
                                                                 shard_size):
    settings = {**megatron_run(corpus, tmp_path / "one" / "lm", "HuggingFaceTokenizer", tokenizer_model=hf_model),
                "shard_size": shard_size}
    one = prepare(build_config(settings), progress=False)
    assert work_id_stores(tmp_path / "one") == []  # the stores were the encode stage's only id output
    for module in (binarize, encode):
        monkeypatch.setattr(module, "binarized_in_encode", lambda ctx, split: False)
    two = prepare(build_config({**settings, "output_prefix": str(tmp_path / "two" / "lm")}), progress=False)
    assert work_id_stores(tmp_path / "two") != []
    made = store_bytes(tmp_path / "one")
    assert (len(made) > 2) == bool(shard_size) and made == store_bytes(tmp_path / "two")
    assert one.splits["train"]["langs"] == two.splits["train"]["langs"]  # sentences, tokens, shards
    assert verify_directory(tmp_path / "one") == []


def test_a_changed_store_setting_writes_the_stores_again(hf_model, corpus, tmp_path):  # noqa: F811
    settings = megatron_run(corpus, tmp_path / "out" / "lm", "HuggingFaceTokenizer", tokenizer_model=hf_model)
    prepare(build_config(settings), progress=False)
    whole = store_bytes(tmp_path / "out")
    again = prepare(build_config(settings), progress=False)
    assert {"encode.train.text", "binarize.train.text"} <= set(again.skipped)
    sharded = prepare(build_config({**settings, "shard_size": 20}), progress=False)
    assert {"encode.train.text", "binarize.train.text"} <= set(sharded.ran)
    shards = store_bytes(tmp_path / "out")
    assert sorted(shards) == [f"shard{k:03d}/{name}" for k in range(3) for name in STORES]
    back = prepare(build_config(settings), progress=False)
    assert "encode.train.text" in back.ran and store_bytes(tmp_path / "out") == whole
    assert verify_directory(tmp_path / "out") == []


@pytest.mark.slow
def test_killed_between_the_two_records_then_rerun_gives_the_same_stores(hf_model, corpus, tmp_path):  # noqa: F811
    """The binarize stage takes the stores over from the encode stage's record when only that one was written."""
    settings = megatron_run(corpus, tmp_path / "whole" / "lm", "HuggingFaceTokenizer", tokenizer_model=hf_model)
    prepare(build_config(settings), progress=False)
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "tokenmill", "prepare", "-q", "--no-report", "--input", str(corpus),
               "--output-prefix", str(out / "lm"), "--json-keys", "text", "--tokenizer-type", "HuggingFaceTokenizer",
               "--tokenizer-model", str(hf_model), "--append-eod", "--workers", "2"]
    env = {**os.environ, "TOKENMILL_CRASH_AT": "binarize.train.text:before-record"}
    killed = subprocess.run(command, env=env, capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    env.pop("TOKENMILL_CRASH_AT")
    finished = subprocess.run(command, env=env, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    assert store_bytes(out) == store_bytes(tmp_path / "whole")
    assert verify_directory(out) == []
