"""Epoch plans over a sampled mix of translation directions, batched by length across the mix.

For training epoch ``e`` the selection :class:`SampledMix`

1. picks each direction's shard for ``e`` (:meth:`MultiPairDataset.active_parts`, fairseq's
   ``(e - 1) mod k_d``);
2. builds the :class:`~tokenmill.data.sampling.SamplingPlan` over those shards' *kept* pairs
   (after the length filter: only pairs that can be trained on are drawn) and draws the epoch's
   items (``SamplingPlan.sample``), deterministic from the sampling seed and ``e``;
3. and any planner cuts the drawn items: :class:`SampledPlanner` (a
   :class:`~tokenmill.batching.plan.Planner` over the mix: the batching mode's cut by length
   across all directions, equal batch counts on every rank, balanced steps, step shuffle) or
   packed rows (:class:`~tokenmill.batching.packed_pairs.PackedPairPlanner` with
   ``selection=SampledMix(...)``), each cached per epoch; batches hold global pair ids.

Everything is a pure function of (sampling seed, batching seed, epoch, pair lengths, settings),
so any rank, DataLoader worker or resumed run computes the same plan. Without a sampling config
(``sampling=None``, e.g. for validation) every kept pair of the epoch's shards is used once.

Sampling probabilities are computed from the sizes of the shards read this epoch (fairseq
estimates each direction's total over all its shards instead); with one shard per direction
the two agree.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tokenmill.batching import copies
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Sizes
from tokenmill.batching.plan import Planner
from tokenmill.batching.select import EpochSample
from tokenmill.cache import CacheLike, fingerprint
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.sampling import SamplingConfig, SamplingPlan
from tokenmill.errors import ConfigError

COPIES_RULE = "spread"
"""How copies of one sample in an epoch are batched (part of a sampled mix's settings)."""

_CYCLE_LIMIT = 4096
"""Longest cycle of shard combinations (lcm of the shard counts) skipped arithmetically."""


@dataclass
class EpochMix:
    """What epoch ``epoch`` reads: one shard per direction and the sampling plan over them."""

    epoch: int
    """Training epoch (1-based)."""
    data_epoch: int
    """Pass over the data (1-based) that decides the shards: ``epoch`` without virtual-epoch
    slices, else the virtual epoch ``epoch`` belongs to."""
    slice_index: int
    """Which slice of the pass ``epoch`` is (0 without slices)."""
    plan_epoch: int
    """The epoch number to give the sampling plan for this (pass, slice)."""
    parts: np.ndarray
    """Part of the dataset each direction reads (index into ``dataset.parts``)."""
    kept: np.ndarray
    """int64 pairs each direction can be drawn from (its shard after the length filter)."""
    plan: SamplingPlan | None
    """The sampling plan over ``kept`` (None: every kept pair once)."""


class SampledMix:
    """A :class:`~tokenmill.batching.select.Selection`: per epoch, each direction's shard, sampled.

    ``sampling`` None uses every kept pair of each epoch's shards once (no sampling). Any cut
    takes it: token-budget batches (:class:`SampledPlanner`) or packed rows
    (``PackedPairPlanner(dataset, pack, selection=SampledMix(dataset, sampling))``).
    """

    varies_by_epoch = True

    def __init__(self, dataset: MultiPairDataset, sampling: SamplingConfig | None = None) -> None:
        self.dataset = dataset
        self.sampling = sampling
        self._kept_ids: dict[int, np.ndarray | None] = {}
        self._mixes: dict[tuple[int, ...], tuple[np.ndarray, SamplingPlan | None]] = {}
        self._num_slices: dict[tuple[int, ...], int] = {}
        self._last: tuple[int, EpochSample] | None = None
        self._fingerprint = fingerprint(
            {"data": dataset.fingerprint(), "sampling": None if sampling is None else sampling.to_dict(), "multi": 2}
        )

    def __getstate__(self) -> dict[str, Any]:  # DataLoader workers: the dataset pickles by path
        return {"dataset": self.dataset, "sampling": self.sampling}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["dataset"], state["sampling"])  # type: ignore[misc]

    def fingerprint(self) -> str:
        """The data and the sampling settings."""
        return self._fingerprint

    def settings(self) -> dict[str, Any]:
        """The sampling settings by name (what a resumed state compares, field by field). ``copies``:
        copies of one sample are spread over batches (:mod:`tokenmill.batching.copies`); states saved
        before that rule lack the key, so their resume is refused naming it instead of changing order."""
        return {"sampling": None if self.sampling is None else self.sampling.to_dict(), "copies": COPIES_RULE}

    @property
    def sources(self) -> list[str]:
        """Names of the sources a consumption ledger counts by: the directions."""
        return list(self.dataset.directions)

    def source_of(self, ids: np.ndarray) -> np.ndarray:
        """Source (direction) number of each global pair id."""
        return np.asarray(self.dataset.direction_of(np.asarray(ids, dtype=np.int64)), dtype=np.int64)

    def tokens_of(self, ids: np.ndarray) -> np.ndarray:
        """Tokens (both sides) of each global pair id, from the data."""
        ids = np.asarray(ids, dtype=np.int64)
        tokens = np.zeros(len(ids), dtype=np.int64)
        for sizes in (self.dataset.src_sizes, self.dataset.tgt_sizes):
            if sizes is not None:
                tokens += np.asarray(sizes[ids], dtype=np.int64)
        return tokens

    def with_settings(self, settings: dict[str, Any]) -> SampledMix:
        """The same data under another mix: ``settings`` as :meth:`settings` gives them (a state's record).

        Directions a new mix adds or retires are the dataset's directions with weight 0 in one of the two
        mixes (``SamplingConfig.weights``)."""
        if settings.get("copies") != COPIES_RULE:  # e.g. a state saved before copies were spread
            raise ConfigError(
                f"the mix was batched with copies rule {settings.get('copies')!r}, not this version's "
                f"{COPIES_RULE!r}: its plan cannot be made again; start the data iterator afresh"
            )
        sampling = settings.get("sampling")
        return SampledMix(self.dataset, None if sampling is None else SamplingConfig.from_dict(sampling))

    # ---------------------------------------------------------------- the epoch's mix
    def position(self, epoch: int) -> tuple[int, int]:
        """(data pass, slice) of training epoch ``epoch``: the pass (1-based) decides the shards.

        Without virtual-epoch slices every training epoch is a pass. With ``virtual_epoch_size``
        a pass is one virtual epoch, consumed in ``num_slices`` training epochs (which depends on
        the pass's shard sizes), so the shards move on once a virtual epoch is used up (fairseq's
        ``estimate_global_pass_epoch``).
        """
        if epoch < 1:
            raise ValueError(f"epochs count from 1, got {epoch}")
        if self.sampling is None or self.sampling.virtual_epoch_size is None:
            return epoch, 0
        period = math.lcm(*(len(shards) for shards in self.dataset.shards))
        passes, remaining = 0, epoch
        if period <= _CYCLE_LIMIT:  # skip whole cycles of shard combinations
            per_cycle = sum(self._slices(v) for v in range(1, period + 1))
            passes = (epoch - 1) // per_cycle * period
            remaining = epoch - (epoch - 1) // per_cycle * per_cycle
        while remaining > self._slices(passes + 1):
            remaining -= self._slices(passes + 1)
            passes += 1
        return passes + 1, remaining - 1

    def _slices(self, data_pass: int) -> int:
        """Training epochs data pass ``data_pass`` lasts (memoized per choice of shards)."""
        parts = self.dataset.active_parts(data_pass)
        key = tuple(int(p) for p in parts)
        if key not in self._num_slices:
            plan = self._mix_of(parts)[1]
            self._num_slices[key] = 1 if plan is None else plan.num_slices
        return self._num_slices[key]

    def _mix_of(self, parts: np.ndarray) -> tuple[np.ndarray, SamplingPlan | None]:
        """Kept pairs per direction and the sampling plan for one choice of shards (memoized)."""
        key = tuple(int(p) for p in parts)
        if key not in self._mixes:
            kept = np.array([self.dataset.parts[p].filter_report.num_kept for p in parts], dtype=np.int64)
            plan = None
            if self.sampling is not None:
                plan = SamplingPlan.build(self.dataset.directions, kept, self.sampling)
            if len(self._mixes) >= 4:
                self._mixes.pop(next(iter(self._mixes)))
            self._mixes[key] = (kept, plan)
        return self._mixes[key]

    def mix(self, epoch: int) -> EpochMix:
        """Shards and sampling plan of training epoch ``epoch``."""
        data_pass, slice_index = self.position(epoch)
        parts = self.dataset.active_parts(data_pass)
        kept, plan = self._mix_of(parts)
        plan_epoch = data_pass if plan is None else (data_pass - 1) * plan.num_slices + slice_index + 1
        return EpochMix(epoch, data_pass, slice_index, plan_epoch, parts, kept, plan)

    def counts(self, epoch: int) -> np.ndarray:
        """Items each direction gives to training epoch ``epoch`` (int64, in ``dataset.directions`` order)."""
        mix = self.mix(epoch)
        return mix.kept.copy() if mix.plan is None else mix.plan.counts(mix.plan_epoch)

    def _kept(self, part: int) -> np.ndarray | None:
        """Local ids a part keeps (None: all)."""
        if part not in self._kept_ids:
            keep = self.dataset.parts[part].keep
            self._kept_ids[part] = None if keep is None else np.flatnonzero(keep).astype(np.int64)
        return self._kept_ids[part]

    def epoch_ids(self, epoch: int) -> np.ndarray:
        """Global pair ids of the items epoch ``epoch`` trains on, in draw order (repeats allowed)."""
        mix = self.mix(epoch)
        starts = self.dataset.offsets[mix.parts]
        if mix.plan is None:
            pieces = []
            for part, start in zip(mix.parts, starts, strict=True):
                kept = self._kept(int(part))
                size = self.dataset.offsets[part + 1] - start
                pieces.append(start + (np.arange(size, dtype=np.int64) if kept is None else kept))
            return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
        drawn = np.asarray(mix.plan.sample(mix.plan_epoch), dtype=np.int64)
        plan_offsets = np.asarray(mix.plan.offsets, dtype=np.int64)
        if all(self._kept(int(p)) is None for p in mix.parts):
            # no pair filtered: plan id offsets[i] + j is pair j of direction i's shard
            direction = np.searchsorted(plan_offsets, drawn, side="right") - 1
            return drawn + (starts - plan_offsets[:-1])[direction]
        kept_global = np.concatenate(
            [
                start + (np.arange(n, dtype=np.int64) if (k := self._kept(int(p))) is None else k)
                for p, start, n in zip(mix.parts, starts, mix.kept, strict=True)
            ]
        )
        return kept_global[drawn]

    def sample(self, epoch: int) -> EpochSample:
        """The items of ``epoch`` with their lengths (what a planner cuts); the last epoch's is kept."""
        if self._last is not None and self._last[0] == epoch:
            return self._last[1]
        ids = self.epoch_ids(epoch)
        src = self.dataset.src_sizes[ids] if self.dataset.src_sizes is not None else np.zeros(len(ids), np.int32)
        tgt = self.dataset.tgt_sizes[ids] if self.dataset.tgt_sizes is not None else None
        dropped: dict[str, int] = {}
        for part in self.mix(epoch).parts:
            for reason, count in self.dataset.parts[part].filter_report.dropped.items():
                dropped[reason] = dropped.get(reason, 0) + count
        repeated = ids if self._may_repeat(epoch, ids) else None  # copies to spread (batching.copies)
        sample = EpochSample(ids, Sizes(src=src, tgt=tgt, copies=repeated), dropped)
        self._last = (epoch, sample)
        return sample

    def _may_repeat(self, epoch: int, ids: np.ndarray) -> bool:
        """Whether the items of ``epoch`` hold copies of one pair (only a sampling plan can draw them)."""
        mix = self.mix(epoch)
        if mix.plan is None:
            return False
        drawn = mix.plan.virtual_counts(mix.plan.virtual_epoch(mix.plan_epoch)[0])
        if mix.plan.config.upsample != "replacement" and not np.any(drawn > mix.kept):
            return False
        return copies.has_copies(ids)

    # ---------------------------------------------------------------- report
    def describe_epoch(self, epoch: int) -> str:
        """A table for people: per direction the shard read in ``epoch``, its pairs, and the sampling plan."""
        mix = self.mix(epoch)
        ds = self.dataset
        rows = [("direction", "shard", "pairs", "kept", "drawn")]
        counts = self.counts(epoch)
        for d, (name, part) in enumerate(zip(ds.directions, mix.parts, strict=True)):
            shard = int(ds.part_shard[part])
            label = f"{ds.folders[d][shard]} ({shard + 1}/{len(ds.shards[d])})"
            rows.append((name, label, str(len(ds.parts[part])), str(int(mix.kept[d])), str(int(counts[d]))))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        where = f"data pass {mix.data_epoch}"
        if mix.plan is not None and mix.plan.num_slices > 1:
            where += f", slice {mix.slice_index + 1} of {mix.plan.num_slices}"
        lines = [f"epoch {epoch} ({where}), {int(np.sum(counts))} items:"]
        for r in rows:
            cells = (c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
            lines.append("  ".join(cells).rstrip())
        if mix.plan is not None:
            lines.append("")
            lines.append(mix.plan.table())
        return "\n".join(lines)

    def report(self, epoch: int) -> dict[str, Any]:
        """What :meth:`describe_epoch` prints, as JSON-able data."""
        mix = self.mix(epoch)
        ds = self.dataset
        counts = self.counts(epoch)
        return {
            "epoch": epoch,
            "data_epoch": mix.data_epoch,
            "slice": mix.slice_index,
            "directions": [
                {
                    "direction": name,
                    "shard": ds.folders[d][int(ds.part_shard[part])],
                    "pairs": len(ds.parts[part]),
                    "kept": int(mix.kept[d]),
                    "drawn": int(counts[d]),
                }
                for d, (name, part) in enumerate(zip(ds.directions, mix.parts, strict=True))
            ],
            "sampling": None if mix.plan is None else json.loads(json.dumps(mix.plan.to_dict(), default=_plain)),
        }




class SampledPlanner(Planner):
    """The ``planner=`` of a :class:`~tokenmill.loader.BatchIterator` over a :class:`MultiPairDataset`:
    a :class:`~tokenmill.batching.plan.Planner` whose selection is a :class:`SampledMix`.

    ``sampling`` None uses every kept pair of each epoch's shards once (no sampling).
    ``.plan(epoch)`` is an :class:`~tokenmill.batching.plan.EpochPlan` whose batches hold global
    pair ids; ``.fingerprint`` identifies data, sampling, batching and world size. The mix of an
    epoch (``mix``, ``counts``, ``describe_epoch``, ``report``) comes from ``self.mix_selection``.
    """

    def __init__(
        self,
        dataset: MultiPairDataset,
        config: BatchConfig | None = None,
        sampling: SamplingConfig | None = None,
        *,
        world_size: int = 1,
        cache: CacheLike = True,
        keep_epochs: int = 2,
    ) -> None:
        self.dataset = dataset
        self.sampling = sampling
        self.mix_selection = SampledMix(dataset, sampling)
        super().__init__(self.mix_selection, config or BatchConfig(), world_size=world_size, cache=cache,
                         keep_epochs=keep_epochs)

    def _init_args(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (self.dataset, self.config, self.sampling), {}

    def position(self, epoch: int) -> tuple[int, int]:
        """(data pass, slice) of training epoch ``epoch`` (:meth:`SampledMix.position`)."""
        return self.mix_selection.position(epoch)

    def mix(self, epoch: int) -> EpochMix:
        """Shards and sampling plan of training epoch ``epoch``."""
        return self.mix_selection.mix(epoch)

    def counts(self, epoch: int) -> np.ndarray:
        """Items each direction gives to training epoch ``epoch``."""
        return self.mix_selection.counts(epoch)

    def epoch_ids(self, epoch: int) -> np.ndarray:
        """Global pair ids of the items epoch ``epoch`` trains on, in draw order."""
        return self.mix_selection.epoch_ids(epoch)

    def describe_epoch(self, epoch: int) -> str:
        """The epoch's mix as a table for people."""
        return self.mix_selection.describe_epoch(epoch)

    def report(self, epoch: int) -> dict[str, Any]:
        """The epoch's mix as JSON-able data."""
        return self.mix_selection.report(epoch)


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON-able: {type(value).__name__}")


__all__ = ["EpochMix", "SampledMix", "SampledPlanner"]
