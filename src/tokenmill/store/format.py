"""The indexed token store's on-disk format: headers, dtype code tables, layouts.

Two byte-exact layouts share one magic and differ in their header and trailing array:

* fairseq:  magic(9) version<Q> dtype<B> N<Q>            | int32 sizes[N] int64 pointers[N]
* Megatron: magic(9) version<Q> dtype<B> N<Q> D<Q>       | int32 sizes[N] int64 pointers[N] int64 doc_idx[D]

Pointers are byte offsets into ``.bin``. The layouts are told apart by the exact ``.idx`` size.
"""

from __future__ import annotations

import enum
import struct

import numpy as np

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
FAIRSEQ_HEADER = struct.Struct("<9sQBQ")  # 26 bytes
MEGATRON_HEADER = struct.Struct("<9sQBQQ")  # 34 bytes
# Vocabularies this large or larger are stored as int32 (fairseq's and Megatron's threshold).
UINT16_VOCAB_LIMIT = 65500


class Layout(str, enum.Enum):
    """Which reader the files are for: fairseq's MMapIndexedDataset or megatron-core's IndexedDataset."""

    FAIRSEQ = "fairseq"
    MEGATRON = "megatron"

    @property
    def header(self) -> struct.Struct:
        return FAIRSEQ_HEADER if self is Layout.FAIRSEQ else MEGATRON_HEADER

    @property
    def codes(self) -> dict[int, np.dtype]:
        return FAIRSEQ_CODES if self is Layout.FAIRSEQ else MEGATRON_CODES


_SHARED_CODES: dict[int, np.dtype] = {
    1: np.dtype(np.uint8),
    2: np.dtype(np.int8),
    3: np.dtype(np.int16),
    4: np.dtype(np.int32),
    5: np.dtype(np.int64),
    6: np.dtype(np.float64),
}
"""The codes both layouts give the same dtype (they part at 7: float64 in fairseq, float32 in Megatron)."""
FAIRSEQ_CODES: dict[int, np.dtype] = {
    **_SHARED_CODES,
    7: np.dtype(np.float64),
    8: np.dtype(np.uint16),
    9: np.dtype(np.uint32),
    10: np.dtype(np.uint64),
}
MEGATRON_CODES: dict[int, np.dtype] = {**_SHARED_CODES, 7: np.dtype(np.float32), 8: np.dtype(np.uint16)}


def dtype_code(layout: Layout, dtype: np.dtype) -> int:
    """The code ``layout`` uses for ``dtype`` (the first one, where fairseq has two for float64)."""
    dtype = np.dtype(dtype)
    for code, candidate in layout.codes.items():
        if candidate == dtype:
            return code
    supported = sorted({str(d) for d in layout.codes.values()})
    raise ValueError(f"the {layout.value} layout cannot store {dtype}; supported: {', '.join(supported)}")


def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 for vocabularies below 65500 entries, else int32 — what fairseq and Megatron pick."""
    return np.dtype(np.uint16) if vocab_size < UINT16_VOCAB_LIMIT else np.dtype(np.int32)


def idx_size(layout: Layout, num_items: int, num_doc_indices: int = 0) -> int:
    """Exact byte size of an ``.idx`` file for the given counts."""
    if layout is Layout.FAIRSEQ:
        return FAIRSEQ_HEADER.size + 12 * num_items
    return MEGATRON_HEADER.size + 12 * num_items + 8 * num_doc_indices


def bin_path(prefix: str) -> str:
    return f"{prefix}.bin"


def idx_path(prefix: str) -> str:
    return f"{prefix}.idx"
