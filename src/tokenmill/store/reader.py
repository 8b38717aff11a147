"""Memory-mapped reader for ``.bin``/``.idx`` token stores in fairseq's or Megatron's layout.

Opening validates everything a wrong file could get wrong — magic, version, dtype code, the exact
``.idx`` size, pointers against sizes, and the ``.bin`` length — so that a bad file gives one clear
:class:`~tokenmill.errors.FormatError` naming it, never a numpy traceback or garbage tokens.
Items are zero-copy views; :meth:`IndexedDataset.gather` fetches many items with one vectorized
fancy-index instead of a Python loop per item.
"""

from __future__ import annotations

import os

import numpy as np

from tokenmill.errors import FormatError
from tokenmill.store.format import Layout
from tokenmill.store.index_file import (
    check_bin_length,
    check_documents,
    check_sizes,
    check_store,
    read_header,
    split_prefix,
    store_files,
)


class IndexedDataset:
    """A read-only, memory-mapped token store: ``len``, ``sizes``, items, and batched gathers.

    ``prefix`` is the path without ``.bin``/``.idx``. The layout is detected from the exact
    ``.idx`` size. ``check_pointers=False`` skips the O(N) pointer scan (header, sizes and
    ``.bin`` length are still checked) for callers that re-open a store they already verified.
    """

    def __init__(self, prefix: str | os.PathLike[str], *, check_pointers: bool = True) -> None:
        self.prefix = split_prefix(prefix)
        self.idx_file, self.bin_file = store_files(self.prefix)
        self.layout, self.dtype, num_items, num_docs = read_header(self.idx_file)
        header = self.layout.header.size
        # Plain ndarray views over the maps: np.memmap's Python-level __getitem__ costs ~9 us per slice.
        self._idx_map = np.memmap(self.idx_file, dtype=np.uint8, mode="r")
        self._idx = self._idx_map.view(np.ndarray)
        self.sizes: np.ndarray = np.frombuffer(self._idx, dtype=np.int32, count=num_items, offset=header)
        self.pointers: np.ndarray = np.frombuffer(
            self._idx, dtype=np.int64, count=num_items, offset=header + 4 * num_items
        )
        self.document_indices: np.ndarray | None = None
        if self.layout is Layout.MEGATRON:
            self.document_indices = np.frombuffer(
                self._idx, dtype=np.int64, count=num_docs, offset=header + 12 * num_items
            )
        self._check_index(check_pointers)
        self._tokens = self._map_bin()

    # ---------------------------------------------------------------- validation
    def _check_index(self, check_pointers: bool) -> None:
        """The full check reads the index in blocks (:func:`~tokenmill.store.index_file.check_store`), not
        through the maps, so it costs no memory that grows with the store (and is faster than touching
        the maps). Without the pointer scan, the sizes are checked through the map: the reader's fast
        path, whose pages it will read anyway."""
        if check_pointers:
            check_store(self.prefix)
            return
        n = len(self.sizes)
        check_sizes(self.sizes, self.idx_file, 0)
        if n and int(self.pointers[-1]) < 0:
            raise FormatError(f"{self.idx_file}: negative pointer for the last item; garbled index")
        check_bin_length(self.bin_file, int(self.pointers[-1]) + int(self.sizes[-1]) * self.dtype.itemsize if n else 0)
        if self.document_indices is not None:
            check_documents(self.idx_file, [self.document_indices], n)

    def _map_bin(self) -> np.ndarray:
        if self.bin_file.stat().st_size == 0:
            return np.empty(0, dtype=self.dtype)
        self._bin_map = np.memmap(self.bin_file, dtype=self.dtype, mode="r")
        return self._bin_map.view(np.ndarray)

    # ---------------------------------------------------------------- access
    def __len__(self) -> int:
        return len(self.sizes)

    @property
    def tokens(self) -> np.ndarray:
        """Every token of the store as one flat zero-copy view (items back to back, in order)."""
        return self._tokens

    @property
    def num_tokens(self) -> int:
        """Total tokens over all items."""
        return int(self.sizes.sum(dtype=np.int64))

    def _item_index(self, i: int) -> int:
        n = len(self.sizes)
        index = int(i)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"item {i} out of range for {self.prefix} with {n} items")
        return index

    def get(self, i: int, offset: int = 0, length: int | None = None) -> np.ndarray:
        """A zero-copy view of item ``i`` from token ``offset`` for ``length`` tokens (to its end if None)."""
        index = self._item_index(i)
        size = int(self.sizes[index])
        if offset < 0 or offset > size:
            raise IndexError(f"offset {offset} outside item {index} of {size} tokens")
        stop = size if length is None else min(size, offset + length)
        start = int(self.pointers[index]) // self.dtype.itemsize
        return self._tokens[start + offset : start + stop]

    def __getitem__(self, i: int | slice) -> np.ndarray | list[np.ndarray]:
        if isinstance(i, slice):
            return [self.get(j) for j in range(*i.indices(len(self)))]
        return self.get(i)

    def __iter__(self):
        for i in range(len(self)):
            yield self.get(i)

    def _positions(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Token positions of the items in ``indices`` (concatenated), their lengths and offsets."""
        n = len(self.sizes)
        if indices.size and (int(indices.min()) < -n or int(indices.max()) >= n):
            raise IndexError(f"gather index out of range for {self.prefix} with {n} items")
        indices = np.where(indices < 0, indices + n, indices)
        lengths = self.sizes[indices].astype(np.int64)
        offsets = np.zeros(len(indices) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        starts = self.pointers[indices] // self.dtype.itemsize
        positions = np.arange(offsets[-1], dtype=np.int64)
        positions += np.repeat(starts - offsets[:-1], lengths)
        return positions, lengths, offsets

    def _windows(self, indices: np.ndarray, left_pad: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(rows, lengths, valid mask): one fixed-width window of the token array per item.

        The token array is viewed as overlapping rows of width ``W`` (the longest item) without a
        copy, and one row per item is taken, so the read is a single (n, W) copy plus a mask
        instead of index arithmetic per token. Returns None when that would copy far more than the
        items hold (very uneven lengths) or an item's window would leave the array.
        """
        lengths = self.sizes[indices].astype(np.int64)
        width = int(lengths.max()) if len(lengths) else 0
        total = int(lengths.sum())
        if width == 0 or len(indices) * width > 4 * total + 4096 or width > len(self._tokens):
            return None
        starts = self.pointers[indices] // self.dtype.itemsize
        if left_pad:
            starts = starts + lengths - width
        if int(starts.min()) < 0 or int(starts.max()) > len(self._tokens) - width:
            return None
        step = self._tokens.strides[0]
        windows = np.lib.stride_tricks.as_strided(
            self._tokens, shape=(len(self._tokens) - width + 1, width), strides=(step, step), writeable=False
        )
        columns = np.arange(width)
        valid = columns >= (width - lengths)[:, None] if left_pad else columns < lengths[:, None]
        return windows[starts], lengths, valid

    def gather(self, indices: np.ndarray | list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Items ``indices`` as (flat tokens, int64 offsets of length n+1), in one vectorized read."""
        index_array = self._normalize(np.asarray(indices, dtype=np.int64).reshape(-1))
        window = self._windows(index_array, left_pad=False)
        if window is not None:
            rows, lengths, valid = window
            offsets = np.zeros(len(index_array) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            return rows[valid], offsets
        positions, _, offsets = self._positions(index_array)
        return self._tokens[positions], offsets

    def _normalize(self, indices: np.ndarray) -> np.ndarray:
        n = len(self.sizes)
        if indices.size and (int(indices.min()) < -n or int(indices.max()) >= n):
            raise IndexError(f"gather index out of range for {self.prefix} with {n} items")
        return np.where(indices < 0, indices + n, indices) if indices.size and int(indices.min()) < 0 else indices

    def gather_padded(
        self,
        indices: np.ndarray | list[int],
        pad_id: int,
        *,
        left_pad: bool = False,
        pad_to_multiple: int = 1,
        dtype: np.dtype | type | None = None,
    ) -> np.ndarray:
        """Items ``indices`` as a (n, width) matrix padded with ``pad_id`` (right-padded unless ``left_pad``).

        ``width`` is the longest item rounded up to ``pad_to_multiple``.
        """
        index_array = self._normalize(np.asarray(indices, dtype=np.int64).reshape(-1))
        window = self._windows(index_array, left_pad=left_pad)
        if window is not None:
            rows, lengths, valid = window
            longest = rows.shape[1]
            width = -(-longest // pad_to_multiple) * pad_to_multiple if pad_to_multiple > 1 else longest
            out = np.full((len(index_array), width), pad_id, dtype=dtype or self.dtype)
            target = out[:, width - longest :] if left_pad else out[:, :longest]
            np.copyto(target, rows, where=valid, casting="unsafe")
            return out
        positions, lengths, offsets = self._positions(index_array)
        longest = int(lengths.max()) if len(lengths) else 0
        width = -(-longest // pad_to_multiple) * pad_to_multiple if pad_to_multiple > 1 else longest
        out = np.full((len(index_array), width), pad_id, dtype=dtype or self.dtype)
        rows = np.repeat(np.arange(len(index_array)), lengths)
        cols = np.arange(len(positions), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
        if left_pad:
            cols += np.repeat(width - lengths, lengths)
        out[rows, cols] = self._tokens[positions]
        return out

    def __repr__(self) -> str:
        return (
            f"IndexedDataset({self.prefix!r}, layout={self.layout.value}, dtype={self.dtype}, "
            f"items={len(self)}, tokens={self.num_tokens})"
        )
