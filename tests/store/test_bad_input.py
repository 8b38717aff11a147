"""Every way a store can be broken gives one clear FormatError naming the file."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from tokenmill.errors import FormatError
from tokenmill.store import IndexedDataset, IndexedWriter


@pytest.fixture(params=["fairseq", "megatron"])
def store(tmp_path, request):
    prefix = tmp_path / "train.en"
    with IndexedWriter(prefix, layout=request.param, vocab_size=500) as writer:
        for n in (3, 5, 0, 7):
            writer.add_item(np.arange(n) + 4)
        writer.end_document()
    return prefix, request.param


def patch(path, offset, data):
    raw = bytearray(path.read_bytes())
    raw[offset : offset + len(data)] = data
    path.write_bytes(bytes(raw))


def expect_error(prefix, pattern):
    with pytest.raises(FormatError, match=pattern) as info:
        IndexedDataset(prefix)
    return str(info.value)


def test_truncated_bin(store):
    prefix, _ = store
    bin_file = prefix.with_suffix(".en.bin")
    bin_file.write_bytes(bin_file.read_bytes()[:-4])
    message = expect_error(prefix, "truncated")
    assert str(bin_file) in message


def test_bin_longer_than_index_says_they_do_not_belong(store):
    prefix, _ = store
    bin_file = prefix.with_suffix(".en.bin")
    bin_file.write_bytes(bin_file.read_bytes() + b"\0\0")
    expect_error(prefix, "do not belong together")


def test_truncated_idx(store):
    prefix, _ = store
    idx_file = prefix.with_suffix(".en.idx")
    idx_file.write_bytes(idx_file.read_bytes()[:-3])
    message = expect_error(prefix, "neither layout")
    assert str(idx_file) in message


def test_idx_shorter_than_a_header(store):
    prefix, _ = store
    prefix.with_suffix(".en.idx").write_bytes(b"MMIDIDX\0")
    expect_error(prefix, "shorter than any index header")


def test_wrong_magic(store):
    prefix, _ = store
    patch(prefix.with_suffix(".en.idx"), 0, b"TNTIDX\0\0\0")
    expect_error(prefix, "wrong magic")


def test_unsupported_version(store):
    prefix, _ = store
    patch(prefix.with_suffix(".en.idx"), 9, struct.pack("<Q", 2))
    expect_error(prefix, "version 2 is not supported")


def test_unknown_dtype_code(store):
    prefix, _ = store
    patch(prefix.with_suffix(".en.idx"), 17, bytes([42]))
    expect_error(prefix, "unknown dtype code 42")


def test_count_that_disagrees_with_the_file_size(store):
    prefix, _ = store
    patch(prefix.with_suffix(".en.idx"), 18, struct.pack("<Q", 10**12))
    expect_error(prefix, "neither layout")


def test_pointer_past_the_end(store):
    prefix, layout = store
    header = 26 if layout == "fairseq" else 34
    # last pointer (4 items: sizes 16 bytes, then pointers) set far beyond the .bin
    patch(prefix.with_suffix(".en.idx"), header + 16 + 3 * 8, struct.pack("<q", 10**9))
    expect_error(prefix, "sizes and pointers disagree")


def test_sizes_that_disagree_with_pointers(store):
    prefix, layout = store
    header = 26 if layout == "fairseq" else 34
    patch(prefix.with_suffix(".en.idx"), header, struct.pack("<i", 4))  # first size 3 -> 4
    expect_error(prefix, "sizes and pointers disagree")


def test_negative_size(store):
    prefix, layout = store
    header = 26 if layout == "fairseq" else 34
    patch(prefix.with_suffix(".en.idx"), header + 8, struct.pack("<i", -5))
    expect_error(prefix, "negative size")


def test_bin_without_idx(store):
    prefix, _ = store
    prefix.with_suffix(".en.idx").unlink()
    expect_error(prefix, "has no index")


def test_idx_without_bin(store):
    prefix, _ = store
    prefix.with_suffix(".en.bin").unlink()
    expect_error(prefix, "has no data file")


def test_nothing_there(tmp_path):
    with pytest.raises(FormatError, match="no token store"):
        IndexedDataset(tmp_path / "missing")


def test_garbled_document_indices(tmp_path):
    prefix = tmp_path / "docs"
    with IndexedWriter(prefix, layout="megatron", vocab_size=100) as writer:
        writer.add_item([1, 2])
        writer.end_document()
    idx_file = tmp_path / "docs.idx"
    patch(idx_file, len(idx_file.read_bytes()) - 8, struct.pack("<q", 99))
    expect_error(prefix, "document indices")
