"""The collate of a many-direction batch: the usual fairseq or OpenNMT batch plus each row's direction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokenmill.batching.collate import COLLATERS
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.errors import ConfigError


@dataclass(frozen=True)
class MultiCollate:
    """A BatchIterator ``collate`` for a :class:`MultiPairDataset`: the usual batch plus each row's direction.

    ``name`` is ``"fairseq"`` or ``"opennmt"``. fairseq batches get ``batch["direction"]`` (int64,
    row order = ``batch["id"]``'s); OpenNMT batches get ``features["direction"]`` (rows keep batch
    order). Direction ``i`` is ``dataset.directions[i]``.
    """

    name: str = "fairseq"
    """Which collater: ``"fairseq"`` or ``"opennmt"``."""
    options: Any = None
    """:class:`~tokenmill.batching.collate.CollateOptions` (None: the defaults)."""

    def __call__(self, dataset: MultiPairDataset, indices: Any) -> Any:
        if self.name not in COLLATERS:
            raise ConfigError(f"collate {self.name!r} is unknown; choose {sorted(COLLATERS)}")
        batch = COLLATERS[self.name](dataset, indices, self.options)  # type: ignore[arg-type]
        if self.name == "fairseq":
            batch["direction"] = dataset.direction_of(batch["id"])
        else:
            batch[0]["direction"] = dataset.direction_of(indices)
        return batch


__all__ = ["MultiCollate"]
