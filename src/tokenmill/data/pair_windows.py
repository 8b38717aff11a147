"""Fixed-width windows over a store's tokens: a batch of plain stored rows padded in a few numpy calls."""

from __future__ import annotations

from typing import Any

import numpy as np

from tokenmill.data.concat_store import Store
from tokenmill.store import IndexedDataset


class Windows:
    """A store's tokens seen as overlapping rows of the longest sentence's width (no copy).

    Row ``p`` is the tokens from position ``p`` on, so a batch is one fancy-indexed copy of the
    rows where its sentences start (or, left-padded, end) plus a mask: no index arithmetic per
    token. Sentences too close to the end of the array for a full window use the general path.
    """

    def __init__(self, tokens: np.ndarray, sizes: np.ndarray, pointers: np.ndarray, width: int) -> None:
        self.sizes = sizes
        self.pointers = pointers
        self.shift = tokens.dtype.itemsize.bit_length() - 1  # byte pointer -> token position
        self.last = len(tokens) - width
        self.columns = np.arange(width, dtype=sizes.dtype)  # same dtype as lengths: no casting in compares
        step = tokens.strides[0]
        self.view = np.lib.stride_tricks.as_strided(
            tokens, shape=(self.last + 1, width), strides=(step, step), writeable=False
        )

    @classmethod
    def over(cls, store: Store) -> Windows | None:
        if not isinstance(store, IndexedDataset):  # several files: rows are gathered per part instead
            return None
        if len(store) == 0 or store.bin_file.stat().st_size == 0 or store.dtype.itemsize not in (1, 2, 4, 8):
            return None
        tokens = np.memmap(store.bin_file, dtype=store.dtype, mode="r").view(np.ndarray)
        width = int(store.sizes.max())
        if width == 0 or width > len(tokens):
            return None
        return cls(tokens, store.sizes, store.pointers, width)

    def padded(
        self, indices: np.ndarray, pad: int, *, left: bool, multiple: int, dtype: Any
    ) -> tuple[np.ndarray, np.ndarray] | None:
        # (every call here is one numpy call on a batch-sized array: this runs once per batch and side)
        lengths = self.sizes[indices]
        if not len(lengths):
            return None
        longest = int(np.maximum.reduce(lengths))
        begin = self.pointers[indices]
        begin >>= self.shift
        if left:
            begin += lengths
            begin -= longest
        if int(np.minimum.reduce(begin)) < 0 or int(np.maximum.reduce(begin)) > self.last:
            return None
        width = -(-longest // multiple) * multiple if multiple > 1 else longest
        rows = self.view[begin, :longest]
        columns = self.columns[:longest]
        if left:
            valid = columns >= (np.int32(longest) - lengths)[:, None]
        else:
            valid = columns < lengths[:, None]
        out = np.empty((len(lengths), width), dtype=dtype)
        out.fill(pad)
        np.copyto(out[:, width - longest :] if left else out[:, :longest], rows, where=valid, casting="unsafe")
        return out, lengths.astype(np.int64)


