"""A store checked and read block by block (no memory map): the same facts and errors as opening it, and
memory that does not grow with the store (what the manifest step and ``verify`` of a big run rely on)."""

from __future__ import annotations

import struct
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from tokenmill.errors import FormatError
from tokenmill.store import IndexedDataset, IndexedWriter
from tokenmill.store.format import MEGATRON_HEADER
from tokenmill.store.index_file import CHECK_BLOCK, check_store, token_chunks
from tokenmill.store.manifest import describe_store, verify_directory, write_manifest
from tokenmill.store.meaning import store_meaning


def write_store(prefix: Path, sizes: np.ndarray, *, layout: str = "fairseq", eos: int | None = None) -> np.ndarray:
    """A store of items of ``sizes`` (random ids below 900, ending with ``eos`` when given); its tokens."""
    tokens = np.random.default_rng(len(sizes)).integers(4, 900, size=int(sizes.sum())).astype(np.uint16)
    if eos is not None:
        tokens[np.cumsum(sizes)[sizes > 0] - 1] = eos
    with IndexedWriter(prefix, layout=layout, dtype=np.uint16) as writer:
        writer.add_items(tokens, sizes, documents=layout == "megatron")
    return tokens


@pytest.mark.parametrize("layout", ["fairseq", "megatron"])
@pytest.mark.parametrize("block", [1, 7, 1000, CHECK_BLOCK])
def test_the_block_check_finds_what_the_mapped_reader_holds(tmp_path, layout, block):
    sizes = np.random.default_rng(3).integers(0, 9, size=1000)
    write_store(tmp_path / "s", sizes, layout=layout)
    facts = check_store(tmp_path / "s", block=block)
    dataset = IndexedDataset(tmp_path / "s", check_pointers=False)
    assert (facts.layout, facts.dtype, facts.items, facts.tokens) == (dataset.layout, dataset.dtype, 1000,
                                                                       int(sizes.sum()))
    assert facts.documents == (1000 if layout == "megatron" else None)
    assert check_store(tmp_path / "s", pointers=False, block=block) == facts


def patch(path: Path, offset: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset : offset + len(data)] = data
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("block", [3, 1000])
def test_a_bad_pointer_or_size_in_a_later_block_is_named_by_its_item(tmp_path, block):
    sizes = np.full(100, 2)
    write_store(tmp_path / "s", sizes)
    idx = tmp_path / "s.idx"
    original = idx.read_bytes()
    header = 26
    patch(idx, header + 4 * 100 + 8 * 61, struct.pack("<q", 7))
    with pytest.raises(FormatError, match="pointer of item 61 is 7 but the sizes before it put it at byte 244"):
        check_store(tmp_path / "s", block=block)
    idx.write_bytes(original)
    patch(idx, header + 4 * 50, struct.pack("<i", -3))
    with pytest.raises(FormatError, match="item 50 has a negative size -3"):
        check_store(tmp_path / "s", block=block)


@pytest.mark.parametrize("block", [2, 1000])
def test_document_indices_that_go_back_across_blocks_are_refused(tmp_path, block):
    write_store(tmp_path / "d", np.full(6, 2), layout="megatron")  # document indices 0..6
    idx = tmp_path / "d.idx"
    patch(idx, MEGATRON_HEADER.size + 12 * 6 + 8 * 4, struct.pack("<q", 1))  # 0 1 2 3 1 5 6
    with pytest.raises(FormatError, match="document indices must start at 0, never decrease"):
        check_store(tmp_path / "d", block=block)


@pytest.mark.parametrize("chunk", [1, 5, 64, 1 << 18])
def test_token_chunks_give_every_token_and_each_item_s_last(tmp_path, chunk):
    sizes = np.random.default_rng(4).integers(0, 9, size=500)
    sizes[10] = 300  # longer than most chunks: its end falls many chunks after its start
    tokens = write_store(tmp_path / "s", sizes)
    read = list(token_chunks(tmp_path / "s", chunk=chunk, block=7))
    assert np.array_equal(np.concatenate([t for t, _ in read]), tokens)
    dataset = IndexedDataset(tmp_path / "s")
    assert np.array_equal(np.concatenate([e for _, e in read]), [item[-1] for item in dataset if len(item)])


def test_token_chunks_of_a_bin_shorter_than_its_index_is_an_error(tmp_path):
    write_store(tmp_path / "s", np.full(10, 3))
    binary = tmp_path / "s.bin"
    binary.write_bytes(binary.read_bytes()[:-2])
    with pytest.raises(FormatError, match="truncated"):
        list(token_chunks(tmp_path / "s"))


ITEMS = 4_000_000
"""Big enough that any array of one value per item (16 MB as int32, 32 MB as int64) dwarfs a block."""


@pytest.fixture(scope="module")
def big_directory(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("big")
    sizes = np.random.default_rng(5).integers(1, 4, size=ITEMS)
    write_store(directory / "train.en", sizes, eos=2)
    (directory / "dict.en.txt").write_text("".join(f"w{i} 1\n" for i in range(896)), encoding="utf-8")
    write_manifest(directory, meanings={"train.en": store_meaning("dict.en.txt", "fairseq", 900, 2, "</s>")})
    return directory


def traced_peak(function, *args) -> int:
    tracemalloc.start()
    try:
        function(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_checking_a_big_store_holds_blocks_not_the_store(big_directory):
    """The manifest's store check and verify (pointers, counts, every id, every item's last token) allocate
    a few blocks: a regression to one array over all items (the old pointer check held 4M-item int64
    temporaries) would be 32 MB or more here."""
    assert describe_store(big_directory / "train.en")["items"] == ITEMS
    limit = 12 << 20
    assert traced_peak(describe_store, big_directory / "train.en") < limit
    assert traced_peak(verify_directory, big_directory) < limit
    assert verify_directory(big_directory) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak RSS from /proc")
def test_opening_a_big_store_with_the_full_check_touches_no_map(big_directory):
    """Resident memory, not only allocations: the full check reads the index instead of faulting the
    maps in (the 48 MB .idx of 4M items stayed resident before, 12 bytes per item)."""

    def resident_kb(field: str) -> int:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith(field))

    with open("/proc/self/clear_refs", "w") as clear:  # the peak (VmHWM) starts again from the RSS now
        clear.write("5")
    before = resident_kb("VmRSS")
    dataset = IndexedDataset(big_directory / "train.en")
    assert len(dataset) == ITEMS
    assert resident_kb("VmHWM") - before < 24 << 10
