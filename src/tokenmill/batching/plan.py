"""The batch plan of an epoch: which samples form each batch and which rank runs it at each step.

A plan is computed once per (data, settings, world size, epoch) — vectorized, seconds for tens of
millions of pairs — and cached on disk as memory-mapped arrays (:mod:`tokenmill.cache`),
so a second start maps it instead of recomputing. In fairseq mode the batches do not depend on the
epoch and one entry serves every epoch. The step schedule (which batch each rank runs at step t)
is derived from the cached batches in milliseconds and is never stored.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.batching import fairseq_mode, lowpad, opennmt_mode
from tokenmill.batching.blocks import compute_blocked, is_blocked
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Cut, Sizes, ordered
from tokenmill.batching.epochs import EpochPlanner, left_of_ranges, merge_dropped
from tokenmill.batching.epochs import remember as remember  # re-exported
from tokenmill.batching.modes import cut_mode, register_cut
from tokenmill.batching.order import STEP_SHUFFLE, generator
from tokenmill.batching.ranks import BatchTable, equalize, measure, padded_tokens, schedule
from tokenmill.batching.select import AllKept, EpochSample, Selection
from tokenmill.cache import CacheLike
from tokenmill.errors import ConfigError

PLAN_VERSION = 1
"""Bumped whenever a plan for the same inputs would come out different (invalidates caches)."""

_BATCH_ARRAYS = ("order", "starts", "stops", "max_src", "max_tgt", "sum_src", "sum_tgt")


@dataclass
class PlanStats:
    """What an epoch looks like; the ``tokenmill batches`` report."""

    num_samples: int
    """Samples this epoch trains on (every filter and drop applied)."""
    num_dropped: int
    """Samples of the split left out, all reasons together."""
    dropped: dict[str, int]
    """Samples left out, by reason (length filter per side, budget, drop_last)."""
    num_batches: int
    """Batches over all ranks."""
    num_batches_per_rank: list[int]
    """Batches each rank runs (all equal)."""
    src_tokens: int
    """Real (non-pad) source tokens."""
    tgt_tokens: int
    """Real target tokens."""
    padded_tokens: int
    """Slots of all padded batches, both sides: rows x (longest source + longest target)."""
    padding_fraction: float
    """Share of those slots that are padding."""
    tokens_per_rank: list[int]
    """Real tokens (both sides) each rank processes."""
    splits: int
    """Batches split to give every rank the same count."""
    merges: int
    """Batch pairs merged for the same reason (tiny corpora only; may exceed max_tokens)."""
    seconds: float
    """Time the plan took to compute (when it came from the cache: the original computation)."""
    cached: bool = False
    """Whether this plan was read from the on-disk cache."""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_stats(
    table: BatchTable, padded: np.ndarray, steps: np.ndarray, meta: dict[str, Any], cached: bool, world_size: int,
    *, samples: int, extra: dict[str, Any],
) -> PlanStats:
    """The statistics of a plan of batches ``table`` (``padded``: each batch's slots), dealt to ``world_size`` ranks
    step by step (``steps``), from its cut's ``meta`` (drops, splits, merges, seconds); ``samples``: the samples
    it trains on (rows, or the pairs packed into them), ``extra``: what its kind of plan adds."""
    dropped = merge_dropped(meta["dropped"])
    src_tokens, tgt_tokens = int(table.sum_src.sum()), int(table.sum_tgt.sum())
    slots = int(padded.sum())
    real = table.sum_src + table.sum_tgt
    return PlanStats(
        num_samples=samples,
        num_dropped=int(sum(dropped.values())),
        dropped=dropped,
        num_batches=len(table),
        num_batches_per_rank=[len(steps)] * world_size,
        src_tokens=src_tokens,
        tgt_tokens=tgt_tokens,
        padded_tokens=slots,
        padding_fraction=(1.0 - (src_tokens + tgt_tokens) / slots) if slots else 0.0,
        tokens_per_rank=[int(real[steps[:, r]].sum()) for r in range(world_size)],
        splits=int(meta["splits"]),
        merges=int(meta["merges"]),
        seconds=float(meta["seconds"]),
        cached=cached,
        extra=extra,
    )


@dataclass
class EpochPlan:
    """One epoch's batches and their step-by-step assignment to ranks."""

    epoch: int
    world_size: int
    order: np.ndarray
    """Sample ids; batch b is ``order[starts[b]:stops[b]]``."""
    table: BatchTable
    schedule: np.ndarray
    """(num_steps, world_size) batch ids; row t: the batch each rank runs at step t."""
    stats: PlanStats

    @property
    def num_steps(self) -> int:
        """Batches per rank in this epoch."""
        return len(self.schedule)

    def batch(self, b: int) -> np.ndarray:
        """Sample ids of batch ``b`` (a view of the plan)."""
        return self.order[int(self.table.starts[b]) : int(self.table.stops[b])]

    def indices(self, step: int, rank: int) -> np.ndarray:
        """Sample ids rank ``rank`` runs at ``step``."""
        if not 0 <= rank < self.world_size:
            raise ConfigError(f"rank {rank} is outside this plan's world size {self.world_size}")
        return self.batch(int(self.schedule[step, rank]))

    def rank_batches(self, rank: int) -> list[np.ndarray]:
        """Every batch of one rank, in step order (for inspection and tests)."""
        return [self.indices(t, rank) for t in range(self.num_steps)]

    def left_after(self, steps: int) -> np.ndarray:
        """Sample ids the first ``steps`` steps (all ranks) did not serve, in plan order."""
        served = self.schedule[:steps].ravel()
        return left_of_ranges(self.order, self.table.starts[served], self.table.stops[served])

    def served_after(self, steps: int) -> np.ndarray:
        """Sample ids the first ``steps`` steps (all ranks) served, in plan order."""
        served = self.schedule[:steps].ravel()
        return left_of_ranges(self.order, self.table.starts[served], self.table.stops[served], inside=True)


CutFunction = Callable[[Sizes, BatchConfig, int], Cut]
"""A batching mode: (item lengths, settings, epoch) -> items in batch order and batch ends."""

register_cut("lowpad", lowpad.cut)
register_cut("fairseq", fairseq_mode.cut, same_every_epoch=True)
register_cut("opennmt", opennmt_mode.cut)
"""The built-in modes; a new mode is a function registered by name (:mod:`tokenmill.batching.modes`)."""


def epoch_key(config: BatchConfig, epoch: int) -> int:
    """The epoch a mode's batches depend on (0: the same batches every epoch)."""
    return 0 if cut_mode(config.mode).same_every_epoch else epoch


def compute_sampled_batches(
    sample: EpochSample, config: BatchConfig, epoch: int, world_size: int, scratch: Path | None = None
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """:func:`compute_batches` over an epoch's sample, its order mapped back to dataset ids; block by
    block when the epoch has more than ``config.block_size`` items (:mod:`tokenmill.batching.blocks`;
    the order then goes to ``scratch`` as it is built)."""
    if is_blocked(sample, config):
        return compute_blocked(sample, config, epoch, world_size, scratch, compute_batches)
    began = time.perf_counter()
    cut = cut_mode(config.mode).cut(sample.sizes, config, epoch)
    arrays, meta = compute_batches(sample.sizes, config, epoch, world_size, cut=cut)
    meta["seconds"] = time.perf_counter() - began  # the cut included
    if sample.ids is not None and cut.copies_in_order is not None and sample.sizes.copies is sample.ids:
        arrays["order"] = cut.copies_in_order  # the ids in order already (the copies are the draw's ids)
    elif sample.ids is not None:
        arrays["order"] = np.asarray(sample.ids, dtype=np.int64)[arrays["order"]]
    dropped = dict(sample.dropped)
    for reason, count in meta["dropped"].items():
        dropped[reason] = dropped.get(reason, 0) + int(count)
    meta["dropped"] = dropped
    return arrays, meta


def compute_batches(
    sizes: Sizes, config: BatchConfig, epoch: int, world_size: int, *, cut: Cut | None = None
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Cut (with the mode's cut unless ``cut`` is given), equalize for ranks and measure an epoch's
    batches (the cacheable part of a plan)."""
    began = time.perf_counter()
    cut = cut if cut is not None else cut_mode(config.mode).cut(sizes, config, epoch)
    ends = cut.ends
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    src_in_order, tgt_in_order = cut.src_in_order, cut.tgt_in_order
    if src_in_order is None:
        src_in_order, tgt_in_order = ordered(sizes, cut.order)

    def merge_costs(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        t = measure(starts, stops, src_in_order, tgt_in_order)
        rows = t.rows[:-1] + t.rows[1:]
        width = np.maximum(t.max_src[:-1], t.max_src[1:]) + np.maximum(t.max_tgt[:-1], t.max_tgt[1:])
        return rows * width

    eq = equalize(
        starts,
        ends,
        world_size,
        num_samples=len(cut.order),
        drop_last=config.drop_last,
        multiple=config.required_batch_size_multiple,
        merge_costs=merge_costs,
    )
    table = measure(eq.starts, eq.stops, src_in_order, tgt_in_order)
    dropped = dict(cut.dropped)
    if eq.dropped_samples:
        dropped["drop_last_for_ranks"] = eq.dropped_samples
    arrays = {
        "order": cut.order,
        "starts": table.starts,
        "stops": table.stops,
        "max_src": table.max_src,
        "max_tgt": table.max_tgt,
        "sum_src": table.sum_src,
        "sum_tgt": table.sum_tgt,
    }
    if config.compute_balance is not None:  # the quadratic term of each batch's compute
        arrays["squares"] = squares_of(eq.starts, eq.stops, src_in_order, tgt_in_order)
    meta = {
        "dropped": dropped,
        "splits": eq.splits,
        "merges": eq.merges,
        "seconds": time.perf_counter() - began,
    }
    return arrays, meta


def squares_of(starts: np.ndarray, stops: np.ndarray, src: np.ndarray, tgt: np.ndarray | None) -> np.ndarray:
    """Sum of the rows' squared lengths (both sides) of each batch ``[starts, stops)`` of the order."""
    src = np.asarray(src, dtype=np.int64)
    squared = measure(starts, stops, src * src, None if tgt is None else np.asarray(tgt, dtype=np.int64) ** 2)
    return squared.sum_src + squared.sum_tgt


def batch_costs(
    table: BatchTable, padded: np.ndarray, arrays: dict[str, np.ndarray], config: BatchConfig
) -> np.ndarray:
    """What the deal to ranks balances: padded tokens, or with ``compute_balance`` a batch's compute
    (real tokens + compute_balance x its squared lengths)."""
    if config.compute_balance is None:
        return padded
    squares = np.asarray(arrays["squares"]) if "squares" in arrays else np.zeros(len(table), dtype=np.int64)
    return table.sum_src + table.sum_tgt + config.compute_balance * squares


def step_permutation(config: BatchConfig, epoch: int, world_size: int) -> Callable[[int], np.ndarray] | None:
    """How the steps of an epoch are shuffled, per mode (None: plan order)."""
    if not config.shuffle:
        return None
    if config.mode == "fairseq":
        return lambda steps: fairseq_mode.batch_order(steps, config.seed, epoch)
    if config.mode == "opennmt" and world_size == 1:
        return None  # OpenNMT-tf trains in the order its buckets fill up, already random
    return lambda steps: generator(config.seed, epoch, STEP_SHUFFLE).permutation(steps)


class Planner(EpochPlanner):
    """Computes (or maps from the cache) the plan of any epoch: a selection, a cut, a deal to ranks.

    ``selection`` says which items each epoch trains on (:mod:`tokenmill.batching.select`: every
    kept item, or a sampled mix of directions); plain ``Sizes`` (with ``data_fingerprint``) mean
    every kept item of one dataset. ``config.mode`` picks the cut (:mod:`tokenmill.batching.modes`); the batches are
    dealt to ranks in equal counts and cached per epoch (:mod:`tokenmill.cache`); the rest is
    :class:`~tokenmill.batching.epochs.EpochPlanner`'s (elastic resume included).
    """

    kind = "plan"
    version = PLAN_VERSION

    def __init__(
        self,
        selection: Selection | Sizes,
        config: BatchConfig,
        *,
        world_size: int = 1,
        data_fingerprint: str | None = None,
        pre_dropped: dict[str, int] | None = None,
        cache: CacheLike = True,
        keep_epochs: int = 2,
    ) -> None:
        if isinstance(selection, Sizes):
            if data_fingerprint is None:
                raise ValueError("a Planner over plain sizes needs the data_fingerprint they come from")
            selection = AllKept(selection, data_fingerprint, pre_dropped)
        elif data_fingerprint is not None or pre_dropped is not None:
            raise ValueError("data_fingerprint and pre_dropped go with plain sizes; a selection brings its own")
        self.config = config
        super().__init__(selection, config.plan_identity(), world_size=world_size, cache=cache,
                         keep_epochs=keep_epochs)

    def _key_epoch(self, epoch: int) -> int:
        return epoch if self.selection.varies_by_epoch else epoch_key(self.config, epoch)

    def _compute(
        self, sample: EpochSample, epoch: int, world_size: int, scratch: Path | None, *, remainder: bool = False
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return compute_sampled_batches(sample, self.config, epoch, world_size, scratch)

    def _init_args(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (self.selection, self.config), {}

    def _empty(self) -> dict[str, np.ndarray]:
        return dict.fromkeys(_BATCH_ARRAYS, np.zeros(0, dtype=np.int64))

    def _with_world(self, world_size: int) -> Planner:
        return Planner(self.selection, self.config, world_size=world_size, cache=self.cache,
                       keep_epochs=self.keep_epochs)

    def _with_selection(self, selection: Selection) -> Planner:
        return Planner(selection, self.config, world_size=self.world_size, cache=self.cache,
                       keep_epochs=self.keep_epochs)

    def batch_slots(self, table: BatchTable) -> np.ndarray:
        """Slots each batch of ``table`` occupies once padded, both sides (what the padding figures count)."""
        return padded_tokens(table, self.config.pad_to_multiple)

    def _assemble(
        self, arrays: dict[str, np.ndarray], meta: dict[str, Any], cached: bool, epoch: int, world_size: int
    ) -> EpochPlan:
        """An epoch plan from its cached arrays: the batch table and the step schedule of ``world_size`` ranks."""
        table = BatchTable(*(np.asarray(arrays[name]) for name in _BATCH_ARRAYS[1:]))
        padded = self.batch_slots(table)
        costs = batch_costs(table, padded, arrays, self.config)
        if len(table):
            steps = schedule(costs, world_size, step_permutation(self.config, epoch, world_size))
        else:
            steps = np.zeros((0, world_size), dtype=np.int64)
        stats = self._stats(table, padded, steps, meta, cached, world_size)
        if self.config.compute_balance is not None:
            stats.extra["compute_per_rank"] = [float(costs[steps[:, r]].sum()) for r in range(world_size)]
        return EpochPlan(epoch, world_size, arrays["order"], table, steps, stats)

    def _stats(
        self, table: BatchTable, padded: np.ndarray, steps: np.ndarray, meta: dict[str, Any], cached: bool,
        world_size: int | None = None,
    ) -> PlanStats:
        return plan_stats(table, padded, steps, meta, cached, self.world_size if world_size is None else world_size,
                          samples=int(table.rows.sum()),
                          extra={"blocks": int(meta["blocks"])} if "blocks" in meta else {})
