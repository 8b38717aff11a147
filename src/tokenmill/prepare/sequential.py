"""``.npy`` arrays read and written front to back in blocks, with plain file reads; token stores the same way
(:mod:`tokenmill.store.index_file`, re-exported here for the stages that read whole splits).

The coordinator goes through whole splits: the dictionary's counts, binarize, the merge of the tasks'
id stores, the piece filters. Read through a memory map (:class:`~tokenmill.store.IndexedDataset`,
``np.load(mmap_mode="r")``), every page touched stays mapped until the map is dropped: 4 bytes per item
of file-backed resident memory for a store's sizes, 1 per pair for a keep mask. ``np.load`` without a map
would hold the whole array instead. Reading blocks with ``np.fromfile`` keeps one block resident,
whatever the item count.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

from tokenmill.errors import FormatError
from tokenmill.fsutil import atomic_path
from tokenmill.store.index_file import item_blocks, size_blocks, store_length


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
