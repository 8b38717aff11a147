"""Round trips through IndexedWriter and IndexedDataset in both layouts."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tokenmill.store import IndexedDataset, IndexedWriter, Layout, merge_stores, token_dtype
from tokenmill.store import writer as writer_module
from tokenmill.store.format import idx_size


def random_items(count: int, seed: int = 0, vocab: int = 1000) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, vocab, size=int(n)) for n in rng.integers(0, 40, size=count)]


def write(prefix, items, layout="fairseq", vocab_size=1000, docs_every=0):
    with IndexedWriter(prefix, layout=layout, vocab_size=vocab_size) as writer:
        for i, item in enumerate(items, start=1):
            writer.add_item(item)
            if docs_every and i % docs_every == 0:
                writer.end_document()
    return IndexedDataset(prefix)


@pytest.mark.parametrize("layout", ["fairseq", "megatron"])
def test_round_trip_keeps_every_item(tmp_path, layout):
    items = random_items(300)
    dataset = write(tmp_path / "train", items, layout=layout, docs_every=7)
    assert dataset.layout is Layout(layout)
    assert len(dataset) == 300
    assert dataset.sizes.tolist() == [len(x) for x in items]
    for i, item in enumerate(items):
        np.testing.assert_array_equal(dataset[i], item)
    assert dataset.num_tokens == sum(len(x) for x in items)
    documents = dataset.document_indices
    if layout == "megatron":
        assert documents.tolist() == list(range(0, 301, 7))
    else:
        assert documents is None
    num_docs = 0 if documents is None else len(documents)
    assert os.path.getsize(tmp_path / "train.idx") == idx_size(Layout(layout), 300, num_docs)


def test_dtype_follows_vocabulary_size(tmp_path):
    assert token_dtype(65499) == np.uint16
    assert token_dtype(65500) == np.int32
    small = write(tmp_path / "small", [[1, 2, 65498]], vocab_size=65499)
    large = write(tmp_path / "large", [[1, 2, 70000]], vocab_size=80000)
    assert small.dtype == np.uint16 and large.dtype == np.int32
    assert large[0].tolist() == [1, 2, 70000]


def test_writer_refuses_ids_its_dtype_cannot_hold(tmp_path):
    with pytest.raises(ValueError, match="uint16 holds"), IndexedWriter(tmp_path / "x", vocab_size=100) as writer:
        writer.add_item([1, 70000])
    with pytest.raises(ValueError, match="uint16 holds"), IndexedWriter(tmp_path / "y", vocab_size=100) as writer:
        writer.add_item([-1])
    assert not list(tmp_path.iterdir()), "a failed writer leaves no files behind"


def test_sizes_is_a_zero_copy_view_of_the_index(tmp_path):
    dataset = write(tmp_path / "d", random_items(50))
    assert not dataset.sizes.flags.owndata
    assert np.shares_memory(dataset.sizes, dataset._idx)


def test_add_items_equals_add_item_byte_for_byte(tmp_path):
    items = random_items(100, seed=3)
    write(tmp_path / "one", items)
    lengths = np.array([len(x) for x in items])
    with IndexedWriter(tmp_path / "many", vocab_size=1000) as writer:
        writer.add_items(np.concatenate(items), lengths)
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"one{suffix}").read_bytes() == (tmp_path / f"many{suffix}").read_bytes()


def test_gather_returns_flat_tokens_and_offsets(tmp_path):
    items = random_items(200, seed=5)
    dataset = write(tmp_path / "d", items)
    order = np.array([5, 0, 199, 5, -1, 17])
    flat, offsets = dataset.gather(order)
    assert offsets[0] == 0 and offsets[-1] == len(flat)
    for k, i in enumerate(order):
        np.testing.assert_array_equal(flat[offsets[k] : offsets[k + 1]], items[i])


@pytest.mark.parametrize("left_pad", [False, True])
def test_gather_padded_pads_to_the_longest_row_and_multiple(tmp_path, left_pad):
    items = [np.array([4, 5, 6]), np.array([7]), np.array([], dtype=np.int64), np.array([8, 9])]
    dataset = write(tmp_path / "d", items)
    matrix = dataset.gather_padded([0, 1, 2, 3], pad_id=1, left_pad=left_pad, pad_to_multiple=4)
    if left_pad:
        expected = [[1, 4, 5, 6], [1, 1, 1, 7], [1, 1, 1, 1], [1, 1, 8, 9]]
    else:
        expected = [[4, 5, 6, 1], [7, 1, 1, 1], [1, 1, 1, 1], [8, 9, 1, 1]]
    assert matrix.tolist() == expected


def test_get_reads_part_of_an_item(tmp_path):
    dataset = write(tmp_path / "d", [np.arange(10)])
    assert dataset.get(0, offset=3, length=4).tolist() == [3, 4, 5, 6]
    assert dataset.get(0, offset=8).tolist() == [8, 9]
    with pytest.raises(IndexError):
        dataset.get(1)


def test_empty_store_opens(tmp_path):
    dataset = write(tmp_path / "empty", [])
    assert len(dataset) == 0 and dataset.num_tokens == 0
    flat, offsets = dataset.gather([])
    assert len(flat) == 0 and offsets.tolist() == [0]


@pytest.mark.parametrize("layout", ["fairseq", "megatron"])
def test_merge_concatenates_shards(tmp_path, layout):
    parts = [random_items(30, seed=s) for s in range(3)]
    prefixes = [tmp_path / f"shard{s}" for s in range(3)]
    for prefix, items in zip(prefixes, parts, strict=True):
        write(prefix, items, layout=layout, docs_every=10)
    merged = merge_stores(prefixes, tmp_path / "all")
    everything = [x for part in parts for x in part]
    assert len(merged) == 90
    for i, item in enumerate(everything):
        np.testing.assert_array_equal(merged[i], item)
    if layout == "megatron":
        assert merged.document_indices.tolist() == list(range(0, 91, 10))
    direct = write(tmp_path / "direct", everything, layout=layout, docs_every=10)
    assert (tmp_path / "all.bin").read_bytes() == (tmp_path / "direct.bin").read_bytes()
    assert (tmp_path / "all.idx").read_bytes() == (tmp_path / "direct.idx").read_bytes()
    assert len(direct) == 90


def test_interrupted_writer_leaves_no_valid_looking_files(tmp_path):
    writer = IndexedWriter(tmp_path / "d", vocab_size=100)
    writer.add_item([1, 2, 3])
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names and all(".tmp-" in n for n in names), names
    writer.abort()
    assert not list(tmp_path.iterdir())


def test_rewrite_replaces_previous_files_atomically(tmp_path):
    write(tmp_path / "d", [[1, 2]])
    with pytest.raises(RuntimeError), IndexedWriter(tmp_path / "d", vocab_size=100) as writer:
        writer.add_item([7, 7, 7])
        raise RuntimeError("killed")
    assert IndexedDataset(tmp_path / "d")[0].tolist() == [1, 2], "the old store is intact"


@pytest.mark.parametrize("seed", range(4))
def test_gathers_equal_per_item_reads_for_random_batches(tmp_path, seed):
    """Both read paths (strided windows, and per-token positions near the end) give the same items."""
    rng = np.random.default_rng(seed)
    items = [rng.integers(0, 60000, size=int(n)) for n in rng.integers(0, 50, size=500)]
    items.append(rng.integers(0, 60000, size=120))  # a long last item: its window would leave the array
    dataset = write(tmp_path / "d", items, vocab_size=60000)
    for _ in range(20):
        batch = rng.integers(-len(items), len(items), size=int(rng.integers(1, 64)))
        if rng.random() < 0.3:
            batch[0] = len(items) - 1
        flat, offsets = dataset.gather(batch)
        expected = [items[i] for i in batch]
        assert [flat[offsets[k] : offsets[k + 1]].tolist() for k in range(len(batch))] == [x.tolist() for x in expected]
        for left in (False, True):
            matrix = dataset.gather_padded(batch, pad_id=1, left_pad=left, pad_to_multiple=8, dtype=np.int64)
            assert matrix.shape[1] % 8 == 0
            for row, item in zip(matrix, expected, strict=True):
                pad = matrix.shape[1] - len(item)
                assert row.tolist() == ([1] * pad + item.tolist() if left else item.tolist() + [1] * pad)


def test_sizes_spilled_to_disk_give_the_same_index(tmp_path, monkeypatch):
    """Past SPILL_ITEMS entries a writer keeps its sizes and document starts in a temporary file (memory
    stays flat): the files are byte-identical to an all-in-memory write, and no temporary is left."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 40, size=3000)
    flat = rng.integers(0, 30000, size=int(lengths.sum()))
    for layout in ("fairseq", "megatron"):
        outputs = {}
        for name, items in (("memory", 1 << 20), ("spilled", 97)):
            monkeypatch.setattr(writer_module, "SPILL_ITEMS", items)
            with IndexedWriter(tmp_path / f"{name}-{layout}", layout=layout, dtype=np.uint16) as out:
                out.add_items(flat, lengths, documents=True)
                out.add_item([1, 2, 3])
                out.end_document()
            outputs[name] = [(tmp_path / f"{name}-{layout}{ext}").read_bytes() for ext in (".idx", ".bin")]
        assert outputs["spilled"] == outputs["memory"]
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".bin"] * 4 + [".idx"] * 4


def test_add_documents_makes_an_item_without_ids_a_document_without_items(tmp_path):
    """Megatron's preprocess_data writes a document without ids as a document boundary and no sequence."""
    with IndexedWriter(tmp_path / "docs", layout="megatron", dtype=np.uint16) as writer:
        writer.add_documents(np.array([1, 2, 3, 4, 5, 6], dtype=np.int64), np.array([0, 2, 0, 0, 3, 1, 0]))
    store = IndexedDataset(tmp_path / "docs")
    assert [store[i].tolist() for i in range(len(store))] == [[1, 2], [3, 4, 5], [6]]
    assert store.document_indices.tolist() == [0, 0, 1, 1, 1, 2, 3, 3]
    with IndexedWriter(tmp_path / "one_by_one", layout="megatron", dtype=np.uint16) as writer:
        for item in ([], [1, 2], [], [], [3, 4, 5], [6], []):
            writer.add_items(np.array(item, dtype=np.int64), np.array([len(item)] if item else [], dtype=np.int64))
            writer.end_document()
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"docs{suffix}").read_bytes() == (tmp_path / f"one_by_one{suffix}").read_bytes()


def test_add_documents_of_groups_items_into_documents_as_megatron_cores_add_document(tmp_path):
    """Documents of several items each (sentences), one without any: the bytes of one add_document call per
    document (megatron-core's builder does the same: extend the lengths, append their count)."""
    with IndexedWriter(tmp_path / "many", layout="megatron", dtype=np.uint16) as writer:
        writer.add_documents_of(np.arange(1, 9), np.array([2, 1, 3, 2]), np.array([2, 0, 1, 1]))
    with IndexedWriter(tmp_path / "each", layout="megatron", dtype=np.uint16) as writer:
        for flat, lengths in (([1, 2, 3], [2, 1]), ([], []), ([4, 5, 6], [3]), ([7, 8], [2])):
            writer.add_document(np.array(flat, dtype=np.int64), np.array(lengths, dtype=np.int64))
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"many{suffix}").read_bytes() == (tmp_path / f"each{suffix}").read_bytes()
    assert IndexedDataset(tmp_path / "many").document_indices.tolist() == [0, 2, 2, 3, 4]
    with IndexedWriter(tmp_path / "bad", layout="megatron", dtype=np.uint16) as writer, \
            pytest.raises(ValueError, match="the documents hold 3 items; 2 were given"):
        writer.add_documents_of(np.arange(3), np.array([1, 2]), np.array([1, 2]))
