"""The real peers read what we write and we read what they write, in both layouts.

megatron-core runs in CI (scripts/setup_peers.sh megatron); fairseq with ``-m fairseq``
after ``bash scripts/setup_peers.sh fairseq``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.peers import run_peer
from tokenmill.store import IndexedDataset, IndexedWriter

ITEMS = [[5, 6, 7], [8], [], [9, 10, 11, 12, 4000], [70] * 33]
DOCUMENT_ENDS = [2, 3, 5]

MEGATRON_READER = """
from megatron.core.datasets.indexed_dataset import IndexedDataset
def read(prefix):
    ds = IndexedDataset(prefix, mmap=True)
    return {
        "sizes": ds.sequence_lengths.tolist(),
        "documents": ds.document_indices.tolist(),
        "dtype": str(ds.index.dtype.__name__ if hasattr(ds.index.dtype, "__name__") else ds.index.dtype),
        "items": [ds[i].tolist() for i in range(len(ds))],
    }
"""

MEGATRON_WRITER = """
import numpy as np, torch
from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder
def write(prefix, dtype, items, ends):
    builder = IndexedDatasetBuilder(prefix + ".bin", dtype=np.dtype(dtype).type)
    for i, item in enumerate(items, start=1):
        builder.add_item(torch.tensor(item, dtype=torch.int64))
        if i in ends:
            builder.end_document()
    builder.finalize(prefix + ".idx")
"""

FAIRSEQ_READER = """
from fairseq.data.indexed_dataset import MMapIndexedDataset
def read(prefix):
    ds = MMapIndexedDataset(prefix)
    return {
        "sizes": ds.sizes.tolist(),
        "dtype": str(ds._index.dtype.__name__ if hasattr(ds._index.dtype, "__name__") else ds._index.dtype),
        "items": [ds[i].tolist() for i in range(len(ds))],
    }
"""

FAIRSEQ_WRITER = """
import numpy as np, torch
from fairseq.data.indexed_dataset import MMapIndexedDatasetBuilder
def write(prefix, dtype, items, ends):
    builder = MMapIndexedDatasetBuilder(prefix + ".bin", dtype=np.dtype(dtype).type)
    for item in items:
        builder.add_item(torch.tensor(item, dtype=torch.int64))
    builder.finalize(prefix + ".idx")
"""

EVERY_JOB = """
out = {}
for job in PAYLOAD:
    write(job["theirs"], job["dtype"], job["items"], job["ends"])
    out[job["dtype"]] = read(job["ours"])
print("RESULT:" + json.dumps(out))
"""
"""One peer run does the work of every dtype (a peer's start imports torch: seconds each): it writes
``theirs`` and reads ``ours`` of each; the tests check each dtype's part."""

MEGATRON_READ = MEGATRON_READER + 'print("RESULT:" + json.dumps(read(PAYLOAD["prefix"])))\n'
DTYPES = ["uint16", "int32"]


def write_ours(prefix, layout, dtype):
    with IndexedWriter(prefix, layout=layout, dtype=dtype) as writer:
        for i, item in enumerate(ITEMS, start=1):
            writer.add_item(item)
            if i in DOCUMENT_ENDS:
                writer.end_document()


def peer_work(name: str, code: str, root: Path) -> tuple[Path, dict]:
    """Our files of each dtype under ``root/<dtype>/ours``, then one run of peer ``name`` that writes its own
    under ``root/<dtype>/theirs`` and reads ours; returns (root, what it read of each dtype)."""
    layout = "megatron" if name == "megatron" else "fairseq"
    jobs = []
    for dtype in DTYPES:
        (root / dtype).mkdir()
        write_ours(root / dtype / "ours", layout, dtype)
        jobs.append({"dtype": dtype, "ours": str(root / dtype / "ours"), "theirs": str(root / dtype / "theirs"),
                     "items": ITEMS, "ends": DOCUMENT_ENDS})
    return root, run_peer(name, code + EVERY_JOB, jobs)


@pytest.fixture(scope="module")
def megatron_work(tmp_path_factory) -> tuple[Path, dict]:
    return peer_work("megatron", MEGATRON_READER + MEGATRON_WRITER, tmp_path_factory.mktemp("megatron"))


@pytest.fixture(scope="module")
def fairseq_work(tmp_path_factory) -> tuple[Path, dict]:
    return peer_work("fairseq", FAIRSEQ_READER + FAIRSEQ_WRITER, tmp_path_factory.mktemp("fairseq"))


@pytest.mark.megatron
@pytest.mark.parametrize("dtype", DTYPES)
def test_megatron_reads_what_we_write(megatron_work, dtype):
    seen = megatron_work[1][dtype]
    assert seen["items"] == ITEMS
    assert seen["sizes"] == [len(x) for x in ITEMS]
    assert seen["documents"] == [0, *DOCUMENT_ENDS]
    assert dtype in seen["dtype"]


@pytest.mark.megatron
@pytest.mark.parametrize("dtype", DTYPES)
def test_we_read_what_megatron_writes_byte_exact(megatron_work, tmp_path, dtype):
    theirs_prefix = megatron_work[0] / dtype / "theirs"
    theirs = IndexedDataset(theirs_prefix)
    assert theirs.layout.value == "megatron" and theirs.dtype == np.dtype(dtype)
    assert [theirs[i].tolist() for i in range(len(theirs))] == ITEMS
    assert theirs.document_indices.tolist() == [0, *DOCUMENT_ENDS]
    write_ours(tmp_path / "ours", "megatron", dtype)
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"ours{suffix}").read_bytes() == theirs_prefix.with_suffix(suffix).read_bytes()


@pytest.mark.fairseq
@pytest.mark.parametrize("dtype", DTYPES)
def test_fairseq_reads_what_we_write(fairseq_work, dtype):
    seen = fairseq_work[1][dtype]
    assert seen["items"] == ITEMS
    assert seen["sizes"] == [len(x) for x in ITEMS]
    assert dtype in seen["dtype"]


@pytest.mark.fairseq
@pytest.mark.parametrize("dtype", DTYPES)
def test_we_read_what_fairseq_writes_byte_exact(fairseq_work, tmp_path, dtype):
    theirs_prefix = fairseq_work[0] / dtype / "theirs"
    theirs = IndexedDataset(theirs_prefix)
    assert theirs.layout.value == "fairseq" and theirs.dtype == np.dtype(dtype)
    assert [theirs[i].tolist() for i in range(len(theirs))] == ITEMS
    write_ours(tmp_path / "ours", "fairseq", dtype)
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"ours{suffix}").read_bytes() == theirs_prefix.with_suffix(suffix).read_bytes()


@pytest.mark.megatron
def test_megatron_cannot_read_the_fairseq_layout_but_we_read_both(tmp_path):
    """Why the layout choice matters: the peer fails on the other layout; we detect it."""
    write_ours(tmp_path / "fs", "fairseq", "uint16")
    with pytest.raises(AssertionError, match="peer megatron failed"):
        run_peer("megatron", MEGATRON_READ, {"prefix": str(tmp_path / "fs")})
    assert IndexedDataset(tmp_path / "fs").layout.value == "fairseq"
