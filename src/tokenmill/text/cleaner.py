"""One object for the whole text clean-up of a chunk: normalize, filter, leakage, dedup.

The work splits in two so it can run on several processes without changing the result:

* :meth:`Cleaner.local` (any process, any order): normalize, filter, drop held-out leaks and hash
  what is left. Depends on the chunk only.
* :meth:`Cleaner.dedup` (one process, chunks in input order): first occurrence wins.

``cleaner(chunk)`` does both, for single-process use. Counters go to ``cleaner.stats`` (one
:class:`StepStats` per step: ``normalize``, ``filter``, ``leakage``, ``dedup``); workers' stats are
merged with :func:`tokenmill.text.stats.merge_all`.

What each step dropped is also sampled into ``cleaner.dropped`` (a
:class:`~tokenmill.text.drop_sample.DropSample`, reasons = the filter steps, ``leakage``, ``dedup``):
a few items per reason chosen by a hash of their line number, so the sample does not depend on
chunking or workers. A worker's per-chunk sample merges into the parent's with
``cleaner.dropped.merge(sample)``, like the stats. :meth:`Cleaner.local` returns a
:class:`CleanChunk` that carries the line numbers of its kept items, which is how
:meth:`Cleaner.dedup` names the lines of the duplicates it drops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from itertools import compress

import numpy as np

from tokenmill.text.decontaminate import Contamination, Decontaminator
from tokenmill.text.dedup import Deduplicator, LeakageFilter, pair_hashes, side_hashes
from tokenmill.text.drop_sample import DEFAULT_SIZE, DropSample
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
    decontaminate: Contamination | None = None  # drop items sharing an n-gram with these files

    def __repr__(self) -> str:
        """The dataclass repr, less ``decontaminate`` when it is off: runs without it keep their stage keys."""
        shown = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                 if f.name != "decontaminate" or self.decontaminate is not None]
        return f"{type(self).__name__}({', '.join(shown)})"


@dataclass
class CleanChunk(Chunk):
    """A chunk after :meth:`Cleaner.local`: also the 1-based line number of each kept item."""

    numbers: np.ndarray | None = None
    """int64 line numbers (``start + position + 1`` in the chunk as read) of ``src[i]``/``tgt[i]``."""


RESERVE_ITEMS = 1 << 23
"""The most items :meth:`Cleaner.reserve` sizes the dedup table for up front (2^24 slots: 128 MiB)."""


class Cleaner:
    """Applies a :class:`CleanConfig` to chunks; ``leakage`` (optional) holds the held-out sets.

    ``sample_size``: dropped items kept per reason in ``self.dropped`` (0: none, no extra work).
    """

    def __init__(
        self, config: CleanConfig | None = None, leakage: LeakageFilter | None = None, sample_size: int = DEFAULT_SIZE
    ) -> None:
        self.config = config or CleanConfig()
        self.filter = PairFilter(self.config.filters)
        self.leakage = leakage
        self.deduplicator = Deduplicator() if self.config.dedup else None
        contamination = self.config.decontaminate
        self.decontaminator = Decontaminator(contamination) if contamination is not None else None
        self.stats = {name: StepStats(name) for name in ("normalize", "filter", "decontaminate", "leakage", "dedup")}
        self.sample_size = sample_size
        self.dropped = DropSample(sample_size)

    def new_drop_sample(self) -> DropSample:
        """An empty sample with this cleaner's settings (a worker starts one per chunk, like its stats)."""
        return DropSample(self.sample_size, self.dropped.seed)

    def reserve(self, items: int) -> None:
        """Size the dedup table for ``items`` items at once (e.g. a split's line count, known before cleaning):
        one table instead of a doubling every time it fills, each a new table to fault in and a rehash.
        ``items`` is an upper bound (duplicates and filtered lines never reach the table), so at most
        ``RESERVE_ITEMS`` are reserved: a table sized up front is never more than 128 MiB larger than what
        growing would reach; beyond that, it grows as it fills."""
        if self.deduplicator is not None:
            self.deduplicator.reserve(min(items, RESERVE_ITEMS))

    @property
    def keeps_everything(self) -> bool:
        """Whether every item passes unchanged (nothing normalized, filtered, leak-checked or deduplicated):
        then the text may go to the tokenizer as read, with :meth:`local` only counting."""
        return not (self.config.normalize.enabled or self.filter.steps or self.leakage or self.deduplicator
                    or self.decontaminator)

    def local(self, chunk: Chunk, *, keys: bool = True) -> tuple[CleanChunk, np.ndarray | None]:
        """Normalize, filter and leak-check one chunk; returns it with the dedup keys of its items (None with
        ``keys=False``: a run without dedup need not hash every item)."""
        norm = self.config.normalize
        src = norm(chunk.src, self.stats["normalize"])
        tgt = None if chunk.tgt is None else norm(chunk.tgt, self.stats["normalize"])
        collapsed = norm.collapse_whitespace
        result = self.filter(src, tgt, stats=self.stats["filter"], collapsed=collapsed)
        keep = result.keep
        sampling = self.sample_size > 0
        if sampling:
            for reason, where in result.dropped.items():  # each drop under the first step that rejected it
                self.dropped.add(reason, line_numbers(chunk, where), src, tgt, where)
        if self.decontaminator is not None:
            self._decontaminate(chunk, src, tgt, keep)
        hashes = self._leak_check(chunk, src, tgt, keep, keys)
        numbers = line_numbers(chunk, np.flatnonzero(keep))  # the kept items' places: drop samples, provenance
        src, tgt = _pick(src, keep), (None if tgt is None else _pick(tgt, keep))
        extra = None if chunk.extra is None else _pick(chunk.extra, keep)
        if keys and hashes is None:
            hashes = side_hashes(src) if tgt is None else pair_hashes(src, tgt)
        return CleanChunk(chunk.start, chunk.n_read, src, tgt, extra, numbers=numbers), hashes

    def _leak_check(
        self, chunk: Chunk, src: list[str], tgt: list[str] | None, keep: np.ndarray, keys: bool
    ) -> np.ndarray | None:
        """Drop (in ``keep``) the kept items found in the held-out sets; count and sample them. Returns the dedup
        keys of the items still kept when they were hashed here for the check (``keys``), else None."""
        if self.leakage is None:
            return None
        if self.leakage.empty:  # no held-out set: nothing to pick or hash
            self.leakage.nothing_leaked(int(np.count_nonzero(keep)), self.stats["leakage"])
            return None
        idx = np.flatnonzero(keep)
        kept_src, kept_tgt = _pick(src, keep), (None if tgt is None else _pick(tgt, keep))
        found = None
        if keys or self.leakage.mode == "pair":  # hashed once, for the leakage and the dedup
            side = side_hashes(kept_src)
            found = (side, None if kept_tgt is None else pair_hashes(kept_src, kept_tgt, side))
        ok = self.leakage(kept_src, kept_tgt, self.stats["leakage"], keys=found)
        leaked = idx[~ok]
        keep[leaked] = False
        if self.sample_size > 0 and len(leaked):
            self.dropped.add("leakage", line_numbers(chunk, leaked), src, tgt, leaked)
        if keys and found is not None:
            return (found[0] if found[1] is None else found[1])[ok]
        return None

    def _decontaminate(self, chunk: Chunk, src: list[str], tgt: list[str] | None, keep: np.ndarray) -> None:
        """Drop (in ``keep``) the kept items that share an n-gram with the reference files; count and sample them."""
        assert self.decontaminator is not None
        idx = np.flatnonzero(keep)
        sides = [_pick(src, keep)] + ([] if tgt is None else [_pick(tgt, keep)])
        gone = idx[~self.decontaminator(sides, self.stats["decontaminate"])]
        keep[gone] = False
        if self.sample_size and len(gone):
            self.dropped.add("decontaminate", line_numbers(chunk, gone), src, tgt, gone)

    def dedup(self, chunk: Chunk, keys: np.ndarray) -> Chunk:
        """Drop items seen before (call in input order, in one process)."""
        numbers = getattr(chunk, "numbers", None)
        keep = self.dedup_keep(keys, numbers, chunk.src, chunk.tgt)
        if keep is None:
            return chunk
        src, tgt = _pick(chunk.src, keep), (None if chunk.tgt is None else _pick(chunk.tgt, keep))
        extra = None if chunk.extra is None else _pick(chunk.extra, keep)
        kept = None if numbers is None else numbers[keep]
        return CleanChunk(chunk.start, chunk.n_read, src, tgt, extra, numbers=kept)

    def dedup_keep(
        self, keys: np.ndarray, numbers: np.ndarray | None, src: Sequence[str], tgt: Sequence[str] | None,
        firsts: np.ndarray | None = None,
    ) -> np.ndarray | None:
        """The keep mask of :meth:`dedup` for items with dedup ``keys`` and 1-based line ``numbers``; None when
        every item is kept. Dropped items are offered to the drop sample (only their texts are read).
        ``firsts``: :func:`~tokenmill.text.dedup.first_occurrences` of ``keys`` when a worker found it already."""
        if self.deduplicator is None:
            return None
        keep = self.deduplicator.keep_first(keys, self.stats["dedup"], firsts)
        if keep.all():
            return None
        if numbers is not None and self.sample_size:
            gone = np.flatnonzero(~keep)
            self.dropped.add("dedup", numbers[gone], src, tgt, gone)
        return keep

    def __call__(self, chunk: Chunk) -> Chunk:
        return self.dedup(*self.local(chunk))


def line_numbers(chunk: Chunk, where: np.ndarray) -> np.ndarray:
    """1-based item numbers of the chunk's items at ``where`` (items skipped while reading counted)."""
    positions = where if chunk.positions is None else chunk.positions[where]
    return chunk.start + np.asarray(positions, dtype=np.int64) + 1


def _pick(items: list[str], keep: np.ndarray) -> list[str]:
    return list(compress(items, keep.tolist()))


__all__ = ["CleanChunk", "CleanConfig", "Cleaner"]
