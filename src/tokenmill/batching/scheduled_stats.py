"""The statistics of a scheduled epoch (:class:`~tokenmill.batching.scheduled.ScheduledPlan`), from its parts.

A scheduled epoch is parts run one after the other, each the first ``take`` steps of a plan cut under
the mix in force (token-budget batches or packed rows). What the epoch trains on is the batches those
steps run, so samples, tokens, padding slots and tokens per rank are summed over exactly those batches
(every rank's), vectorized over each part's step schedule; a part's batches beyond its ``take`` never
run and are not counted.

Figures that belong to a plan rather than to the batches run: ``dropped`` is the last part's (what its
plan, the rest of the epoch under the last mix, left out: the pairs earlier parts' plans left out are
drawn again or not by the parts after them, so adding them up would count one pair several times);
``splits`` and ``merges`` add up every part's plan (each equalized its own batches over the ranks);
``seconds`` is the time all parts' plans took and ``cached`` whether every one came from the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tokenmill.batching.packed_pairs import PackedEpochPlan
from tokenmill.batching.plan import PlanStats
from tokenmill.batching.ranks import BatchTable

Slots = Callable[[BatchTable], np.ndarray]
"""The padded slots of each batch of a table (the base planner's ``batch_slots``)."""


def _samples(plan: Any, run: np.ndarray) -> np.ndarray:
    """Pairs in each batch ``run`` of ``plan`` (a packed plan's batches are row ranges)."""
    table = plan.table
    if isinstance(plan, PackedEpochPlan):
        row_starts = np.concatenate([[0], plan.row_ends]).astype(np.int64)
        return row_starts[table.stops[run]] - row_starts[table.starts[run]]
    return table.rows[run]


def scheduled_stats(parts: Sequence[tuple[Any, int]], world_size: int, slots: Slots) -> PlanStats:
    """The :class:`PlanStats` of running each part's plan for its ``take`` steps (module docstring)."""
    samples = src = tgt = padded = batches = rows = 0
    per_rank = np.zeros(world_size, dtype=np.int64)
    for plan, take in parts:
        steps = np.asarray(plan.schedule[:take], dtype=np.int64)
        run = steps.ravel()
        table = plan.table
        real = np.asarray(table.sum_src, dtype=np.int64) + np.asarray(table.sum_tgt, dtype=np.int64)
        samples += int(_samples(plan, run).sum())
        rows += int(table.rows[run].sum())
        src += int(table.sum_src[run].sum())
        tgt += int(table.sum_tgt[run].sum())
        padded += int(np.asarray(slots(table))[run].sum())
        batches += len(run)
        per_rank += real[steps].sum(axis=0) if len(steps) else 0
    last = parts[-1][0].stats
    every = [plan.stats for plan, _ in parts]
    extra: dict[str, Any] = {"part_steps": [int(take) for _, take in parts]}
    if isinstance(parts[-1][0], PackedEpochPlan):
        extra |= {k: v for k, v in last.extra.items() if k not in ("rows", "pairs_per_row", "compute_per_rank")}
        extra |= {"rows": rows, "pairs_per_row": samples / rows if rows else 0.0}
    return PlanStats(
        num_samples=samples,
        num_dropped=last.num_dropped,
        dropped=dict(last.dropped),
        num_batches=batches,
        num_batches_per_rank=[sum(int(take) for _, take in parts)] * world_size,
        src_tokens=src,
        tgt_tokens=tgt,
        padded_tokens=padded,
        padding_fraction=(1.0 - (src + tgt) / padded) if padded else 0.0,
        tokens_per_rank=[int(x) for x in per_rank],
        splits=sum(s.splits for s in every),
        merges=sum(s.merges for s in every),
        seconds=float(sum(s.seconds for s in every)),
        cached=all(s.cached for s in every),
        extra=extra,
    )


__all__ = ["Slots", "scheduled_stats"]
