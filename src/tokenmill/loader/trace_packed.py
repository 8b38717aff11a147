"""Trace packed pair rows (:mod:`tokenmill.batching.packed_pairs`): where each packed pair of a batch sits
(row of the batch, position in the row), and back, the row and position of a pair in its epoch's plan.

A packed plan's ``order`` holds the pair ids row after row (``row_ends``: where each row ends) and its batch
table cuts rows, not pairs; an unpacked plan's table cuts ``order`` itself. :func:`batch_slots` and
:func:`plan_units` turn both into one shape, so :mod:`tokenmill.loader.trace` inverts either the same way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tokenmill.batching.packed_pairs import PackConfig, PackedBatch, PackedEpochPlan, PackedPairPlanner
from tokenmill.cache import CacheLike
from tokenmill.loader.iterator import BatchIterator


def packed_iterator(iterator: BatchIterator, pack: PackConfig, cache: CacheLike) -> BatchIterator:
    """``iterator``'s data (and sampled mix, when it has one) packed into rows as ``pack`` says, the same
    planner ``tokenmill batches --pack-length`` and training with :class:`PackedPairPlanner` use."""
    selection = getattr(iterator.planner, "mix_selection", None)
    planner = PackedPairPlanner(iterator.dataset, pack, selection=selection, world_size=iterator.world_size,
                                cache=cache)
    return BatchIterator(iterator.dataset, planner=planner, world_size=iterator.world_size, collate=None)


def batch_slots(indices: Any) -> list[tuple[int, int | None, int]]:
    """(row, position in the row or None, sample id) of every sample of one batch: a
    :class:`PackedBatch` row by row (positions from 0), a plain batch one sample a row (no position)."""
    if not isinstance(indices, PackedBatch):
        return [(row, None, int(sample)) for row, sample in enumerate(np.asarray(indices).tolist())]
    ends = np.asarray(indices.row_ends, dtype=np.int64)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    rows = np.repeat(np.arange(len(ends), dtype=np.int64), ends - starts)
    positions = np.arange(len(rows), dtype=np.int64) - starts[rows]
    return list(zip(rows.tolist(), positions.tolist(), np.asarray(indices.ids).tolist(), strict=True))


def plan_units(plan: Any, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """For positions in ``plan.order``: the unit the batch table cuts (a packed plan's row, else the position
    itself) and, for a packed plan, the position inside that row (else None)."""
    if not isinstance(plan, PackedEpochPlan):
        return positions, None
    ends = np.asarray(plan.row_ends, dtype=np.int64)
    rows = np.searchsorted(ends, positions, side="right")
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    return rows, positions - starts[rows]


__all__ = ["batch_slots", "packed_iterator", "plan_units"]
