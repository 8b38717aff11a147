"""What every epoch planner shares: a selection, a cut, a deal to ranks, a cache, elastic resume.

A planner is a selection (:mod:`tokenmill.batching.select`: which items an epoch trains on) and a
cut (how those items become batches: token-budget batches in :mod:`tokenmill.batching.plan`,
packed rows in :mod:`tokenmill.batching.packed_pairs`). This base class is the rest, written once:
each epoch's cut is cached (:mod:`tokenmill.cache`), the plans of the current and next epoch are
kept, and a plan can be re-made for another number of ranks after part of its epoch ran
(``plan_after``: what was not served is cut again, each item once, equal steps on every rank).

A subclass gives ``_compute`` (cut and equalize a sample for some ranks: cacheable arrays),
``_assemble`` (a plan from those arrays: step schedule and stats) and ``_with_world``; its plans
give ``num_steps``, ``indices(step, rank)`` and ``left_after(steps)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from tokenmill.batching.costs import Sizes
from tokenmill.batching.select import EpochSample, Selection
from tokenmill.cache import ArrayCache, CacheLike, array_cache, fingerprint
from tokenmill.errors import ConfigError

Arrays = dict[str, np.ndarray]


class RankPlan(Protocol):
    """What the base class needs of a plan."""

    world_size: int

    @property
    def num_steps(self) -> int: ...

    def left_after(self, steps: int) -> np.ndarray:
        """Dataset ids of the items the first ``steps`` steps (all ranks) did not serve, in plan order."""
        ...


def remember(memo: dict[int, Any], epoch: int, plan: Any, keep: int = 2) -> Any:
    """Keep ``plan`` as ``memo[epoch]`` with at most ``keep`` epochs held (the current and the next)."""
    if len(memo) >= keep:
        memo.pop(min(memo))
    memo[epoch] = plan
    return plan


def left_of_ranges(order: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """``order`` without the positions inside the ranges ``[starts[i], stops[i])`` (vectorized)."""
    marks = np.zeros(len(order) + 1, dtype=np.int64)  # +1 at a served range's start, -1 at its stop
    np.add.at(marks, starts, 1)
    np.add.at(marks, stops, -1)
    return np.asarray(order)[np.cumsum(marks[:-1]) == 0]


def merge_dropped(*counts: dict[str, Any]) -> dict[str, int]:
    """Drop counts by reason summed over ``counts`` (zeros left out)."""
    total: dict[str, int] = {}
    for part in counts:
        for reason, count in part.items():
            total[reason] = total.get(reason, 0) + int(count)
    return {reason: count for reason, count in total.items() if count}


class EpochPlanner:
    """The shared machinery; see the module docstring. ``kind`` names the cache entries."""

    kind = "plan"
    version = 1

    def __init__(
        self, selection: Selection, settings: dict[str, Any], *, world_size: int, cache: CacheLike, keep_epochs: int
    ) -> None:
        if world_size < 1:
            raise ConfigError(f"world_size must be >= 1, got {world_size}")
        self.selection: Selection = selection
        self.world_size = world_size
        self.cache: ArrayCache = array_cache(cache)
        self.keep_epochs = keep_epochs
        self._memo: dict[int, Any] = {}
        self._after: dict[int, Any] = {}  # epoch -> (segments, plan) of the last elastic remainder asked for
        self._worlds: dict[int, EpochPlanner] = {}
        self.plan_settings = {**settings, "selection": getattr(selection, "settings", dict)()}
        """Every setting of the cut and the selection, by name: what a resumed state must match."""
        self.base_key = fingerprint(
            {"v": self.version, "kind": self.kind, "data": selection.fingerprint(), "config": settings,
             "world": world_size}
        )

    # ---------------------------------------------------------------- pickling (DataLoader workers)
    def __getstate__(self) -> dict[str, Any]:
        """Settings travel, arrays do not: the planner is made again and its plans re-mapped from the cache."""
        args, keywords = self._init_args()
        return {"args": args, "keywords": {**keywords, "world_size": self.world_size, "cache": self.cache.state(),
                                           "keep_epochs": self.keep_epochs}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, *state["args"], **state["keywords"])

    # ---------------------------------------------------------------- what subclasses give
    def _init_args(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The positional and keyword arguments (but world size, cache and kept epochs) that make this
        planner again."""
        raise NotImplementedError

    def _key_epoch(self, epoch: int) -> int:
        """The epoch a plan's cache entry is kept under (0: the same cut every epoch)."""
        return epoch

    def _compute(
        self, sample: EpochSample, epoch: int, world_size: int, scratch: Path | None, *, remainder: bool = False
    ) -> tuple[Arrays, dict]:
        """Cut and equalize ``sample`` for ``world_size`` ranks. ``remainder``: the rest of an epoch after
        an elastic resume; too few items to give every rank a batch end the epoch there (counted)."""
        raise NotImplementedError

    def _assemble(self, arrays: Arrays, info: dict[str, Any], cached: bool, epoch: int, world_size: int) -> Any:
        raise NotImplementedError

    def _empty(self) -> Arrays:
        """The arrays of a plan without batches."""
        raise NotImplementedError

    def _with_world(self, world_size: int) -> EpochPlanner:
        raise NotImplementedError

    # ---------------------------------------------------------------- plans
    @property
    def fingerprint(self) -> str:
        """Identifies data + selection + settings + world size: what a resumed state must match."""
        return self.base_key

    def plan(self, epoch: int) -> Any:
        """The plan of ``epoch`` (1-based, like fairseq)."""
        if epoch < 1:
            raise ValueError(f"epochs count from 1, got {epoch}")
        if epoch in self._memo:
            return self._memo[epoch]

        def build(scratch: Path | None) -> tuple[Arrays, dict]:
            return self._compute(self.selection.sample(epoch), epoch, self.world_size, scratch)

        entry = self.cache.get_or_build(self.kind, {"plan": self.base_key}, build, epoch=self._key_epoch(epoch),
                                        keep_epochs=self.keep_epochs, scratch=True)
        plan = self._assemble(entry.arrays, entry.info, not entry.built, epoch, self.world_size)
        return remember(self._memo, epoch, plan)

    # ---------------------------------------------------------------- elastic resume
    def for_world(self, world_size: int) -> EpochPlanner:
        """The same planner for another number of ranks (same selection, settings and cache)."""
        if world_size == self.world_size:
            return self
        if world_size not in self._worlds:
            self._worlds[world_size] = self._with_world(world_size)
        return self._worlds[world_size]

    def plan_after(self, epoch: int, segments: Sequence[tuple[int, int]]) -> Any:
        """The plan of the rest of ``epoch`` for this planner's ranks, after ``segments``: (world size,
        steps) pairs, the epoch's earlier parts in order, each run on another number of ranks.

        The first part ran the epoch's own plan at its world size; every later part ran the plan of
        the items the parts before it had not served. What is left is cut again here (the same cut,
        dealing and step shuffle as any plan, over the remaining items), so over all parts every item
        of the epoch is served exactly once and every rank of each part runs the same number of
        steps. A pure function of (data, settings, epoch, segments, world size), cached like any plan.
        """
        if not segments:
            return self.plan(epoch)
        asked = [(int(w), int(n)) for w, n in segments]
        if epoch in self._after and self._after[epoch][0] == asked:  # asked for on every batch while it runs
            return self._after[epoch][1]
        first = self.for_world(int(segments[0][0]))
        plan = first.plan(epoch)
        for index, (world, steps) in enumerate(segments):
            world, steps = int(world), int(steps)
            if world != plan.world_size or not 0 <= steps <= plan.num_steps:
                raise ConfigError(
                    f"resume segments {list(segments)} do not fit epoch {epoch}: part {index} ran {steps} steps "
                    f"at world size {world}, but its plan has {plan.num_steps} steps at world size {plan.world_size}"
                )
            next_world = int(segments[index + 1][0]) if index + 1 < len(segments) else self.world_size
            key = fingerprint({"base": first.base_key, "segments": [list(map(int, x)) for x in segments[: index + 1]],
                               "world": next_world, "v": self.version})
            plan = self._remainder(plan, steps, epoch, next_world, key)
        remember(self._after, epoch, (asked, plan))
        return plan

    def _remainder(self, plan: RankPlan, steps: int, epoch: int, world_size: int, key: str) -> Any:
        """The plan of what ``plan`` had not served after ``steps`` steps, for ``world_size`` ranks."""

        def build(scratch: Path | None) -> tuple[Arrays, dict]:
            ids = plan.left_after(steps)
            if len(ids) < world_size:  # cannot give every rank an item: the epoch ends here (counted)
                dropped = {"left_fewer_than_ranks": len(ids)} if len(ids) else {}
                return self._empty(), {"dropped": dropped, "splits": 0, "merges": 0, "seconds": 0.0}
            before = self.selection.sample(epoch).dropped  # what the selection left out, as in the epoch's plan
            sample = EpochSample(np.asarray(ids, dtype=np.int64), self.item_sizes(ids, epoch), dict(before))
            return self._compute(sample, epoch, world_size, scratch, remainder=True)

        entry = self.cache.get_or_build(self.kind, {"plan": key}, build, epoch=epoch, keep_epochs=self.keep_epochs,
                                        scratch=True)
        return self._assemble(entry.arrays, entry.info, not entry.built, epoch, world_size)

    def item_sizes(self, ids: np.ndarray, epoch: int) -> Sizes:
        """The lengths of items ``ids`` (dataset ids), from the epoch's selection."""
        sample = self.selection.sample(epoch)
        if sample.ids is None:
            tgt = None if sample.sizes.tgt is None else sample.sizes.tgt[ids]
            return Sizes(src=sample.sizes.src[ids], tgt=tgt)
        by_id = np.argsort(sample.ids, kind="stable")  # memory of the sample, not of the largest id
        where = by_id[np.searchsorted(np.asarray(sample.ids)[by_id], ids)]
        tgt = None if sample.sizes.tgt is None else np.asarray(sample.sizes.tgt)[where]
        repeated = None if sample.sizes.copies is None else np.asarray(ids, dtype=np.int64)  # spread them again
        return Sizes(src=np.asarray(sample.sizes.src)[where], tgt=tgt, copies=repeated)


__all__ = ["EpochPlanner", "RankPlan", "left_of_ranges", "merge_dropped", "remember"]
