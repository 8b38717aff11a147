"""What a sample costs in a batch, and the inputs every batching mode shares.

A row costs its longest side rounded up to ``pad_to_multiple``: a batch of rows R then costs
``len(R) * max(cost[R])`` tokens on its longer side, padding included, which is the quantity the
``max_tokens`` budget bounds (on each side separately, which is the same thing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tokenmill.batching.order import index_dtype


@dataclass
class Sizes:
    """Per-sample lengths a plan is computed from (after the dataset's own transforms and filter)."""

    src: np.ndarray
    """int32 source lengths, one per sample of the dataset."""
    tgt: np.ndarray | None
    """int32 target lengths, or None for a source-only dataset."""
    keep: np.ndarray | None = None
    """Bool mask of samples the dataset keeps (None: all)."""
    copies: np.ndarray | None = None
    """Sample id of each item when an epoch holds copies of one sample (a sampled mix that
    upsamples); the cut spreads copies over batches (:mod:`tokenmill.batching.copies`). None: no copies."""

    def __len__(self) -> int:
        return len(self.src)

    def kept_ids(self) -> np.ndarray:
        """Ids of kept samples, ascending."""
        if self.keep is None:
            return np.arange(len(self.src), dtype=index_dtype(len(self.src)))
        return np.flatnonzero(self.keep).astype(index_dtype(len(self.src)), copy=False)


@dataclass
class Cut:
    """A mode's result: samples in batch order and where each batch ends."""

    order: np.ndarray
    """Sample ids; batch b is ``order[ends[b-1]:ends[b]]``."""
    ends: np.ndarray
    """int64 batch ends, ascending, last == len(order)."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Samples left out of this epoch, by reason."""
    src_in_order: np.ndarray | None = None
    """``sizes.src[order]`` when the mode computed it anyway (saves a pass)."""
    tgt_in_order: np.ndarray | None = None
    """``sizes.tgt[order]`` likewise."""
    copies_in_order: np.ndarray | None = None
    """``sizes.copies[order]`` (int64) when the mode computed it anyway: with a draw's ids as the copies,
    the order in dataset ids without another gather in random order."""


def round_up(lengths: np.ndarray, multiple: int) -> np.ndarray:
    """Lengths padded up to a multiple (no copy when ``multiple`` is 1)."""
    if multiple <= 1:
        return lengths
    return (lengths + (multiple - 1)) // multiple * multiple


def ordered(sizes: Sizes, order: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Source and target lengths in ``order``."""
    return sizes.src[order], (sizes.tgt[order] if sizes.tgt is not None else None)


_GRID_LIMIT = 1 << 24


def ordered_by_length(sizes: Sizes, order: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Source and target lengths in ``order`` when ``order`` is sorted by (source, target) length.

    Every run of equal lengths is one (source, target) cell, so the lengths in order are the cells'
    lengths repeated by their counts: a bincount and two repeats instead of gathering 2 x N values
    in random order (several times faster for tens of millions of samples).
    """
    src, tgt = sizes.src, sizes.tgt
    width = int(tgt.max()) + 1 if tgt is not None and len(tgt) else 1
    height = int(src.max()) + 1 if len(src) else 1
    if width * height > _GRID_LIMIT:
        return ordered(sizes, order)
    cell = src.astype(np.int64) * width
    if tgt is not None:
        cell += tgt
    if sizes.keep is not None:
        cell = cell[sizes.keep]
    counts = np.bincount(cell, minlength=width * height)
    occupied = np.flatnonzero(counts)
    runs = counts[occupied]
    src_in_order = np.repeat((occupied // width).astype(src.dtype), runs)
    tgt_in_order = np.repeat((occupied % width).astype(tgt.dtype), runs) if tgt is not None else None
    return src_in_order, tgt_in_order


def row_costs(src: np.ndarray, tgt: np.ndarray | None, pad_to_multiple: int) -> np.ndarray:
    """Cost of one row of each sample: its longest side, padded (inputs already in plan order)."""
    cost = src if tgt is None else np.maximum(src, tgt)
    return round_up(cost.astype(np.int32, copy=False), pad_to_multiple)


def drop_over_budget(
    costs: np.ndarray, max_tokens: int | None, dropped: dict[str, int], *arrays: np.ndarray | None
) -> tuple[np.ndarray, ...]:
    """Remove samples that cannot fit any batch (one row costs more than ``max_tokens``); count them.

    Returns ``costs`` and each of ``arrays`` (aligned with it) without those samples.
    """
    if max_tokens is None or len(costs) == 0 or int(costs.max()) <= max_tokens:
        return (costs, *arrays)
    fits = costs <= max_tokens
    dropped["longer_than_max_tokens"] = dropped.get("longer_than_max_tokens", 0) + int((~fits).sum())
    return (costs[fits], *(None if a is None else a[fits] for a in arrays))
