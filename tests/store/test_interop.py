"""The real peers read what we write and we read what they write, in both layouts.

megatron-core runs in CI (scripts/setup_peers.sh megatron); fairseq with ``-m fairseq``
after ``bash scripts/setup_peers.sh fairseq``.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.peers import run_peer
from tokenmill.store import IndexedDataset, IndexedWriter

ITEMS = [[5, 6, 7], [8], [], [9, 10, 11, 12, 4000], [70] * 33]
DOCUMENT_ENDS = [2, 3, 5]

MEGATRON_READ = """
from megatron.core.datasets.indexed_dataset import IndexedDataset
ds = IndexedDataset(PAYLOAD["prefix"], mmap=True)
print("RESULT:" + json.dumps({
    "sizes": ds.sequence_lengths.tolist(),
    "documents": ds.document_indices.tolist(),
    "dtype": str(ds.index.dtype.__name__ if hasattr(ds.index.dtype, "__name__") else ds.index.dtype),
    "items": [ds[i].tolist() for i in range(len(ds))],
}))
"""

MEGATRON_WRITE = """
import numpy as np, torch
from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder
builder = IndexedDatasetBuilder(PAYLOAD["prefix"] + ".bin", dtype=np.dtype(PAYLOAD["dtype"]).type)
for i, item in enumerate(PAYLOAD["items"], start=1):
    builder.add_item(torch.tensor(item, dtype=torch.int64))
    if i in PAYLOAD["ends"]:
        builder.end_document()
builder.finalize(PAYLOAD["prefix"] + ".idx")
print("RESULT:" + json.dumps("ok"))
"""

FAIRSEQ_READ = """
from fairseq.data.indexed_dataset import MMapIndexedDataset
ds = MMapIndexedDataset(PAYLOAD["prefix"])
print("RESULT:" + json.dumps({
    "sizes": ds.sizes.tolist(),
    "dtype": str(ds._index.dtype.__name__ if hasattr(ds._index.dtype, "__name__") else ds._index.dtype),
    "items": [ds[i].tolist() for i in range(len(ds))],
}))
"""

FAIRSEQ_WRITE = """
import numpy as np, torch
from fairseq.data.indexed_dataset import MMapIndexedDatasetBuilder
builder = MMapIndexedDatasetBuilder(PAYLOAD["prefix"] + ".bin", dtype=np.dtype(PAYLOAD["dtype"]).type)
for item in PAYLOAD["items"]:
    builder.add_item(torch.tensor(item, dtype=torch.int64))
builder.finalize(PAYLOAD["prefix"] + ".idx")
print("RESULT:" + json.dumps("ok"))
"""


def write_ours(prefix, layout, dtype):
    with IndexedWriter(prefix, layout=layout, dtype=dtype) as writer:
        for i, item in enumerate(ITEMS, start=1):
            writer.add_item(item)
            if i in DOCUMENT_ENDS:
                writer.end_document()


@pytest.mark.megatron
@pytest.mark.parametrize("dtype", ["uint16", "int32"])
def test_megatron_reads_what_we_write(tmp_path, dtype):
    write_ours(tmp_path / "ours", "megatron", dtype)
    seen = run_peer("megatron", MEGATRON_READ, {"prefix": str(tmp_path / "ours")})
    assert seen["items"] == ITEMS
    assert seen["sizes"] == [len(x) for x in ITEMS]
    assert seen["documents"] == [0, *DOCUMENT_ENDS]
    assert dtype in seen["dtype"]


@pytest.mark.megatron
@pytest.mark.parametrize("dtype", ["uint16", "int32"])
def test_we_read_what_megatron_writes_byte_exact(tmp_path, dtype):
    payload = {"prefix": str(tmp_path / "theirs"), "dtype": dtype, "items": ITEMS, "ends": DOCUMENT_ENDS}
    run_peer("megatron", MEGATRON_WRITE, payload)
    theirs = IndexedDataset(tmp_path / "theirs")
    assert theirs.layout.value == "megatron" and theirs.dtype == np.dtype(dtype)
    assert [theirs[i].tolist() for i in range(len(theirs))] == ITEMS
    assert theirs.document_indices.tolist() == [0, *DOCUMENT_ENDS]
    write_ours(tmp_path / "ours", "megatron", dtype)
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"ours{suffix}").read_bytes() == (tmp_path / f"theirs{suffix}").read_bytes()


@pytest.mark.fairseq
@pytest.mark.parametrize("dtype", ["uint16", "int32"])
def test_fairseq_reads_what_we_write(tmp_path, dtype):
    write_ours(tmp_path / "ours", "fairseq", dtype)
    seen = run_peer("fairseq", FAIRSEQ_READ, {"prefix": str(tmp_path / "ours")})
    assert seen["items"] == ITEMS
    assert seen["sizes"] == [len(x) for x in ITEMS]
    assert dtype in seen["dtype"]


@pytest.mark.fairseq
@pytest.mark.parametrize("dtype", ["uint16", "int32"])
def test_we_read_what_fairseq_writes_byte_exact(tmp_path, dtype):
    run_peer("fairseq", FAIRSEQ_WRITE, {"prefix": str(tmp_path / "theirs"), "dtype": dtype, "items": ITEMS})
    theirs = IndexedDataset(tmp_path / "theirs")
    assert theirs.layout.value == "fairseq" and theirs.dtype == np.dtype(dtype)
    assert [theirs[i].tolist() for i in range(len(theirs))] == ITEMS
    write_ours(tmp_path / "ours", "fairseq", dtype)
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"ours{suffix}").read_bytes() == (tmp_path / f"theirs{suffix}").read_bytes()


@pytest.mark.megatron
def test_megatron_cannot_read_the_fairseq_layout_but_we_read_both(tmp_path):
    """Why the layout choice matters: the peer fails on the other layout; we detect it."""
    write_ours(tmp_path / "fs", "fairseq", "uint16")
    with pytest.raises(AssertionError, match="peer megatron failed"):
        run_peer("megatron", MEGATRON_READ, {"prefix": str(tmp_path / "fs")})
    assert IndexedDataset(tmp_path / "fs").layout.value == "fairseq"
