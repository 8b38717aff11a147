"""Dealing an epoch's batches to ``world_size`` ranks: equal counts, balanced tokens, no dummies.

Rule, in order:

1. **Equal counts.** The number of batches must be a multiple of ``world_size``. When it is not:

   * ``drop_last`` (and at least ``world_size`` batches): drop the ``count % world_size`` batches
     with the fewest rows; their samples sit out this epoch (reported).
   * otherwise, when the corpus has enough samples, **split** batches: the batch with the most rows
     is cut in two (at a multiple of ``required_batch_size_multiple`` when it can be), repeated
     until the count is a multiple. Splitting only lowers a batch's cost, so budgets still hold.
   * otherwise (fewer samples than the next multiple: tiny corpora of nearly one sample per batch)
     **merge** the cheapest pair of neighbouring batches until the count is the multiple below.
     Only here can a batch exceed ``max_tokens``; the plan reports how many merges it made.

   A corpus with fewer samples than ``world_size`` cannot give every rank a non-empty batch: that
   is a :class:`~tokenmill.errors.ConfigError`.

2. **Balanced steps.** With several ranks, batches are sorted by padded token count and dealt in
   groups of ``world_size`` consecutive batches, one group per step, so the batches that run
   side by side at one step cost about the same (alternating the direction in which a group is
   handed out keeps each rank's total even too). This is "shard, then shuffle" in Open-NLLB's
   words: a rank is never stuck with all the wide batches.

3. **Shuffle.** The order of steps is shuffled per epoch (same permutation on every rank).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tokenmill.errors import ConfigError


@dataclass
class BatchTable:
    """Batches as ranges of a sample order, with what they contain."""

    starts: np.ndarray
    """int64 start of each batch in the order."""
    stops: np.ndarray
    """int64 stop of each batch (exclusive)."""
    max_src: np.ndarray
    """Longest source row of each batch (0 without a source side)."""
    max_tgt: np.ndarray
    """Longest target row of each batch (0 without a target side)."""
    sum_src: np.ndarray
    """Source tokens of each batch."""
    sum_tgt: np.ndarray
    """Target tokens of each batch."""

    @property
    def rows(self) -> np.ndarray:
        return self.stops - self.starts

    def __len__(self) -> int:
        return len(self.starts)


def measure(
    starts: np.ndarray, stops: np.ndarray, src_in_order: np.ndarray, tgt_in_order: np.ndarray | None
) -> BatchTable:
    """Per-batch maxima and sums for batches that tile ``[0, len(order))`` in order, possibly with gaps."""
    n = len(src_in_order)
    nb = len(starts)
    if nb == 0:
        empty = np.zeros(0, dtype=np.int64)
        return BatchTable(starts, stops, empty, empty, empty, empty)
    # segments: each batch, plus the gap after it when the next batch does not start at its stop
    bounds = np.unique(np.concatenate([starts, stops[stops < n]]))
    where = np.searchsorted(bounds, starts)

    def reduce(values: np.ndarray | None, ufunc: np.ufunc) -> np.ndarray:
        if values is None:
            return np.zeros(nb, dtype=np.int64)
        if ufunc is np.add:
            return np.add.reduceat(values, bounds, dtype=np.int64)[where]
        return ufunc.reduceat(values, bounds)[where].astype(np.int64)

    return BatchTable(
        starts=starts,
        stops=stops,
        max_src=reduce(src_in_order, np.maximum),
        max_tgt=reduce(tgt_in_order, np.maximum),
        sum_src=reduce(src_in_order, np.add),
        sum_tgt=reduce(tgt_in_order, np.add),
    )


def padded_tokens(table: BatchTable, pad_to_multiple: int) -> np.ndarray:
    """Slots each batch occupies once padded: rows x (longest source + longest target)."""
    width = table.max_src + table.max_tgt
    if pad_to_multiple > 1:
        m = pad_to_multiple
        width = (table.max_src + m - 1) // m * m + (table.max_tgt + m - 1) // m * m
    return table.rows * width


@dataclass
class Equalized:
    """Batch ranges after making their count a multiple of the world size."""

    starts: np.ndarray
    stops: np.ndarray
    splits: int = 0
    merges: int = 0
    dropped_batches: int = 0
    dropped_samples: int = 0


def _split_point(rows: np.ndarray, multiple: int) -> np.ndarray:
    half = rows // 2
    aligned = half // multiple * multiple
    return np.where(aligned >= 1, aligned, half)


def equalize(
    starts: np.ndarray,
    stops: np.ndarray,
    world_size: int,
    *,
    num_samples: int,
    drop_last: bool,
    multiple: int,
    merge_costs: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> Equalized:
    """Make the batch count a multiple of ``world_size`` (rule 1 of this module).

    ``merge_costs(starts, stops)`` gives, for contiguous batches, what merging each neighbouring
    pair would cost (length ``len(starts) - 1``).
    """
    if num_samples < world_size:
        raise ConfigError(
            f"only {num_samples} samples for world_size={world_size}: every rank needs at least one "
            "non-empty batch per epoch; use fewer ranks or more data"
        )
    count = len(starts)
    remainder = count % world_size
    if remainder == 0:
        return Equalized(starts, stops)
    if drop_last and count >= world_size:
        rows = stops - starts
        victims = np.lexsort((-np.arange(count), rows))[:remainder]
        keep = np.ones(count, dtype=bool)
        keep[victims] = False
        return Equalized(starts[keep], stops[keep], dropped_batches=remainder, dropped_samples=int(rows[victims].sum()))
    target = count + (world_size - remainder)
    if num_samples >= target:
        splits = 0
        while len(starts) < target:
            rows = stops - starts
            candidates = np.flatnonzero(rows >= 2)
            ranked = candidates[np.argsort(-rows[candidates], kind="stable")][: target - len(starts)]
            cut_at = starts[ranked] + _split_point(rows[ranked], multiple)
            new_starts = np.concatenate([starts, cut_at])
            new_stops = np.concatenate([stops, stops[ranked]])
            new_stops[ranked] = cut_at
            order = np.argsort(new_starts, kind="stable")
            starts, stops = new_starts[order], new_stops[order]
            splits += len(ranked)
        return Equalized(starts, stops, splits=splits)
    merges = 0
    target = count - remainder
    while len(starts) > target:
        pick = int(np.argmin(merge_costs(starts, stops)))
        stops = np.delete(stops, pick)
        starts = np.delete(starts, pick + 1)
        merges += 1
    return Equalized(starts, stops, merges=merges)


def schedule(
    padded: np.ndarray,
    world_size: int,
    step_permutation: Callable[[int], np.ndarray] | None,
) -> np.ndarray:
    """(steps, world_size) batch ids: row t holds what each rank runs at step t (rules 2 and 3).

    ``padded`` is each batch's padded token count; ``step_permutation(steps)`` gives the step
    shuffle (None: no shuffle).
    """
    count = len(padded)
    steps = count // world_size
    if world_size == 1:
        table = np.arange(count, dtype=np.int64).reshape(steps, 1)
    else:
        by_class = np.argsort(-padded, kind="stable").astype(np.int64)
        table = by_class.reshape(steps, world_size)
        table[1::2] = table[1::2, ::-1].copy()
    if step_permutation is not None and steps > 1:
        table = table[step_permutation(steps)]
    return np.ascontiguousarray(table)
