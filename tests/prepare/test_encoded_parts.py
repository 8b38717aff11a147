"""Encode tasks' parts stand in for the joined id store: counts summed (dropped items taken out), sizes
regrouped across parts, each part binarized alone; and the runs built on them give one process's bytes
with shards, joined dictionaries, thresholds, the Megatron layout and a killed binarize task."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus, write_jsonl
from tests.prepare.test_tasks import assert_same_output, output_files, settings_for, write_config
from tokenmill.prepare.encoded_parts import (
    COUNTS,
    IDS,
    UNKNOWN,
    IdCounts,
    item_token_counts,
    regrouped,
    summed_counts,
)
from tokenmill.store import IndexedWriter


def write_part(folder, items, table=None, vocab=10):
    """A part as an encode task leaves it: ids, their bincount and its unknown surfaces."""
    folder.mkdir(parents=True)
    counts = IdCounts(vocab)
    with IndexedWriter(folder / IDS, dtype=np.int32) as writer:
        for item in items:
            writer.add_item(item)
            counts.add(np.asarray(item, dtype=np.int32))
    counts.save(folder / COUNTS)
    (folder / UNKNOWN).write_text(json.dumps(table or {}))


def test_summed_counts_are_those_of_the_kept_items(tmp_path):
    first = [[1, 2, 2], [10, 3], [], [4, 11, 10]]  # 10, 11: the part's unknown surfaces
    second = [[10, 5], [1, 1, 1], [2, 10]]
    write_part(tmp_path / "a", first, {"©": [10, 2], "ß": [11, 1]})
    write_part(tmp_path / "b", second, {"ß": [10, 2]})
    keep = np.array([True, False, True, True, True, True, False])
    np.save(tmp_path / "keep.npy", keep)
    base, surfaces = summed_counts([tmp_path / "a", tmp_path / "b"], 10, tmp_path / "keep.npy")
    kept = [item for item, k in zip(first + second, keep, strict=True) if k]
    assert base.tolist() == np.bincount([t for item in kept for t in item if t < 10], minlength=10).tolist()
    assert surfaces == {"©": 1, "ß": 2}  # part a's 10 kept once; ß: 11 in a once, 10 in b's first item once
    everything, _ = summed_counts([tmp_path / "a", tmp_path / "b"], 10, None)
    assert everything.tolist() == np.bincount([t for item in first + second for t in item if t < 10],
                                              minlength=10).tolist()


def test_item_token_counts_reads_only_the_items_asked_for(tmp_path):
    items = [[3, 4], [], [5, 5, 5], [6], [7, 8, 9]]
    write_part(tmp_path / "p", items)
    got = item_token_counts(tmp_path / "p" / IDS, np.array([1, 2, 4]), 12)
    assert got.tolist() == np.bincount([5, 5, 5, 7, 8, 9], minlength=12).tolist()
    assert not item_token_counts(tmp_path / "p" / IDS, np.array([], dtype=np.int64), 12).any()


@pytest.mark.parametrize("sizes", [[5, 3, 9], [16], [1, 1, 1, 1, 1, 1, 1], [4, 4]])
def test_regrouped_blocks_have_the_fixed_size(sizes):
    blocks = [np.arange(n) + 100 * i for i, n in enumerate(sizes)]
    out = list(regrouped(iter(blocks), 4))
    assert np.concatenate(out).tolist() == np.concatenate(blocks).tolist()
    assert [len(b) for b in out[:-1]] == [4] * (len(out) - 1) and 0 < len(out[-1]) <= 4


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus"), pairs=1500)


@pytest.mark.parametrize("more", [
    {"shard_size": 700, "joined_dictionary": True},  # parts straddle the shard boundaries
    {"nwordssrc": 120, "thresholdtgt": 3, "layout": "megatron"},
])
def test_shards_dictionaries_and_layouts_match_one_process(corpus, tmp_path, more):
    plain = tokenmill.prepare(settings_for(corpus, tmp_path / "plain", **more), progress=False)
    tasked = tokenmill.prepare(settings_for(corpus, tmp_path / "tasks", tasks=3, **more), progress=False)
    assert len(tasked.tasks["binarize.train.en"]) == 3
    assert plain.splits["train"]["langs"] == tasked.splits["train"]["langs"]
    assert_same_output(tmp_path / "plain", tmp_path / "tasks")


def test_language_model_documents_megatron_names(tmp_path):
    """The tokenizer's own ids (no dictionary), end-of-document appended, Megatron's layout and names."""
    data = write_jsonl(tmp_path / "docs.jsonl", lines=900)
    settings = {"input": [str(data)], "tokenizer": "hf", "append_eod": True, "workers": 2, "vocab_size": 300,
                "leakage": "off"}
    for name, tasks in (("plain", 0), ("tasks", 3)):
        tokenmill.prepare({**settings, "output_prefix": str(tmp_path / name / "lm")}, tasks=tasks, progress=False)
    want, got = output_files(tmp_path / "plain"), output_files(tmp_path / "tasks")
    assert sorted(got) == sorted(want) and "lm_text_document.idx" in got
    assert [name for name in want if want[name] != got[name] and name != "manifest.json"] == []
    manifests = [json.loads(files["manifest.json"]) for files in (want, got)]
    for manifest in manifests:
        manifest["settings"].pop("output_prefix")  # names the folder
    assert manifests[0] == manifests[1]


def test_a_killed_binarize_task_is_rerun_alone_and_a_plain_rerun_reads_the_parts(corpus, tmp_path):
    more = {"shard_size": 500}
    tokenmill.prepare(settings_for(corpus, tmp_path / "plain", **more), progress=False)
    config = write_config(tmp_path / "run.yaml", settings_for(corpus, tmp_path / "bin", tasks=3, **more))
    run = [sys.executable, "-m", "tokenmill", "prepare", "-c", str(config), "-q", "--no-report"]
    killed = subprocess.run(run, capture_output=True, text=True,
                            env={**os.environ, "TOKENMILL_CRASH_AT": "binarize.train.en#1:midway"})
    assert killed.returncode == 2 and "task binarize.train.en #1 was killed" in killed.stderr
    assert subprocess.run(run, capture_output=True, text=True).returncode == 0
    rows = json.loads((tmp_path / "bin" / "manifest.json").read_text())["run"]["tasks"]
    assert [row["attempts"] for row in rows["binarize.train.en"]] == [1, 2, 1]
    assert "clean.train" not in rows and "encode.train.en" not in rows  # done before the kill: not run again
    assert_same_output(tmp_path / "plain", tmp_path / "bin")
    # a later run without tasks (a changed shard size) binarizes from the recorded parts
    again = tokenmill.prepare(settings_for(corpus, tmp_path / "bin", shard_size=400), progress=False)
    assert "encode.train.en" in again.skipped and "binarize.train.en" in again.ran
    tokenmill.prepare(settings_for(corpus, tmp_path / "plain", shard_size=400), progress=False)
    assert_same_output(tmp_path / "plain", tmp_path / "bin")
