"""The report counts tokens by the ids it sees, never by a size a file declares."""

from __future__ import annotations

import json
import shutil
import tracemalloc

import numpy as np

from tokenmill.report import ReportOptions, gather
from tokenmill.report.corpus import side_numbers
from tokenmill.store import IndexedDataset, IndexedWriter


def test_a_huge_declared_vocabulary_or_id_allocates_nothing_of_its_size(tmp_path):
    """set['stores'][...]['vocab_size']=10**12 in manifest.json: `tokenmill report` allocated a 7 TiB array
    (np.zeros(vocab_size)); an int32 store holding id 2**31 - 1 made it allocate 16 GiB (np.bincount)."""
    prefix = tmp_path / "train.en"
    with IndexedWriter(prefix, dtype=np.int32) as writer:
        for item in ([5, 6, 2], [2**31 - 1, 5, 2], [7, 2]):
            writer.add_item(np.array(item))
    store = IndexedDataset(prefix)
    tracemalloc.start()
    numbers, _ = side_numbers([store], None, 10**12, {2}, 1000, np.random.default_rng(0))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20
    assert numbers["vocab_size"] == 10**12 and numbers["unused"] == 10**12 - 5
    assert [(t["id"], t["count"]) for t in numbers["top_tokens"]] == [(5, 2), (6, 1), (7, 1), (2**31 - 1, 1)]


def test_sampled_counts_are_the_counts_of_the_sampled_items(tmp_path):
    """With a budget below the store's tokens, the counts are those of the items the seeded sample draws."""
    prefix = tmp_path / "train.en"
    items = [np.array([4 + i % 7, 4 + i % 3, 2]) for i in range(200)]
    with IndexedWriter(prefix, vocab_size=20) as writer:
        for item in items:
            writer.add_item(item)
    store = IndexedDataset(prefix)
    numbers, _ = side_numbers([store], None, 20, set(), 90, np.random.default_rng(5))
    drawn = np.sort(np.random.default_rng(5).choice(200, size=30, replace=False))
    ids, counts = np.unique(np.concatenate([items[i] for i in drawn]), return_counts=True)
    expected = sorted(zip(ids.tolist(), counts.tolist(), strict=True), key=lambda pair: (-pair[1], pair[0]))
    assert [(t["id"], t["count"]) for t in numbers["top_tokens"]] == expected[: len(numbers["top_tokens"])]
    assert numbers["sampled_tokens"] == 90 and not numbers["sample_exact"]
    assert numbers["unused"] == 20 - len(ids)


def test_a_count_of_the_wrong_type_in_the_manifest_is_shown_not_fatal(survive_seeds, tmp_path):
    """set['stores'][...]['items']='x' in manifest.json: `tokenmill report` died with int()'s ValueError."""
    directory = tmp_path / "pair"
    shutil.copytree(survive_seeds.pair, directory)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["stores"]["train.en-de.en"]["items"] = "x"
    (directory / "manifest.json").write_text(json.dumps(manifest))
    numbers = gather(directory, ReportOptions(max_tokens=256, world_size=1, seq_length=64))
    checks = [check for part in numbers["parts"] for check in part["checks"]]
    assert "en: stores hold 60 items / 420 tokens, manifest lists 'x' / 420" in checks
