"""Token stores and ``.npy`` arrays read (or written) front to back in blocks, with plain file reads.

The coordinator goes through whole splits: the dictionary's counts, binarize, the merge of the tasks'
id stores, the piece filters. Read through a memory map (:class:`~tokenmill.store.IndexedDataset`,
``np.load(mmap_mode="r")``), every page touched stays mapped until the map is dropped. That is 4 bytes
per item of file-backed resident memory for a store's sizes: 3.2 GB for 800M items, and opening a store
touches all of them (the sizes are checked). ``np.load`` without a map would hold the whole array
instead. Reading blocks with ``np.fromfile`` keeps one block resident, whatever the item count.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

from tokenmill.errors import FormatError
from tokenmill.fsutil import atomic_path
from tokenmill.store.reader import read_header, split_prefix


def store_length(prefix: str | os.PathLike[str]) -> int:
    """Items in the store at ``prefix`` (from its ``.idx`` header, which is checked)."""
    return read_header(Path(f"{split_prefix(prefix)}.idx"))[2]


def _sizes(handle: BinaryIO, idx: Path, start: int, count: int) -> np.ndarray:
    sizes = np.fromfile(handle, dtype="<i4", count=count).astype(np.int64)
    if len(sizes) != count:
        raise FormatError(f"{idx}: the sizes end at item {start + len(sizes)}, before the {count} asked for")
    if count and int(sizes.min()) < 0:
        bad = start + int(np.flatnonzero(sizes < 0)[0])
        raise FormatError(f"{idx}: item {bad} has a negative size; garbled index")
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
    base = split_prefix(prefix)
    idx, binary = Path(f"{base}.idx"), Path(f"{base}.bin")
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


def _npy_header(handle: BinaryIO, path: Path) -> tuple[tuple[int, ...], np.dtype]:
    version = np.lib.format.read_magic(handle)
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    if version not in readers:
        raise FormatError(f"{path}: .npy version {version} is not read here (1.0 and 2.0 are)")
    shape, _, dtype = readers[version](handle)
    if len(shape) != 1 or dtype.hasobject:
        raise FormatError(f"{path}: not a one-dimensional array of numbers")
    return shape, dtype


def npy_blocks(path: str | os.PathLike[str], items: int) -> Iterator[np.ndarray]:
    """A one-dimensional ``.npy`` array, ``items`` at a time."""
    path = Path(path)
    with open(path, "rb") as handle:
        (n,), dtype = _npy_header(handle, path)
        for start in range(0, n, items):
            count = min(items, n - start)
            block = np.fromfile(handle, dtype=dtype, count=count)
            if len(block) != count:
                raise FormatError(f"{path}: truncated at item {start + len(block)} of {n}")
            yield block


def save_npy_blocks(path: str | os.PathLike[str], blocks: Iterable[np.ndarray], length: int, dtype: np.dtype) -> None:
    """Write ``blocks`` (``length`` items in all) as one one-dimensional ``.npy`` array, atomically: the
    same bytes as ``np.save`` of their concatenation, without holding it."""
    dtype = np.dtype(dtype)
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (int(length),)}
    written = 0
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
        for block in blocks:
            handle.write(np.ascontiguousarray(block, dtype=dtype).tobytes())
            written += len(block)
        if written != length:
            raise ValueError(f"{path}: {written} items written, {length} announced")


__all__ = ["item_blocks", "npy_blocks", "save_npy_blocks", "size_blocks", "store_length"]
