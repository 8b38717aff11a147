"""The report's token sample is read with plain reads (no resident pages of the whole store): the same tokens
as a gather through the store's memory map, for both layouts and token widths."""

from __future__ import annotations

import numpy as np
import pytest

from tokenmill.report import corpus
from tokenmill.report.corpus import read_items, token_counts
from tokenmill.store import IndexedDataset, IndexedWriter


@pytest.mark.parametrize(("layout", "dtype"), [("megatron", np.uint16), ("fairseq", np.int32)])
def test_sampled_items_read_are_the_gathered_ones(tmp_path, layout, dtype):
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 40, size=3000)
    lengths[7] = 0
    flat = rng.integers(0, 30_000, size=int(lengths.sum())).astype(dtype)
    with IndexedWriter(tmp_path / "store", layout=layout, dtype=np.dtype(dtype)) as writer:
        writer.add_items(flat, lengths)
    store = IndexedDataset(tmp_path / "store")
    items = np.sort(rng.choice(len(store), size=500, replace=False))
    assert np.array_equal(read_items(store, items), store.gather(items)[0])
    assert len(read_items(store, np.zeros(0, dtype=np.int64))) == 0
    _ids, counts, counted, exact = token_counts([store], 2_000, np.random.default_rng(1))
    assert not exact and counted == counts.sum() > 1_000


@pytest.mark.parametrize(("gap", "span"), [(0, 1), (16, 64), (400, 1 << 20)])
def test_items_read_in_runs_are_the_gathered_ones(tmp_path, monkeypatch, gap, span):
    """Items grouped into reads (gaps dropped, long runs cut, a run of one item longer than the limit) give
    the same tokens as the gather: every grouping the limits allow."""
    monkeypatch.setattr(corpus, "READ_GAP_BYTES", gap)
    monkeypatch.setattr(corpus, "READ_SPAN_BYTES", span)
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 30, size=2000)
    lengths[[3, 4, 5]] = 0
    flat = rng.integers(0, 60_000, size=int(lengths.sum())).astype(np.int32)
    with IndexedWriter(tmp_path / "store", dtype=np.dtype(np.int32)) as writer:
        writer.add_items(flat, lengths)
    store = IndexedDataset(tmp_path / "store")
    for items in (np.arange(len(store)), np.sort(rng.choice(len(store), size=700, replace=False)),
                  np.array([3, 4, 5]), np.array([len(store) - 1])):
        assert np.array_equal(read_items(store, items), store.gather(items)[0])
