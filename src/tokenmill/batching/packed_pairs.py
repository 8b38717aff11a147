"""Packed translation pairs: several short pairs per row, rows of a fixed shape, batches of rows.

Each epoch, the pairs the dataset keeps are shuffled (seed, epoch) and packed into rows of at most
``max_src_length`` source and ``max_tgt_length`` target tokens (:mod:`tokenmill.batching.packed_rows`:
Tensor2Tensor's greedy stream packing, or two-sided first-fit decreasing); the rows are shuffled
and cut into batches of ``rows_per_batch`` rows; the batches are dealt to ranks with
:func:`~tokenmill.batching.ranks.equalize` and :func:`~tokenmill.batching.ranks.schedule` (equal
step counts, no dummy batches). The plan is a pure function of (data lengths, config, epoch,
world size), cached on disk like unpacked plans, so :class:`~tokenmill.loader.BatchIterator`
resumes it exactly in O(1)::

    planner = PackedPairPlanner(dataset, PackConfig(max_length=256, max_tokens=8192), world_size=8)
    batches = BatchIterator(dataset, planner=planner, collate=collate_packed, rank=rank, world_size=8)

A plan's ``indices(step, rank)`` is a :class:`PackedBatch` (pair ids row by row and widths), which
:func:`~tokenmill.batching.packed_collate.collate_packed` turns into T2T's features.

Pairs longer than a row on either side are dropped and counted (``source_longer_than_row``,
``target_longer_than_row``, ``both_longer_than_row``), or with ``strict`` a
:class:`~tokenmill.errors.ConfigError` names the first one.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.batching import copies
from tokenmill.batching.config import settings_from_dict
from tokenmill.batching.costs import round_up
from tokenmill.batching.epochs import EpochPlanner, left_of_ranges
from tokenmill.batching.order import SAMPLE_SHUFFLE, SHARD_SHUFFLE, STEP_SHUFFLE, generator, index_dtype
from tokenmill.batching.packed_rows import first_fit_decreasing, next_fit
from tokenmill.batching.plan import EpochPlan, PlanStats, plan_stats
from tokenmill.batching.ranks import BatchTable, equalize, measure, schedule
from tokenmill.batching.select import AllKept, EpochSample, Selection
from tokenmill.cache import CacheLike
from tokenmill.data.pairs import PairDataset
from tokenmill.errors import ConfigError

PACK_VERSION = 1
"""Bumped whenever a packed plan for the same inputs would come out different (invalidates caches)."""

STRATEGIES = ("ffd", "greedy")
"""``ffd``: two-sided first-fit decreasing over the whole epoch (fewest rows); ``greedy``:
Tensor2Tensor's stream packing, a row closes when the next pair of the shuffled stream does not fit."""

_ROW_SHUFFLE = SHARD_SHUFFLE  # the random stream that orders rows into batches (unused by pair plans)
_ARRAYS = ("order", "row_ends", "row_src", "row_tgt", "starts", "stops")


@dataclass(frozen=True)
class PackConfig:
    """How pairs are packed into rows and rows into batches; every field enters the plan fingerprint."""

    max_length: int = 256
    """Tokens per row on each side (T2T's ``max_length`` for packed problems)."""
    max_src_length: int | None = None
    """Source tokens per row when it should differ from ``max_length`` (None: ``max_length``)."""
    max_tgt_length: int | None = None
    """Target tokens per row when it should differ from ``max_length`` (None: ``max_length``)."""
    rows_per_batch: int | None = None
    """Rows per batch (None: as many as ``max_tokens`` allows)."""
    max_tokens: int | None = 4096
    """Token budget per batch and side: rows x row width <= max_tokens (None: ``rows_per_batch`` only)."""
    strategy: str = "ffd"
    """One of :data:`STRATEGIES`."""
    max_segments: int | None = None
    """At most this many pairs per row (None: no limit)."""
    fixed_width: bool = True
    """Collate every batch at the full row width (static shapes, as T2T on TPU); False: the longest
    row of the batch, rounded up to ``pad_to_multiple``."""
    pad_to_multiple: int = 1
    """With ``fixed_width`` False: widths are padded up to a multiple of this."""
    seed: int = 1
    """Seed of every random choice: the plan is a pure function of (seed, epoch, lengths, config)."""
    shuffle: bool = True
    """Shuffle pairs before packing and rows into batches, differently every epoch. False: pairs in
    dataset order (``greedy`` then packs the file as it is) and batches in packing order."""
    drop_last: bool = False
    """When the batch count is not a multiple of the world size, drop the smallest batches (their
    pairs sit out the epoch, reported) instead of splitting batches in two."""
    strict: bool = False
    """Raise :class:`ConfigError` on a pair longer than a row instead of dropping and counting it."""
    compute_balance: float | None = None
    """Deal batches to ranks by compute instead of padded slots: a batch costs its real tokens plus
    ``compute_balance`` x the sum of its pairs' squared lengths (both sides: attention inside each
    packed segment), so every step's batches cost about the same. The same rows and batches, equal steps,
    exact and elastic resume as before; None (the default) deals by slots and stays out of the plan's
    identity (plans and states made before the setting existed stay valid)."""

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"packing strategy {self.strategy!r} is unknown; choose one of {', '.join(STRATEGIES)}")
        if self.rows_per_batch is None and self.max_tokens is None:
            raise ConfigError("packed batches need rows_per_batch or max_tokens (or both); neither is set")
        for name in ("max_length", "max_src_length", "max_tgt_length", "rows_per_batch", "max_tokens", "max_segments"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ConfigError(
                    f"{name} must be a positive integer{'' if name == 'max_length' else ' or None'}, got {value!r}"
                )
        balance = self.compute_balance
        if balance is not None and (isinstance(balance, bool) or not isinstance(balance, int | float)
                                    or not 0 <= balance < float("inf")):
            raise ConfigError(f"compute_balance must be a number >= 0 or None, got {balance!r}")
        if not isinstance(self.pad_to_multiple, int) or self.pad_to_multiple < 1:
            raise ConfigError(f"pad_to_multiple must be an integer >= 1, got {self.pad_to_multiple!r}")
        if not isinstance(self.seed, int) or not 0 <= self.seed < 2**32 - 1024:
            raise ConfigError(f"seed must be an integer in [0, 2**32 - 1024), got {self.seed!r}")
        if self.max_tokens is not None and self.max_tokens < max(self.src_length, self.tgt_length):
            raise ConfigError(
                f"max_tokens={self.max_tokens} is smaller than one row ({max(self.src_length, self.tgt_length)} "
                "tokens): raise max_tokens or lower max_length"
            )

    @property
    def src_length(self) -> int:
        """Source tokens per row."""
        return self.max_src_length if self.max_src_length is not None else self.max_length

    @property
    def tgt_length(self) -> int:
        """Target tokens per row."""
        return self.max_tgt_length if self.max_tgt_length is not None else self.max_length

    @property
    def batch_rows(self) -> int:
        """Rows per batch: ``rows_per_batch`` capped by the token budget over the wider side."""
        rows = [self.rows_per_batch] if self.rows_per_batch is not None else []
        if self.max_tokens is not None:
            rows.append(self.max_tokens // max(self.src_length, self.tgt_length))
        return min(rows)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (what the fingerprint records; ``compute_balance`` only when set)."""
        values = asdict(self)
        if self.compute_balance is None:
            del values["compute_balance"]
        return values

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> PackConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error naming them."""
        return settings_from_dict(cls, values, "packing")


@dataclass
class PackedBatch:
    """One batch of packed rows: what a plan's ``indices(step, rank)`` returns and the collate takes."""

    ids: np.ndarray
    """Pair ids, row after row (inside a row: segment 1, 2, ...)."""
    row_ends: np.ndarray
    """int64 end of each row in ``ids`` (last == len(ids))."""
    src_width: int
    """Source columns of the collated arrays."""
    tgt_width: int
    """Target columns of the collated arrays."""

    @property
    def num_rows(self) -> int:
        return len(self.row_ends)

    def rows(self) -> list[np.ndarray]:
        """Pair ids of each row (for inspection and tests)."""
        return np.split(self.ids, self.row_ends[:-1])


@dataclass
class PackedEpochPlan(EpochPlan):
    """An :class:`~tokenmill.batching.plan.EpochPlan` whose batches are packed rows: ``order`` holds the
    pair ids row after row, batch b is rows ``table.starts[b]:table.stops[b]``."""

    config: PackConfig
    row_ends: np.ndarray
    """int64 end of each row in ``order``."""

    def batch(self, b: int) -> PackedBatch:  # type: ignore[override]
        """Batch ``b``: its pairs row by row, and the widths to collate it at."""
        first, stop = int(self.table.starts[b]), int(self.table.stops[b])
        begin = int(self.row_ends[first - 1]) if first else 0
        ends = self.row_ends[first:stop] - begin
        c = self.config
        if c.fixed_width:
            src_width, tgt_width = c.src_length, c.tgt_length
        else:
            src_width = int(round_up(self.table.max_src[b], c.pad_to_multiple))
            tgt_width = int(round_up(self.table.max_tgt[b], c.pad_to_multiple))
        return PackedBatch(self.order[begin : int(self.row_ends[stop - 1])], ends, src_width, tgt_width)

    def left_after(self, steps: int) -> np.ndarray:
        """Pair ids the first ``steps`` steps (all ranks) did not serve, in plan order."""
        served = self.schedule[:steps].ravel()
        row_starts = np.concatenate([[0], self.row_ends]).astype(np.int64)
        return left_of_ranges(self.order, row_starts[self.table.starts[served]], row_starts[self.table.stops[served]])

    def served_after(self, steps: int) -> np.ndarray:
        """Pair ids the first ``steps`` steps (all ranks) served, in plan order."""
        served = self.schedule[:steps].ravel()
        row_starts = np.concatenate([[0], self.row_ends]).astype(np.int64)
        return left_of_ranges(self.order, row_starts[self.table.starts[served]], row_starts[self.table.stops[served]],
                              inside=True)


def _drop_long(
    ids: np.ndarray, src: np.ndarray, tgt: np.ndarray, config: PackConfig, where: str, dropped: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    long_src = src > config.src_length
    long_tgt = tgt > config.tgt_length
    too_long = long_src | long_tgt
    if not too_long.any():
        return ids, src, tgt
    if config.strict:
        first = int(np.flatnonzero(too_long)[0])
        raise ConfigError(
            f"pair {int(ids[first])} of {where} does not fit a packed row (source {int(src[first])} "
            f"tokens, target {int(tgt[first])}; rows hold {config.src_length} / {config.tgt_length}); "
            f"{int(too_long.sum())} pairs in all — raise max_length or turn strict off to drop and count them"
        )
    both = long_src & long_tgt
    for reason, mask in (
        ("both_longer_than_row", both),
        ("source_longer_than_row", long_src & ~both),
        ("target_longer_than_row", long_tgt & ~both),
    ):
        if mask.any():
            dropped[reason] = int(mask.sum())
    keep = ~too_long
    return ids[keep], src[keep], tgt[keep]


def pack_epoch(
    sample: EpochSample, config: PackConfig, epoch: int, where: str = "the dataset"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """Rows of one epoch before batching: (dataset ids row by row, their source and target lengths,
    int64 row ends, dropped by reason). ``sample`` is the epoch's selection (every kept pair, or a
    sampled mix: an id drawn twice is packed twice)."""
    ids = sample.item_ids()
    src, tgt = sample.item_sizes()
    dropped = dict(sample.dropped)
    if config.shuffle:
        permutation = generator(config.seed, epoch, SAMPLE_SHUFFLE).permutation(len(ids))
        ids, src, tgt = ids[permutation], src[permutation], tgt[permutation]
    ids, src, tgt = _drop_long(ids, src, tgt, config, where, dropped)
    if config.strategy == "greedy":
        ends = next_fit(src, tgt, config.src_length, config.tgt_length, config.max_segments)
        return ids, src, tgt, ends, dropped
    positions = np.arange(len(ids), dtype=index_dtype(len(ids)))
    order, ends = first_fit_decreasing(positions, src, tgt, config.src_length, config.tgt_length, config.max_segments)
    return ids[order], src[order], tgt[order], ends, dropped


def _rows_in_order(order: np.ndarray, row_ends: np.ndarray, row_order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``order`` and ``row_ends`` with the rows rearranged into ``row_order``."""
    starts = np.concatenate([[0], row_ends[:-1]]).astype(np.int64)
    lengths = (row_ends - starts)[row_order]
    new_ends = np.cumsum(lengths).astype(np.int64)
    gather = np.arange(int(new_ends[-1]) if len(new_ends) else 0, dtype=np.int64)
    gather += np.repeat(starts[row_order] - (new_ends - lengths), lengths)
    return order[gather], new_ends


def squared(sizes: np.ndarray) -> np.ndarray:
    """Each length squared (int64)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return sizes * sizes


def row_sums(sizes_in_order: np.ndarray, row_ends: np.ndarray) -> np.ndarray:
    """Tokens of each row on one side (int64), from the lengths of the packed items in row order."""
    if not len(row_ends):
        return np.zeros(0, dtype=np.int64)
    starts = np.concatenate([[0], row_ends[:-1]])
    return np.add.reduceat(sizes_in_order, starts, dtype=np.int64)


def batch_pairs(row_ends: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> int:
    """Pairs in the batches given as row ranges."""
    cum = np.concatenate([[0], row_ends]).astype(np.int64)
    return int((cum[stops] - cum[starts]).sum())


def compute_packed(
    sample: EpochSample,
    config: PackConfig,
    epoch: int,
    world_size: int,
    where: str = "the dataset",
    *,
    short_ok: bool = False,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Pack, batch and equalize one epoch's selection (the cacheable part of a packed plan). ``short_ok``
    (the rest of an epoch after an elastic resume): fewer rows than ranks give no batches, counted."""
    began = time.perf_counter()
    order, src, tgt, row_ends, dropped = pack_epoch(sample, config, epoch, where)
    num_rows = len(row_ends)
    if short_ok and num_rows < world_size:
        if len(order):
            dropped["left_fewer_than_ranks"] = dropped.get("left_fewer_than_ranks", 0) + len(order)
        empty = np.zeros(0, dtype=np.int64)
        return dict.fromkeys(_ARRAYS, empty), {"dropped": dropped, "splits": 0, "merges": 0, "seconds": 0.0}
    row_src = row_sums(src, row_ends)
    row_tgt = row_sums(tgt, row_ends)
    row_squares = None if config.compute_balance is None else row_sums(squared(src) + squared(tgt), row_ends)
    if config.shuffle and num_rows:
        row_order = generator(config.seed, epoch, _ROW_SHUFFLE).permutation(num_rows)
        order, row_ends = _rows_in_order(order, row_ends, row_order)
        row_src, row_tgt = row_src[row_order], row_tgt[row_order]
        row_squares = None if row_squares is None else row_squares[row_order]
    per_batch = config.batch_rows
    ends = np.append(np.arange(per_batch, num_rows, per_batch, dtype=np.int64), num_rows)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    width = config.src_length + config.tgt_length

    def merge_costs(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        rows = stops - starts
        return (rows[:-1] + rows[1:]) * width

    eq = equalize(
        starts, ends, world_size, num_samples=num_rows, drop_last=config.drop_last, multiple=1, merge_costs=merge_costs
    )
    if eq.dropped_batches:
        dropped["drop_last_for_ranks"] = len(order) - batch_pairs(row_ends, eq.starts, eq.stops)
    if sample.sizes.copies is not None:  # copies of one pair: dealt over the batches holding its lengths
        order = spread_copies(order, row_ends, eq.starts, eq.stops, sample)
    arrays = {
        "order": order,
        "row_ends": row_ends,
        "row_src": row_src,
        "row_tgt": row_tgt,
        "starts": eq.starts,
        "stops": eq.stops,
    }
    if row_squares is not None:  # the quadratic term of each batch's compute
        arrays["squares"] = measure(eq.starts, eq.stops, row_squares, None).sum_src
    meta = {"dropped": dropped, "splits": eq.splits, "merges": eq.merges, "seconds": time.perf_counter() - began}
    return arrays, meta


def spread_copies(order: np.ndarray, row_ends: np.ndarray, starts: np.ndarray, stops: np.ndarray,
                  sample: EpochSample) -> np.ndarray:
    """``order`` with the pairs of each (source, target) length dealt over the batches holding that length
    (:func:`tokenmill.batching.copies.deal_by_batch`): rows keep their lengths exactly, copies of one pair
    land in different batches where the batches of its lengths allow."""
    row_batch = np.full(len(row_ends), len(starts), dtype=np.int64)  # rows of no batch (dropped): one more
    row_batch[np.repeat(starts, stops - starts) + _ranks_within(stops - starts)] = np.repeat(
        np.arange(len(starts), dtype=np.int64), stops - starts)
    batch = np.repeat(row_batch, np.diff(np.concatenate([[0], row_ends])).astype(np.int64))
    src, tgt = sizes_of(sample, order)
    cells = src * (int(tgt.max()) + 1 if len(tgt) else 1) + tgt
    return order[copies.deal_by_batch(order, batch, cells)]


def _ranks_within(lengths: np.ndarray) -> np.ndarray:
    """0..n-1 within each run of the given lengths, concatenated."""
    total = int(lengths.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)


def sizes_of(sample: EpochSample, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Source and target lengths (int64) of the items ``ids`` of ``sample`` (dataset ids)."""
    all_ids = sample.item_ids()
    src, tgt = sample.item_sizes()
    by_id = np.argsort(all_ids, kind="stable")
    where = by_id[np.searchsorted(np.asarray(all_ids)[by_id], ids)]
    return np.asarray(src, dtype=np.int64)[where], np.asarray(tgt, dtype=np.int64)[where]


class PackedPairPlanner(EpochPlanner):
    """Plans of packed epochs for one dataset (or a ``selection`` of it, e.g. a sampled mix), config and
    world size (a ``PlannerLike`` for BatchIterator, elastic like any :class:`EpochPlanner`).

    Picklable without arrays (the dataset pickles by path; plans are recomputed or mapped from the
    cache in each process), so DataLoader workers can take it along.
    """

    kind = "packed-plan"
    version = PACK_VERSION

    def __init__(
        self,
        dataset: PairDataset,
        config: PackConfig | None = None,
        *,
        selection: Selection | None = None,
        world_size: int = 1,
        cache: CacheLike = True,
        keep_epochs: int = 2,
    ) -> None:
        self.dataset = dataset
        self.config = config or PackConfig()
        super().__init__(selection or AllKept.over(dataset), self.config.to_dict(), world_size=world_size,
                         cache=cache, keep_epochs=keep_epochs)

    def _key_epoch(self, epoch: int) -> int:
        return epoch if self.config.shuffle or self.selection.varies_by_epoch else 0

    def _compute(
        self, sample: EpochSample, epoch: int, world_size: int, scratch: Path | None, *, remainder: bool = False
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return compute_packed(sample, self.config, epoch, world_size, self.dataset.describe(), short_ok=remainder)

    def _empty(self) -> dict[str, np.ndarray]:
        return dict.fromkeys(_ARRAYS, np.zeros(0, dtype=np.int64))

    def _with_world(self, world_size: int) -> PackedPairPlanner:
        return PackedPairPlanner(self.dataset, self.config, selection=self.selection, world_size=world_size,
                                 cache=self.cache, keep_epochs=self.keep_epochs)

    def _with_selection(self, selection: Selection) -> PackedPairPlanner:
        return PackedPairPlanner(self.dataset, self.config, selection=selection, world_size=self.world_size,
                                 cache=self.cache, keep_epochs=self.keep_epochs)

    def _assemble(
        self, arrays: dict[str, Any], meta: dict[str, Any], cached: bool, epoch: int, world_size: int
    ) -> PackedEpochPlan:
        table = measure(np.asarray(arrays["starts"]), np.asarray(arrays["stops"]), arrays["row_src"], arrays["row_tgt"])
        padded = self.batch_slots(table)
        costs = padded
        if self.config.compute_balance is not None:  # real tokens + a x squared lengths
            squares = np.asarray(arrays["squares"]) if "squares" in arrays else np.zeros(len(table), dtype=np.int64)
            costs = table.sum_src + table.sum_tgt + self.config.compute_balance * squares
        permute = (
            (lambda steps: generator(self.config.seed, epoch, STEP_SHUFFLE).permutation(steps))
            if self.config.shuffle
            else None
        )
        steps = schedule(costs, world_size, permute) if len(table) else np.zeros((0, world_size), dtype=np.int64)
        stats = self._stats(arrays, table, padded, steps, meta, cached, world_size)
        if self.config.compute_balance is not None:
            stats.extra["compute_per_rank"] = [float(costs[steps[:, r]].sum()) for r in range(world_size)]
        return PackedEpochPlan(epoch, world_size, arrays["order"], table, steps, stats, self.config, arrays["row_ends"])

    def batch_slots(self, table: BatchTable) -> np.ndarray:
        """Slots of each collated batch, both sides."""
        c = self.config
        if c.fixed_width:
            return table.rows * (c.src_length + c.tgt_length)
        m = c.pad_to_multiple
        return table.rows * (round_up(table.max_src, m) + round_up(table.max_tgt, m))

    def _stats(
        self,
        arrays: dict[str, np.ndarray],
        table: BatchTable,
        padded: np.ndarray,
        steps: np.ndarray,
        meta: dict[str, Any],
        cached: bool,
        world_size: int,
    ) -> PlanStats:
        rows_used = int(table.rows.sum())
        pairs_used = batch_pairs(arrays["row_ends"], table.starts, table.stops)
        return plan_stats(table, padded, steps, meta, cached, world_size, samples=pairs_used, extra={
            "strategy": self.config.strategy,
            "rows": rows_used,
            "rows_per_batch": self.config.batch_rows,
            "pairs_per_row": pairs_used / rows_used if rows_used else 0.0,
            "row_src_length": self.config.src_length,
            "row_tgt_length": self.config.tgt_length,
        })

    # ---------------------------------------------------------------- pickling (DataLoader workers)
    def _init_args(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        selection = None if isinstance(self.selection, AllKept) else self.selection
        return (self.dataset, self.config), {"selection": selection}
