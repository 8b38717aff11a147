"""Selections: which items an epoch trains on, the first part of every plan.

A selection turns an epoch number into an :class:`EpochSample` (item ids with their lengths). A
planner cuts that sample into batches (:mod:`tokenmill.batching.cuts` for token-budget batches,
:mod:`tokenmill.batching.packed_pairs` for packed rows) and deals them to ranks, so any selection
goes with any cut:

* :class:`AllKept` — every item the dataset keeps, once per epoch (one direction, one shard);
* :class:`~tokenmill.batching.sampled.SampledMix` — a temperature/weight-sampled mix of many
  directions, the epoch's shard of each (fairseq's multilingual sampling).

A selection is a pure function of the epoch; its ``fingerprint`` names everything it depends on
(data and settings) and enters every plan's cache key and resume check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from tokenmill.batching.costs import Sizes


@dataclass
class EpochSample:
    """The items of one epoch: dataset ids and their lengths.

    ``ids`` None means every dataset id in order, with ``sizes.keep`` marking what is kept (the
    cut modes see the whole dataset, as fairseq's own order does); otherwise the plan batches
    ``len(ids)`` items by ``sizes`` and maps its order back through ``ids``, so batches hold dataset
    ids (an id drawn twice appears twice, as two items).
    """

    ids: np.ndarray | None
    """int64 dataset ids of the epoch's items, repeats allowed (None: all, see ``sizes.keep``)."""
    sizes: Sizes
    """Lengths of those items, aligned with ``ids`` (with ``ids`` None: of every dataset item)."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Items left out before the cut, by reason (reported in the plan's stats)."""

    def item_ids(self) -> np.ndarray:
        """The selected dataset ids, in selection order (kept items only)."""
        return self.sizes.kept_ids() if self.ids is None else np.asarray(self.ids)

    def item_sizes(self) -> tuple[np.ndarray, np.ndarray]:
        """Source and target lengths aligned with :meth:`item_ids` (a missing side: zeros)."""
        if self.ids is None:
            kept = self.sizes.kept_ids()
            src = self.sizes.src[kept]
            tgt = self.sizes.tgt[kept] if self.sizes.tgt is not None else np.zeros(len(kept), dtype=np.int32)
        else:
            src = np.asarray(self.sizes.src)
            tgt = np.asarray(self.sizes.tgt) if self.sizes.tgt is not None else np.zeros(len(src), dtype=np.int32)
        return src, tgt


class Selection(Protocol):
    """What a planner needs of a selection."""

    varies_by_epoch: bool
    """False: the same items every epoch (a cut that ignores the epoch may share one cached plan)."""

    def fingerprint(self) -> str:
        """Identifies the data and every selection setting."""
        ...

    def sample(self, epoch: int) -> EpochSample:
        """The items of ``epoch`` (1-based)."""
        ...


class SizedDataset(Protocol):
    """What :meth:`AllKept.over` reads of a dataset (a ``PairDataset``)."""

    src_sizes: np.ndarray | None
    tgt_sizes: np.ndarray | None
    keep: np.ndarray | None

    def __len__(self) -> int: ...

    def fingerprint(self) -> str: ...

    @property
    def filter_report(self) -> Any: ...


def plan_sizes(dataset: SizedDataset) -> Sizes:
    """The lengths a plan needs from a dataset (a missing side costs nothing)."""
    src = dataset.src_sizes
    if src is None:
        src = np.broadcast_to(np.int32(0), (len(dataset),))
    return Sizes(src=src, tgt=dataset.tgt_sizes, keep=dataset.keep)


class AllKept:
    """Every item the dataset keeps, once per epoch."""

    varies_by_epoch = False

    def __init__(self, sizes: Sizes, data_fingerprint: str, pre_dropped: dict[str, int] | None = None) -> None:
        self.sizes = sizes
        self.data_fingerprint = data_fingerprint
        self.pre_dropped = {k: int(v) for k, v in (pre_dropped or {}).items() if v}
        self.dataset: SizedDataset | None = None

    @classmethod
    def over(cls, dataset: SizedDataset) -> AllKept:
        """Every pair ``dataset`` (a ``PairDataset``) keeps; its length filter's drops reported with the plan."""
        selection = cls(plan_sizes(dataset), dataset.fingerprint(), dataset.filter_report.dropped)
        selection.dataset = dataset
        return selection

    def __getstate__(self) -> dict[str, Any]:  # DataLoader workers: a dataset travels by path, not by its arrays
        if self.dataset is not None:
            return {"dataset": self.dataset}
        return {"sizes": self.sizes, "data_fingerprint": self.data_fingerprint, "pre_dropped": self.pre_dropped}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "dataset" in state:
            made = AllKept.over(state["dataset"])
            self.__dict__.update(made.__dict__)
        else:
            AllKept.__init__(self, state["sizes"], state["data_fingerprint"], state["pre_dropped"])

    def fingerprint(self) -> str:
        return self.data_fingerprint

    def tokens_of(self, ids: np.ndarray) -> np.ndarray:
        """Tokens (both sides) of each item id."""
        tokens = np.asarray(self.sizes.src[ids], dtype=np.int64)
        return tokens + (0 if self.sizes.tgt is None else np.asarray(self.sizes.tgt[ids], dtype=np.int64))

    def sample(self, epoch: int) -> EpochSample:
        return EpochSample(None, self.sizes, dict(self.pre_dropped))


__all__ = ["AllKept", "EpochSample", "Selection", "plan_sizes"]
