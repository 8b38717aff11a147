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
from tokenmill.batching.mixes import mix_key, multiset_keep, multiset_minus, same_mix, segment
from tokenmill.batching.order import argsort_ids
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


def left_of_ranges(order: np.ndarray, starts: np.ndarray, stops: np.ndarray, *, inside: bool = False) -> np.ndarray:
    """``order`` without the positions inside the ranges ``[starts[i], stops[i])`` (vectorized);
    ``inside``: only those positions instead. Disjoint ranges (a plan's batches) are gathered range by
    range (work in the positions taken, not in the whole order); others are marked and counted."""
    starts = np.asarray(starts, dtype=np.int64)
    stops = np.asarray(stops, dtype=np.int64)
    by_start = np.argsort(starts, kind="stable")
    low, high = starts[by_start], stops[by_start]
    if bool(np.all(high >= low)) and bool(np.all(low[1:] >= high[:-1])):
        if not inside:  # the gaps between the ranges
            low, high = np.concatenate([[0], high]), np.append(low, len(order))
        return np.asarray(order)[range_positions(low, high)]
    marks = np.zeros(len(order) + 1, dtype=np.int64)  # +1 at a served range's start, -1 at its stop
    np.add.at(marks, starts, 1)
    np.add.at(marks, stops, -1)
    covered = np.cumsum(marks[:-1]) != 0
    return np.asarray(order)[covered if inside else ~covered]


def range_positions(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The positions of the ranges ``[starts[i], stops[i])`` in turn (int64; empty ranges give none)."""
    lengths = np.maximum(stops - starts, 0)
    total = int(lengths.sum())
    before = np.cumsum(lengths) - lengths  # positions of the earlier ranges
    return np.arange(total, dtype=np.int64) + np.repeat(starts - before, lengths)


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
        self._mixes: dict[str, EpochPlanner] = {}
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

    def _with_selection(self, selection: Selection) -> EpochPlanner:
        """The same planner (settings, world size, cache) over another selection (another mix)."""
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

    @property
    def mix(self) -> dict[str, Any]:
        """The selection's settings by name: the mix this planner serves."""
        return dict(self.plan_settings["selection"])

    def for_mix(self, mix: dict[str, Any] | None) -> EpochPlanner:
        """The same planner with its selection made from ``mix`` (a selection's settings; None: this one's).

        A selection that can change its mix gives ``with_settings``; others refuse, naming why."""
        if mix is None or same_mix(mix, self.plan_settings["selection"]):  # (SampledPlanner.mix is its epoch mix)
            return self
        key = mix_key(mix)
        if key not in self._mixes:
            maker = getattr(self.selection, "with_settings", None)
            if maker is None:
                raise ConfigError(
                    f"the mix cannot change: this planner's selection ({type(self.selection).__name__}) has no "
                    "mix to change; resume with the settings the state was saved with"
                )
            self._mixes[key] = self._with_selection(maker(mix))
        return self._mixes[key]

    def plan_after(self, epoch: int, segments: Sequence[Sequence[Any]]) -> Any:
        """The plan of the rest of ``epoch`` for this planner's ranks and mix, after ``segments``: (world
        size, steps[, mix]) of the epoch's earlier parts in order (:mod:`tokenmill.batching.mixes`).

        The first part ran the epoch's own plan (at its world size, under its mix); every later part
        ran the plan of what the parts before it left. Between two parts of one mix, what is left is
        what the running plan had not served, cut again (the same cut, dealing and step shuffle as any
        plan), so every item of the epoch is served exactly once and every rank of each part runs the
        same number of steps. Where the mix changes, what is left is the epoch's draw under the new mix
        less everything served so far. A pure function of (data, settings, epoch, segments, world
        size), cached like any plan.
        """
        return self.chain(epoch, segments)[-1]

    def chain(self, epoch: int, segments: Sequence[Sequence[Any]]) -> list[Any]:
        """The plan of every part of ``epoch`` after ``segments`` (:meth:`plan_after`): one per segment,
        then the running one's (the last)."""
        if not segments:
            return [self.plan(epoch)]
        parts = [segment(x) for x in segments]
        asked = [[w, n] if m is None else [w, n, m] for w, n, m in parts]
        if epoch in self._after and self._after[epoch][0] == asked:  # asked for on every batch while it runs
            return self._after[epoch][1]
        first = self.for_mix(parts[0][2]).for_world(parts[0][0])
        plan = first.plan(epoch)
        plans = [plan]
        ran: list[tuple[Any, int]] = []  # (plan, steps) of each part, for what was served when the mix changes
        for index, (world, steps, mix) in enumerate(parts):
            if world != plan.world_size or not 0 <= steps <= plan.num_steps:
                raise ConfigError(
                    f"resume segments {asked} do not fit epoch {epoch}: part {index} ran {steps} steps "
                    f"at world size {world}, but its plan has {plan.num_steps} steps at world size {plan.world_size}"
                )
            ran.append((plan, steps))
            later = parts[index + 1] if index + 1 < len(parts) else (self.world_size, 0, None)
            next_world, next_mix = later[0], later[2]
            key = fingerprint({"base": first.base_key, "segments": asked[: index + 1], "world": next_world,
                               "v": self.version} | ({} if next_mix is None else {"mix": next_mix}))
            target = self.for_mix(next_mix)
            if same_mix(mix, next_mix):
                plan = target._remainder(plan, steps, epoch, next_world, key)
            else:
                key = fingerprint({"key": key, "to": self.base_key})
                plan = target._redrawn(epoch, list(ran), next_world, key)
            plans.append(plan)
        remember(self._after, epoch, (asked, plans))
        return plans

    def _remainder(self, plan: RankPlan, steps: int, epoch: int, world_size: int, key: str) -> Any:
        """The plan of what ``plan`` had not served after ``steps`` steps, for ``world_size`` ranks."""
        return self._rest(lambda: plan.left_after(steps), epoch, world_size, key)

    def _redrawn(self, epoch: int, ran: list[tuple[Any, int]], world_size: int, key: str) -> Any:
        """The plan of this planner's draw of ``epoch`` less what the parts ``ran`` served (a mix change),
        for ``world_size`` ranks (what was served is only worked out when the plan is not cached)."""
        return self._rest(lambda: self._draw_less(epoch, served_by(ran)), epoch, world_size, key)

    def _draw_less(self, epoch: int, served: np.ndarray) -> np.ndarray | tuple[np.ndarray, Sizes]:
        """This planner's draw of ``epoch`` less ``served``: the ids, with their lengths where the draw has
        them at hand (the kept positions of the sample: no lookup of each id)."""
        sample = self.selection.sample(epoch)
        if sample.ids is None:
            return multiset_minus(sample.item_ids(), served)
        ids = np.asarray(sample.ids, dtype=np.int64)
        keep = multiset_keep(ids, served)
        left, sizes = ids[keep], sample.sizes
        tgt = None if sizes.tgt is None else np.asarray(sizes.tgt)[keep]
        return left, Sizes(src=np.asarray(sizes.src)[keep], tgt=tgt, copies=None if sizes.copies is None else left)

    def _rest(self, left: Any, epoch: int, world_size: int, key: str) -> Any:
        """The plan of the items ``left()`` gives (dataset ids), cut for ``world_size`` ranks and cached."""

        def build(scratch: Path | None) -> tuple[Arrays, dict]:
            got = left()  # the ids, or the ids and their lengths
            ids, sizes = got if isinstance(got, tuple) else (got, None)
            if len(ids) < world_size:  # cannot give every rank an item: the epoch ends here (counted)
                dropped = {"left_fewer_than_ranks": len(ids)} if len(ids) else {}
                return self._empty(), {"dropped": dropped, "splits": 0, "merges": 0, "seconds": 0.0}
            before = self.selection.sample(epoch).dropped  # what the selection left out, as in the epoch's plan
            sizes = self.item_sizes(ids, epoch) if sizes is None else sizes
            sample = EpochSample(np.asarray(ids, dtype=np.int64), sizes, dict(before))
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
        where = first_positions(np.asarray(sample.ids), np.asarray(ids))
        tgt = None if sample.sizes.tgt is None else np.asarray(sample.sizes.tgt)[where]
        repeated = None if sample.sizes.copies is None else np.asarray(ids, dtype=np.int64)  # spread them again
        return Sizes(src=np.asarray(sample.sizes.src)[where], tgt=tgt, copies=repeated)


def first_positions(values: np.ndarray, lookups: np.ndarray) -> np.ndarray:
    """The position of the first occurrence in ``values`` (non-negative ids) of each of ``lookups`` (each
    occurs). A table over the ids when they are dense (a search of millions of lookups in random order
    misses the cache on every step), else a search; memory of the values, not of the largest id."""
    by_id = argsort_ids(values)
    ordered = values[by_id]
    if not len(ordered) or not len(lookups) or int(ordered[-1]) >= 4 * len(ordered) + (1 << 20):
        return by_id[np.searchsorted(ordered, lookups)]
    run = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    table = np.zeros(int(ordered[-1]) + 1, dtype=np.int64)
    table[ordered[run]] = by_id[run]
    return table[lookups]


def served_by(ran: Sequence[tuple[Any, int]]) -> np.ndarray:
    """Dataset ids the parts ``ran`` ((plan, steps) each) served, copies included."""
    pieces = [plan.served_after(steps) if hasattr(plan, "served_after")
              else multiset_minus(plan.left_after(0), plan.left_after(steps)) for plan, steps in ran if steps]
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)


__all__ = ["EpochPlanner", "RankPlan", "first_positions", "left_of_ranges", "merge_dropped", "remember", "served_by"]
