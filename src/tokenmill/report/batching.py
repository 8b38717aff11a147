"""Section 5 of the report: what epoch 1 of training will look like for the given batch settings.

Plans come from the same code training uses (:func:`~tokenmill.loader.make.make_batches`: the
``lowpad``/``fairseq``/``opennmt`` modes, packed rows, a sampled mix of directions), computed without the
on-disk plan cache so the report leaves nothing behind. ``tokenmill batches`` prints the same
numbers for one mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tokenmill.batching.config import MODES, BatchConfig
from tokenmill.batching.packed_pairs import PackConfig
from tokenmill.batching.plan import EpochPlan, PlanStats
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import PairDataset
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import TokenmillError
from tokenmill.loader.make import make_batches
from tokenmill.report.options import ReportOptions

SHAPE_BINS = 40
MAX_POINTS = 400
TOP_SHAPES = 10
MAX_LISTED_RANKS = 64


def auto_pack_length(dataset: PairDataset) -> int:
    """A row length that holds about four typical pairs and nearly every pair: the next power of two
    at or above both the 99th percentile of the longer side and four times its median (at least 16)."""
    longest = np.zeros(len(dataset), dtype=np.int64)
    for sizes in (dataset.src_sizes, dataset.tgt_sizes):
        if sizes is not None:
            np.maximum(longest, sizes, out=longest)
    if not len(longest):
        return 16
    p99, median = np.percentile(longest, [99, 50])
    need = max(int(np.ceil(p99)), 4 * int(np.ceil(median)), 16)
    return 1 << (need - 1).bit_length()


def stats_numbers(stats: PlanStats, world_size: int) -> dict[str, Any]:
    """The plan statistics the report shows for one mode."""
    per_rank = stats.tokens_per_rank
    return {
        "samples": stats.num_samples,
        "dropped": stats.num_dropped,
        "dropped_by_reason": dict(stats.dropped),
        "batches": stats.num_batches,
        "batches_per_rank": stats.num_batches_per_rank[0] if stats.num_batches_per_rank else 0,
        "src_tokens": stats.src_tokens,
        "tgt_tokens": stats.tgt_tokens,
        "padded_tokens": stats.padded_tokens,
        "padding_fraction": stats.padding_fraction,
        "tokens_per_rank": per_rank if world_size <= MAX_LISTED_RANKS else None,
        "tokens_per_rank_min": min(per_rank) if per_rank else 0,
        "tokens_per_rank_max": max(per_rank) if per_rank else 0,
        "plan_seconds": stats.seconds,
        "extra": dict(stats.extra),
    }


def batch_shapes(plan: EpochPlan) -> dict[str, Any]:
    """Distribution of batch shapes: rows against the longest row (either side) of each batch, as
    points (one per distinct shape, when there are few) or as a density grid."""
    table = plan.table
    rows = np.asarray(table.rows, dtype=np.int64)
    max_src, max_tgt = np.asarray(table.max_src, np.int64), np.asarray(table.max_tgt, np.int64)
    width = np.maximum(max_src, max_tgt)
    if not len(rows):
        return {"batches": 0, "distinct": 0, "top": [], "points": None, "grid": None}
    distinct, counts = np.unique(np.stack([rows, max_src, max_tgt], axis=1), axis=0, return_counts=True)
    order = np.argsort(-counts, kind="stable")[:TOP_SHAPES]
    out: dict[str, Any] = {
        "batches": len(rows),
        "distinct": len(distinct),
        "top": [{"rows": int(distinct[i, 0]), "src": int(distinct[i, 1]), "tgt": int(distinct[i, 2]),
                 "batches": int(counts[i])} for i in order],
        "rows_mean": float(rows.mean()),
        "width_mean": float(width.mean()),
        "points": None,
        "grid": None,
    }
    cells, cell_counts = np.unique(np.stack([width, rows], axis=1), axis=0, return_counts=True)
    if len(cells) <= MAX_POINTS:
        out["points"] = [[int(w), int(r), int(c)] for (w, r), c in zip(cells, cell_counts, strict=True)]
        return out
    x_width = max(1, -(-(int(width.max()) + 1) // SHAPE_BINS))
    y_width = max(1, -(-(int(rows.max()) + 1) // SHAPE_BINS))
    nx, ny = int(width.max()) // x_width + 1, int(rows.max()) // y_width + 1
    grid = np.bincount((rows // y_width) * nx + width // x_width, minlength=nx * ny).reshape(ny, nx)
    out["grid"] = {"x_width": x_width, "y_width": y_width, "counts": grid.tolist()}
    return out


def _plan(dataset: PairDataset | MultiPairDataset, config: BatchConfig, options: ReportOptions) -> EpochPlan:
    sampling = None
    if isinstance(dataset, MultiPairDataset):
        sampling = SamplingConfig(temperature=float(options.temperatures[0]), seed=options.seed)
    iterator = make_batches(dataset, config, sampling=sampling, world_size=options.world_size, cache=False,
                            collate=None)
    return iterator.plan(1)  # type: ignore[return-value]


def preview(dataset: PairDataset | MultiPairDataset, options: ReportOptions, what: str) -> dict[str, Any]:
    """Every mode's plan for epoch 1 (``options.mode`` in detail), plus packed rows for one direction."""
    modes: dict[str, Any] = {}
    shapes = None
    for mode in MODES:
        config = BatchConfig(mode=mode, max_tokens=options.max_tokens, seed=options.seed)
        try:
            plan = _plan(dataset, config, options)
        except TokenmillError as error:
            modes[mode] = {"error": str(error)}
            continue
        modes[mode] = stats_numbers(plan.stats, options.world_size)
        if mode == options.mode:
            shapes = batch_shapes(plan)
    packed: dict[str, Any] | None = None
    pack_length = options.pack_length
    if isinstance(dataset, PairDataset):
        pack_length = pack_length or auto_pack_length(dataset)
        pack = PackConfig(max_length=pack_length, max_tokens=max(options.max_tokens, pack_length), seed=options.seed)
        try:
            stats = make_batches(dataset, pack=pack, world_size=options.world_size, cache=False).plan(1).stats
            packed = stats_numbers(stats, options.world_size)
        except TokenmillError as error:
            packed = {"error": str(error)}
    return {
        "what": what,
        "epoch": 1,
        "mode": options.mode,
        "max_tokens": options.max_tokens,
        "world_size": options.world_size,
        "pairs": len(dataset),
        "modes": modes,
        "packed": packed,
        "pack_length": pack_length if isinstance(dataset, PairDataset) else None,
        "pack_length_given": options.pack_length is not None,
        "shapes": shapes,
        "temperature": float(options.temperatures[0]) if isinstance(dataset, MultiPairDataset) else None,
    }


__all__ = ["auto_pack_length", "batch_shapes", "preview", "stats_numbers"]
