"""One object for the whole text clean-up of a chunk: normalize, filter, leakage, dedup.

The work splits in two so it can run on several processes without changing the result:

* :meth:`Cleaner.local` (any process, any order): normalize, filter, drop held-out leaks and hash
  what is left. Depends on the chunk only.
* :meth:`Cleaner.dedup` (one process, chunks in input order): first occurrence wins.

``cleaner(chunk)`` does both, for single-process use. Counters go to ``cleaner.stats`` (one
:class:`StepStats` per step: ``normalize``, ``filter``, ``leakage``, ``dedup``); workers' stats are
merged with :func:`tokenmill.text.stats.merge_all`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import compress

import numpy as np

from tokenmill.text.dedup import Deduplicator, LeakageFilter, pair_hashes, side_hashes
from tokenmill.text.filters import FilterConfig, PairFilter
from tokenmill.text.normalize import Normalizer
from tokenmill.text.readers import Chunk
from tokenmill.text.stats import StepStats


@dataclass(frozen=True)
class CleanConfig:
    """Settings of every clean-up step."""

    normalize: Normalizer = field(default_factory=Normalizer)  # unicode clean-up, see normalize.py
    filters: FilterConfig = field(default_factory=FilterConfig)  # pair filters, see filters.py
    dedup: bool = True  # drop exact duplicate pairs (first occurrence kept)


class Cleaner:
    """Applies a :class:`CleanConfig` to chunks; ``leakage`` (optional) holds the held-out sets."""

    def __init__(self, config: CleanConfig | None = None, leakage: LeakageFilter | None = None) -> None:
        self.config = config or CleanConfig()
        self.filter = PairFilter(self.config.filters)
        self.leakage = leakage
        self.deduplicator = Deduplicator() if self.config.dedup else None
        self.stats = {name: StepStats(name) for name in ("normalize", "filter", "leakage", "dedup")}

    def local(self, chunk: Chunk) -> tuple[Chunk, np.ndarray]:
        """Normalize, filter and leak-check one chunk; returns it with the dedup keys of its items."""
        norm = self.config.normalize
        src = norm(chunk.src, self.stats["normalize"])
        tgt = None if chunk.tgt is None else norm(chunk.tgt, self.stats["normalize"])
        collapsed = norm.collapse_whitespace
        keep = self.filter(src, tgt, stats=self.stats["filter"], collapsed=collapsed).keep
        if self.leakage is not None:
            idx = np.flatnonzero(keep)
            kept_src, kept_tgt = _pick(src, keep), (None if tgt is None else _pick(tgt, keep))
            keep[idx[~self.leakage(kept_src, kept_tgt, self.stats["leakage"])]] = False
        src, tgt = _pick(src, keep), (None if tgt is None else _pick(tgt, keep))
        extra = None if chunk.extra is None else _pick(chunk.extra, keep)
        keys = side_hashes(src) if tgt is None else pair_hashes(src, tgt)
        return Chunk(chunk.start, chunk.n_read, src, tgt, extra), keys

    def dedup(self, chunk: Chunk, keys: np.ndarray) -> Chunk:
        """Drop items seen before (call in input order, in one process)."""
        if self.deduplicator is None:
            return chunk
        keep = self.deduplicator.keep_first(keys, self.stats["dedup"])
        if keep.all():
            return chunk
        src, tgt = _pick(chunk.src, keep), (None if chunk.tgt is None else _pick(chunk.tgt, keep))
        extra = None if chunk.extra is None else _pick(chunk.extra, keep)
        return Chunk(chunk.start, chunk.n_read, src, tgt, extra)

    def __call__(self, chunk: Chunk) -> Chunk:
        return self.dedup(*self.local(chunk))


def _pick(items: list[str], keep: np.ndarray) -> list[str]:
    return list(compress(items, keep.tolist()))


__all__ = ["CleanConfig", "Cleaner"]
