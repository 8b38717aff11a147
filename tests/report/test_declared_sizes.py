"""The report counts tokens by the ids it sees, never by a size a file declares."""

from __future__ import annotations

import tracemalloc

import numpy as np

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
