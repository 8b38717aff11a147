"""Stores and .npy arrays read front to back in blocks without a memory map: the same values as the
mapped reader and np.load, and a damaged file is refused."""

from __future__ import annotations

import numpy as np
import pytest

from tokenmill.errors import FormatError
from tokenmill.prepare.sequential import item_blocks, npy_blocks, save_npy_blocks, size_blocks, store_length
from tokenmill.store import IndexedDataset, IndexedWriter


@pytest.fixture(params=["fairseq", "megatron"])
def store(tmp_path, request):
    rng = np.random.default_rng(0)
    sizes = rng.integers(0, 9, size=1000)
    tokens = rng.integers(0, 30000, size=int(sizes.sum()))
    with IndexedWriter(tmp_path / "s", layout=request.param, dtype=np.uint16) as writer:
        writer.add_items(tokens, sizes, documents=request.param == "megatron")
    return tmp_path / "s", tokens, sizes


@pytest.mark.parametrize("items", [1, 7, 1000, 5000])
def test_blocks_hold_what_the_mapped_reader_reads(store, items):
    prefix, tokens, sizes = store
    blocks = list(item_blocks(prefix, items))
    assert [len(s) for _, s in blocks] == [min(items, 1000 - k) for k in range(0, 1000, items)]
    assert np.array_equal(np.concatenate([b for b, _ in blocks]), tokens)
    assert np.array_equal(np.concatenate([s for _, s in blocks]), sizes)
    assert blocks[0][0].dtype == np.uint16 and blocks[0][1].dtype == np.int64
    assert np.array_equal(np.concatenate(list(size_blocks(prefix, items))), IndexedDataset(prefix).sizes)
    assert store_length(prefix) == 1000


def test_a_bin_that_does_not_match_its_index_is_refused(store):
    prefix, _, _ = store
    binary = prefix.with_suffix(".bin")
    data = binary.read_bytes()
    binary.write_bytes(data + b"\0\0")
    with pytest.raises(FormatError, match="longer than its index"):
        list(item_blocks(prefix, 100))
    binary.write_bytes(data[:-2])
    with pytest.raises(FormatError, match="truncated"):
        list(item_blocks(prefix, 100))


@pytest.mark.parametrize("dtype", [bool, np.int64])
def test_npy_written_in_blocks_is_np_save_s_file(tmp_path, dtype):
    array = (np.random.default_rng(1).integers(0, 3, size=10_001) > 0).astype(dtype)
    save_npy_blocks(tmp_path / "b.npy", (array[k : k + 999] for k in range(0, len(array), 999)), len(array), dtype)
    np.save(tmp_path / "s.npy", array, allow_pickle=False)
    assert (tmp_path / "b.npy").read_bytes() == (tmp_path / "s.npy").read_bytes()
    assert np.array_equal(np.concatenate(list(npy_blocks(tmp_path / "b.npy", 1000))), array)


def test_an_npy_written_short_is_not_left_behind(tmp_path):
    with pytest.raises(ValueError, match="announced"):
        save_npy_blocks(tmp_path / "b.npy", [np.zeros(3, bool)], 4, np.dtype(bool))
    assert list(tmp_path.iterdir()) == []
