"""Ragged rows (flat tokens + offsets) to padded matrices: the one padding primitive of collation."""

from __future__ import annotations

from typing import Any

import numpy as np


def pad_rows(
    tokens: np.ndarray, offsets: np.ndarray, pad: int, *, left: bool = False, multiple: int = 1, dtype: Any = np.int64
) -> np.ndarray:
    """Ragged rows (flat tokens + offsets) as a (rows, width) matrix filled with ``pad``."""
    lengths = np.diff(offsets)
    rows = len(lengths)
    longest = int(lengths.max()) if rows else 0
    width = -(-longest // multiple) * multiple if multiple > 1 else longest
    if rows and width == longest and int(lengths.min()) == longest:
        return tokens.astype(dtype, copy=False).reshape(rows, width)  # all rows the same length
    out = np.full((rows, width), pad, dtype=dtype)
    shift = np.arange(rows, dtype=np.int64) * width - offsets[:-1]
    if left:
        shift += width - lengths
    out.reshape(-1)[np.arange(len(tokens), dtype=np.int64) + np.repeat(shift, lengths)] = tokens
    return out
