"""A store's ``.idx`` and ``.bin`` read front to back in blocks with plain file reads, never mapped.

Whole-store passes (checking every pointer, counting tokens, the dictionary's counts, binarize, ``verify``)
read through a memory map keep every page they touch resident until the map is dropped: 12 bytes per
item for the ``.idx`` (and the ``.bin`` itself), which at 800M items is gigabytes. Reading blocks with
``np.fromfile`` keeps one block in memory, whatever the item count. The header is parsed here too, so
that the mapped reader (:mod:`tokenmill.store.reader`) and these block readers check a file alike.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from tokenmill.errors import FormatError
from tokenmill.store.format import FAIRSEQ_HEADER, MAGIC, MEGATRON_HEADER, VERSION, Layout, idx_size

CHECK_BLOCK = 1 << 18
"""Items per block when checking an index: 3 MB read into 7 MB of buffers allocated once, whatever the store."""
TOKEN_CHUNK = 1 << 18
"""Tokens per read of a ``.bin`` in :func:`token_chunks` (with at most as many item ends)."""


def split_prefix(path: str | os.PathLike[str]) -> str:
    """Accept ``data/train.en``, ``data/train.en.bin`` or ``data/train.en.idx`` alike."""
    text = os.fspath(path)
    for suffix in (".bin", ".idx"):
        if text.endswith(suffix):
            return text[: -len(suffix)]
    return text


def read_header(idx_file: Path) -> tuple[Layout, np.dtype, int, int]:
    """Parse and check an ``.idx`` header; return (layout, dtype, num_items, num_doc_indices)."""
    file_size = idx_file.stat().st_size
    with open(idx_file, "rb") as handle:
        head = handle.read(MEGATRON_HEADER.size)
    if len(head) < FAIRSEQ_HEADER.size:
        raise FormatError(
            f"{idx_file}: only {file_size} bytes, shorter than any index header (26 bytes); "
            "the file is truncated — re-create it"
        )
    magic, version, code, num_items = FAIRSEQ_HEADER.unpack_from(head)
    if magic != MAGIC:
        raise FormatError(
            f"{idx_file}: wrong magic {magic!r} (expected {MAGIC!r}); this is not an indexed "
            "(MMIDIDX) token index — it may be a legacy fairseq 'cached' index or another file"
        )
    if version != VERSION:
        raise FormatError(f"{idx_file}: index version {version} is not supported (only {VERSION})")
    if file_size == idx_size(Layout.FAIRSEQ, num_items):
        layout, num_docs = Layout.FAIRSEQ, 0
    else:
        num_docs = struct.unpack_from("<Q", head, FAIRSEQ_HEADER.size)[0] if len(head) >= 34 else -1
        if num_docs < 0 or file_size != idx_size(Layout.MEGATRON, num_items, num_docs):
            raise FormatError(
                f"{idx_file}: {file_size} bytes match neither layout for the {num_items} items its header "
                f"declares (fairseq needs {idx_size(Layout.FAIRSEQ, num_items)} bytes, Megatron "
                "34 + 12*items + 8*documents); the index is truncated or garbled — re-create it"
            )
        layout = Layout.MEGATRON
    if code not in layout.codes:
        known = ", ".join(f"{c}={d}" for c, d in layout.codes.items())
        raise FormatError(f"{idx_file}: unknown dtype code {code} for the {layout.value} layout (known: {known})")
    return layout, layout.codes[code], num_items, num_docs


def store_files(prefix: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The ``.idx`` and ``.bin`` of the store at ``prefix``; an error naming what is missing."""
    base = split_prefix(prefix)
    idx, binary = Path(f"{base}.idx"), Path(f"{base}.bin")
    if not idx.exists():
        if binary.exists():
            raise FormatError(
                f"{binary} has no index: {idx} is missing (a writer was interrupted, "
                "or only the .bin was copied); re-run the job that wrote it or copy the .idx beside it"
            )
        raise FormatError(f"no token store at {base}: neither {idx} nor {binary} exists")
    if not binary.exists():
        raise FormatError(f"{idx} has no data file: {binary} is missing")
    return idx, binary


def store_length(prefix: str | os.PathLike[str]) -> int:
    """Items in the store at ``prefix`` (from its ``.idx`` header, which is checked)."""
    return read_header(Path(f"{split_prefix(prefix)}.idx"))[2]


def check_sizes(sizes: np.ndarray, idx: Path, start: int) -> None:
    """Refuse a block of sizes (items from ``start``) holding a negative one."""
    if len(sizes) and int(sizes.min()) < 0:
        bad = int(np.flatnonzero(sizes < 0)[0])
        raise FormatError(f"{idx}: item {start + bad} has a negative size {int(sizes[bad])}; garbled index")


def _sizes(handle: BinaryIO, idx: Path, start: int, count: int) -> np.ndarray:
    """Sizes of items ``[start, start + count)`` as int64, read from where ``handle`` is; none negative."""
    sizes = np.fromfile(handle, dtype="<i4", count=count).astype(np.int64)
    if len(sizes) != count:
        raise FormatError(f"{idx}: the sizes end at item {start + len(sizes)}, before the {count} asked for")
    check_sizes(sizes, idx, start)
    return sizes


def size_blocks(prefix: str | os.PathLike[str], items: int) -> Iterator[np.ndarray]:
    """The item sizes of a store (int64), ``items`` at a time."""
    idx = Path(f"{split_prefix(prefix)}.idx")
    layout, _, n, _ = read_header(idx)
    with open(idx, "rb") as handle:
        handle.seek(layout.header.size)
        for start in range(0, n, items):
            yield _sizes(handle, idx, start, min(items, n - start))


def item_blocks(prefix: str | os.PathLike[str], items: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(tokens in the store's dtype, int64 sizes) of ``items`` items at a time, in order; the ``.bin`` must
    hold exactly the tokens the sizes count (the check a full open makes, without the pointer scan)."""
    idx, binary = store_files(prefix)
    layout, dtype, n, _ = read_header(idx)
    with open(idx, "rb") as sizes_file, open(binary, "rb") as tokens:
        sizes_file.seek(layout.header.size)
        for start in range(0, n, items):
            sizes = _sizes(sizes_file, idx, start, min(items, n - start))
            count = int(sizes.sum())
            block = np.fromfile(tokens, dtype=dtype, count=count)
            if len(block) != count:
                raise FormatError(f"{binary}: truncated (its index counts more tokens); re-create it")
            yield block, sizes
        if tokens.tell() != os.fstat(tokens.fileno()).st_size:
            raise FormatError(f"{binary} is longer than its index {idx} describes; the two do not belong together")


@dataclass(frozen=True)
class StoreFacts:
    """What a full check of a store found: its layout, dtype and counts."""

    layout: Layout
    dtype: np.dtype
    items: int
    tokens: int
    documents: int | None
    """Megatron's document count (its document indices less one); None for the fairseq layout."""


def check_store(
    prefix: str | os.PathLike[str], *, pointers: bool = True, block: int = CHECK_BLOCK
) -> StoreFacts:
    """Check a store the way opening it does, block by block: header, sizes (none negative), every
    pointer against the sizes before it (``pointers``; else only the last one is read), the document
    indices and the ``.bin`` length. Memory is one block whatever the store's size; a bad file raises
    one :class:`~tokenmill.errors.FormatError` naming it."""
    idx, binary = store_files(prefix)
    layout, dtype, n, num_docs = read_header(idx)
    header, itemsize = layout.header.size, dtype.itemsize
    scan = _IndexScan(idx, min(block, max(n, 1)))
    tokens = 0
    with open(idx, "rb", buffering=0) as handle:
        for start in range(0, n, block):
            sizes = scan.sizes(handle, header + 4 * start, start, min(block, n - start))
            if pointers:
                scan.check_pointers(handle, header + 4 * n + 8 * start, start, tokens * itemsize, itemsize)
            tokens += int(sizes.sum())
        if n and not pointers:
            last = int(scan.read(handle, "<i8", header + 12 * n - 8, 1, "pointers")[0])
            if last < 0:
                raise FormatError(f"{idx}: negative pointer for the last item; garbled index")
            last_size = int(scan.read(handle, "<i4", header + 4 * (n - 1), 1, "sizes")[0])
            needed = last + last_size * itemsize
        else:
            needed = tokens * itemsize
        check_bin_length(binary, needed)
        if layout is Layout.MEGATRON:
            check_documents(idx, (scan.read(handle, "<i8", header + 12 * n + 8 * start, min(block, num_docs - start),
                                            "document indices") for start in range(0, num_docs, block)), n)
    return StoreFacts(layout, dtype, n, tokens, num_docs - 1 if layout is Layout.MEGATRON else None)


class _IndexScan:
    """Reads of one index into buffers allocated once (a fresh array per block would fault its pages in
    again each time: most of the cost of a scan)."""

    def __init__(self, idx: Path, block: int) -> None:
        self.idx = idx
        self.raw_sizes = np.empty(block, np.int32)
        self.wide_sizes = np.empty(block, np.int64)
        self.pointers = np.empty(block, np.int64)
        self.expected = np.empty(block, np.int64)
        self.count = 0

    def read(self, handle: BinaryIO, dtype: str, offset: int, count: int, what: str,
             into: np.ndarray | None = None) -> np.ndarray:
        values = np.empty(count, dtype) if into is None else into[:count]
        handle.seek(offset)
        view, done = memoryview(values).cast("B"), 0
        while done < len(view) and (step := handle.readinto(view[done:])):
            done += step
        got = done // values.itemsize
        if got != count:
            raise FormatError(f"{self.idx}: the {what} end after {got} of the {count} asked for; truncated index")
        return values

    def sizes(self, handle: BinaryIO, offset: int, start: int, count: int) -> np.ndarray:
        """Sizes of items ``[start, start + count)`` as int64; none negative."""
        raw = self.read(handle, "<i4", offset, count, "sizes", self.raw_sizes)
        check_sizes(raw, self.idx, start)
        self.count = count
        wide = self.wide_sizes[:count]
        wide[...] = raw
        return wide

    def check_pointers(self, handle: BinaryIO, offset: int, start: int, first: int, itemsize: int) -> None:
        """The pointers of the items just read must be the byte sums of the sizes before them."""
        count = self.count
        actual = self.read(handle, "<i8", offset, count, "pointers", self.pointers)
        expected = self.expected[:count]
        expected[0] = 0
        np.cumsum(self.wide_sizes[: count - 1], out=expected[1:])
        expected *= itemsize
        expected += first
        if not np.array_equal(actual, expected):
            bad = int(np.flatnonzero(actual != expected)[0])
            raise FormatError(
                f"{self.idx}: pointer of item {start + bad} is {int(actual[bad])} but the sizes before it put it "
                f"at byte {int(expected[bad])}; sizes and pointers disagree (garbled index)"
            )


def check_bin_length(binary: Path, needed: int) -> None:
    """The ``.bin`` must be exactly the ``needed`` bytes its index describes."""
    actual_bytes = binary.stat().st_size
    if actual_bytes < needed:
        raise FormatError(
            f"{binary}: {actual_bytes} bytes but its index points to {needed}; the data file is "
            "truncated (an interrupted copy or write) — re-create or re-copy it"
        )
    if actual_bytes != needed:
        raise FormatError(
            f"{binary}: {actual_bytes} bytes but its index describes exactly {needed}; "
            "the .bin and .idx do not belong together"
        )


def check_documents(idx: Path, blocks: Iterable[np.ndarray], items: int) -> None:
    """Document indices (given in consecutive blocks) start at 0, never decrease and end at most at ``items``."""
    previous = None
    for docs in blocks:
        if not len(docs):
            continue
        if (int(docs[0]) != 0 if previous is None else int(docs[0]) < previous) or bool(np.any(np.diff(docs) < 0)):
            break
        previous = int(docs[-1])
    else:
        if previous is None or previous <= items:
            return
    raise FormatError(
        f"{idx}: document indices must start at 0, never decrease and end at most at "
        f"{items} (the item count); garbled index"
    )


def token_chunks(
    prefix: str | os.PathLike[str], chunk: int = TOKEN_CHUNK, block: int = 1 << 16
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The ``.bin`` of a checked store front to back, ``chunk`` tokens at a time, each with the last tokens
    of the non-empty items that end inside it (one pass over both files; memory bounded by ``chunk`` and
    ``block``, whatever the item lengths)."""
    base = split_prefix(prefix)
    binary = Path(f"{base}.bin")
    dtype = read_header(Path(f"{base}.idx"))[1]
    ends = _item_ends(base, block)
    pending = np.zeros(0, np.int64)
    offset = 0
    with open(binary, "rb") as handle:
        while len(tokens := np.fromfile(handle, dtype=dtype, count=chunk)):
            stop = offset + len(tokens)
            here = []
            while True:
                if not len(pending):
                    pending = next(ends, None)  # type: ignore[arg-type]
                    if pending is None:
                        pending = np.zeros(0, np.int64)
                        break
                cut = int(np.searchsorted(pending, stop, side="right"))
                here.append(pending[:cut])
                pending = pending[cut:]
                if len(pending):
                    break
            yield tokens, tokens[np.concatenate(here) - 1 - offset] if here else tokens[:0]
            offset = stop
    if len(pending) or any(len(more) for more in ends):
        raise FormatError(f"{binary}: truncated (its index counts more tokens); re-create it")


def _item_ends(prefix: str, block: int) -> Iterator[np.ndarray]:
    """Token offsets just past each non-empty item, ascending, a block of items at a time."""
    carry = 0
    for sizes in size_blocks(prefix, block):
        ends = np.cumsum(sizes)
        ends += carry
        carry = int(ends[-1])
        yield ends[sizes > 0]


__all__ = [
    "CHECK_BLOCK",
    "StoreFacts",
    "check_bin_length",
    "check_documents",
    "check_sizes",
    "check_store",
    "item_blocks",
    "read_header",
    "size_blocks",
    "split_prefix",
    "store_files",
    "store_length",
    "token_chunks",
]
