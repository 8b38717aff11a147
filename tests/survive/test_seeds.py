"""Every seed reads cleanly through every reader the survive tests use: a mutation test whose seed is already
refused would pass without testing anything."""

from __future__ import annotations

import json

import pytest

from tests.survive.harness import survived


def test_every_seed_reads_cleanly(survive_seeds, sandbox):
    s = survive_seeds
    digest = sandbox.call("seed_digest", directory=str(s.pair))["digest"]
    calls = [
        ("store", {"prefix": str(s.pair / "train.en-de.en")}), ("store", {"prefix": str(s.lm / "train")}),
        ("gpt", {"prefix": str(s.lm / "train")}),
        ("open", {"directory": str(s.pair), "seed_digest": digest, "data_changed": True}),
        ("verify", {"directory": str(s.pair)}), ("cli", {"args": ["verify", str(s.pair)]}),
        ("tokenizer", {"backend": "sentencepiece", "path": str(s.spm)}),
        ("tokenizer", {"backend": "hf", "path": str(s.tokenizer_json)}), ("bpe_ranks", {"path": str(s.tokenizer_json)}),
        ("tokenizer", {"backend": "tiktoken", "path": str(s.tiktoken)}),
        ("tokenizer", {"backend": "t2t-subword", "path": str(s.subwords)}),
        ("dictionary", {"path": str(s.pair / "dict.en.txt")}), ("saved_tokenizer", {"directory": str(s.lm)}),
        ("config", {"path": str(s.config)}),
        ("resume", {"pair": str(s.pair), "state": json.loads(s.state.read_text())}),
    ]
    for reader, args in calls:
        answer = sandbox.call(reader, **args)
        assert answer["status"] == "ok" and not answer["violations"], (reader, answer)
    assert sandbox.call("verify", directory=str(s.pair))["problems"] == 0
    assert sandbox.call("cli", args=["verify", str(s.pair)])["code"] in (0, None)


def test_the_sandbox_sees_crashes_hangs_and_huge_allocations(sandbox):
    with pytest.raises(AssertionError, match="peak allocation"):
        survived(sandbox.call("misbehave", how="allocate"), [])
    assert sandbox.call("misbehave", how="crash")["status"] == "crash"
    timeout, sandbox.timeout = sandbox.timeout, 2
    try:
        assert sandbox.call("misbehave", how="hang")["status"] == "hang"
    finally:
        sandbox.timeout = timeout
