"""A GPT or blend state is checked against its data's content, not only their lengths: two corpora whose
documents have the same lengths make the same sample index (and fingerprint), and a state saved on one used
to resume on the other. States now record each store's content identity (the manifest's checksums, or the
files' own); a state saved before they did has none and resumes as it did."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import tokenmill
from tokenmill.store import IndexedWriter, identity
from tokenmill.store.identity import content_id

CONFIG = tokenmill.GPTBatchConfig(global_batch_size=8, micro_batch_size=2)
SAMPLES = tokenmill.GPTDatasetConfig(seq_length=16, seed=1)


def write_store(prefix: Path, offset: int, documents: int = 120) -> Path:
    """``documents`` documents of lengths 3..22 (the same for every ``offset``), tokens shifted by ``offset``."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with IndexedWriter(prefix, layout="megatron", dtype=np.uint16) as writer:
        for d in range(documents):
            writer.add_item(np.arange(offset, offset + 3 + d % 20))
            writer.end_document()
    return prefix


def gpt(prefix: Path) -> tokenmill.GPTDataset:
    return tokenmill.GPTDataset(tokenmill.open(str(prefix)), SAMPLES, cache=False)


def saved_state(source) -> dict:
    iterator = tokenmill.batches(source, CONFIG, world_size=2)
    iterator.seek(1, 3)
    return json.loads(json.dumps(iterator.state_dict()))


def test_a_state_of_one_corpus_is_refused_on_another_with_the_same_lengths(tmp_path):
    first, other = gpt(write_store(tmp_path / "a" / "web", 0)), gpt(write_store(tmp_path / "b" / "web", 7))
    assert first.fingerprint() == other.fingerprint(), "the same lengths: the same sample index"
    state = saved_state(first)
    with pytest.raises(tokenmill.TokenmillError, match="same lengths but other tokens"):
        tokenmill.batches(other, CONFIG, world_size=2).load_state_dict(state)
    shutil.copytree(tmp_path / "a", tmp_path / "copy")  # the same tokens elsewhere: the same data
    for source in (first, gpt(tmp_path / "copy" / "web")):
        resumed = tokenmill.batches(source, CONFIG, world_size=2)
        resumed.load_state_dict(state)
        assert (resumed.epoch, resumed.step) == (1, 3)


def test_a_state_saved_before_contents_were_recorded_still_resumes(tmp_path):
    first, other = gpt(write_store(tmp_path / "a" / "web", 0)), gpt(write_store(tmp_path / "b" / "web", 7))
    state = saved_state(first)
    old = {k: v for k, v in state.items() if k != "contents"}  # what the release before wrote
    for source in (first, other):  # checked on the lengths, as it was when saved
        resumed = tokenmill.batches(source, CONFIG, world_size=2)
        resumed.load_state_dict(old)
        assert resumed.step == 3


def test_a_blend_member_over_other_tokens_is_refused_by_name_or_retired_with_the_flag(tmp_path):
    web, code = gpt(write_store(tmp_path / "a" / "web", 0)), gpt(write_store(tmp_path / "a" / "code", 50, 130))
    books = gpt(write_store(tmp_path / "a" / "books", 90, 140))
    swapped = gpt(write_store(tmp_path / "b" / "code", 60, 130))  # code's lengths, other tokens
    state = saved_state(tokenmill.BlendedDataset([web, code], [0.5, 0.5], size=64, cache=False))
    assert len(state["contents"]) == 2
    with pytest.raises(tokenmill.TokenmillError, match=r"blend member 2 \(GPT samples of .*b/code\) has the same "
                       r"lengths but other tokens.*allow_mix_change=True"):
        tokenmill.batches(tokenmill.BlendedDataset([web, swapped], [0.5, 0.5], size=64, cache=False), CONFIG,
                          world_size=2).load_state_dict(state)
    # with the flag, another corpus is another member: code retired (its counts kept), swapped new
    changed = tokenmill.batches(tokenmill.BlendedDataset([swapped, books], [0.5, 0.5], size=64, cache=False),
                                CONFIG, world_size=2)
    changed.load_state_dict(state, allow_mix_change=True)
    rows = {row["member"]: row["total_samples"] for row in changed.ledger()["sources"].values()}
    old = dict(zip(state["config"]["selection"]["datasets"], ["web", "code"], strict=True))
    assert set(rows) == {*old, *changed.dataset.mix["datasets"]}
    assert all(rows[k] > 0 for k in old) and all(rows[k] == 0 for k in changed.dataset.mix["datasets"])


def test_the_identity_is_the_manifests_checksums_or_the_same_computed(tmp_path, monkeypatch):
    sample = Path(__file__).resolve().parents[2] / "examples" / "sample" / "train"
    tokenmill.prepare(source_lang="en", trainpref=str(sample), destdir=str(tmp_path / "lm"), layout="megatron",
                      append_eod=True, vocab_size=200, progress=False)
    manifest = json.loads((tmp_path / "lm" / "manifest.json").read_text(encoding="utf-8"))
    listed = content_id(tmp_path / "lm" / "train")
    assert listed == f"{manifest['files']['train.bin']['xxh3_128']}:{manifest['files']['train.idx']['xxh3_128']}"
    (tmp_path / "out").mkdir()
    for suffix in (".bin", ".idx"):
        shutil.copy(tmp_path / "lm" / f"train{suffix}", tmp_path / "out" / f"train{suffix}")
    assert content_id(tmp_path / "out" / "train") == listed, "no manifest: the same checksums, computed"
    monkeypatch.setattr(identity, "WHOLE_FILE_LIMIT", 100)  # a "large" .bin: sampled blocks
    a, b = write_store(tmp_path / "x" / "web", 0), write_store(tmp_path / "y" / "web", 7)
    assert content_id(a).startswith("sampled-") and content_id(a) != content_id(b)
