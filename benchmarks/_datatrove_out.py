"""Reading what datatrove's ``DocumentTokenizer`` wrote, to compare it with our stores token for token."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def load_stream(files: list[Path], dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Tokens and global document ends of datatrove ``.ds`` files (and their ``.ds.index``) concatenated in order."""
    tokens, ends, offset = [], [], 0
    for f in files:
        t = np.fromfile(f, dtype=dtype)
        ends.append(np.fromfile(f"{f}.index", dtype=np.uint64).astype(np.int64) + offset)
        tokens.append(t)
        offset += len(t)
    return np.concatenate(tokens), np.concatenate(ends)
