"""Exact deduplication of pairs and removal of train pairs that leak into valid/test.

Keys are 64-bit xxh3 hashes: ``side_hashes`` hashes each line's UTF-8 bytes; ``pair_hashes`` hashes
the target with the source's hash as seed, so the pair key depends on both sides and no separator
can be confused with text (``"a\\tb" + "c"`` and ``"a" + "b\\tc"`` are different pairs). Hashes are
cheap and picklable, so parallel workers can compute them and one process can dedup in input order.

:class:`HashSet` is an open-addressing table of uint64 in one numpy array (at most 16 bytes per
distinct key at its 0.5 load limit; a Python set of ints needs ~70), probed vectorized for a whole
chunk at a time. Two different pairs share a key with probability ~n^2 / 2^65 (about 3e-4 for 100M
distinct pairs): then the later one is dropped as a duplicate.

Deduplication is deterministic: within the stream, the first occurrence of a pair is kept, later
ones are dropped, whatever the chunk sizes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Literal

import numpy as np
import xxhash

from tokenmill.errors import ConfigError
from tokenmill.text.stats import StepStats

LeakageMode = Literal["pair", "source", "target", "either"]
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def side_hashes(lines: Sequence[str]) -> np.ndarray:
    """uint64 xxh3_64 of each line's UTF-8 bytes."""
    try:  # the plain encoder is ~2x faster and gives the same bytes unless a line holds a lone surrogate
        return np.fromiter(map(xxhash.xxh3_64_intdigest, map(str.encode, lines)), dtype=np.uint64, count=len(lines))
    except UnicodeEncodeError:
        encoded = map(str.encode, lines, repeat("utf-8"), repeat("surrogatepass"))
        return np.fromiter(map(xxhash.xxh3_64_intdigest, encoded), dtype=np.uint64, count=len(lines))


def pair_hashes(src: Sequence[str], tgt: Sequence[str], src_hashes: np.ndarray | None = None) -> np.ndarray:
    """uint64 key per pair: xxh3_64 of the target's UTF-8 bytes seeded with the source's hash."""
    if len(src) != len(tgt):
        raise ValueError(f"source has {len(src)} items but target has {len(tgt)}")
    seeds = (side_hashes(src) if src_hashes is None else src_hashes).tolist()
    try:  # as in side_hashes
        return np.fromiter(map(xxhash.xxh3_64_intdigest, map(str.encode, tgt), seeds), dtype=np.uint64, count=len(tgt))
    except UnicodeEncodeError:
        encoded = map(str.encode, tgt, repeat("utf-8"), repeat("surrogatepass"))
        return np.fromiter(map(xxhash.xxh3_64_intdigest, encoded, seeds), dtype=np.uint64, count=len(tgt))


def first_occurrences(keys: np.ndarray) -> np.ndarray:
    """int64 position of the first occurrence of each distinct key in ``keys`` (in the order of the keys' values).

    Depends on the keys alone, so a worker can find it for its own range and hand it to
    :meth:`HashSet.add` / :meth:`Deduplicator.keep_first` with the keys (the parent then need not sort)."""
    keys = np.asarray(keys, dtype=np.uint64)
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(keys)  # not stable (faster): the earliest position of a run of equal keys is its minimum
    ordered = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    return np.minimum.reduceat(order, starts).astype(np.int64, copy=False)


class HashSet:
    """A set of uint64 keys in a numpy open-addressing table (linear probing, vectorized)."""

    def __init__(self, capacity: int = 1 << 16, max_load: float = 0.5) -> None:
        if not 0.1 <= max_load <= 0.9:
            raise ConfigError(f"max_load={max_load} must be within [0.1, 0.9]")
        self.max_load = max_load
        self._bits = max(4, int(np.ceil(np.log2(max(capacity, 1) / max_load))))
        self._table = np.zeros(1 << self._bits, dtype=np.uint64)  # 0 marks an empty slot
        self._count = 0  # keys stored in the table (key 0 is tracked apart)
        self._has_zero = False

    def __len__(self) -> int:
        return self._count + self._has_zero

    @property
    def nbytes(self) -> int:
        """Bytes held by the table."""
        return int(self._table.nbytes)

    def _slots(self, keys: np.ndarray) -> np.ndarray:
        """Home slot: Fibonacci hashing (multiply, keep the top bits); fine for any key distribution."""
        with np.errstate(over="ignore"):
            return ((keys * _GOLDEN) >> np.uint64(64 - self._bits)).astype(np.int64)

    def add(self, keys: np.ndarray, firsts: np.ndarray | None = None) -> np.ndarray:
        """Insert ``keys``; True where a key was not in the set before (first occurrence in the batch).
        ``firsts``: :func:`first_occurrences` of ``keys`` when the caller has it (e.g. from a worker process)."""
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        new = np.zeros(len(keys), dtype=bool)
        if not len(keys):
            return new
        firsts = first_occurrences(keys) if firsts is None else np.asarray(firsts, dtype=np.int64)
        zero = firsts[keys[firsts] == 0]
        if len(zero) and not self._has_zero:
            new[zero] = True
            self._has_zero = True
        firsts = firsts[keys[firsts] != 0]
        self._reserve(self._count + len(firsts))
        new[firsts] = self._insert(keys[firsts])
        return new

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """True where a key is in the set."""
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        out = np.zeros(len(keys), dtype=bool)
        mask = len(self._table) - 1
        active = np.flatnonzero(keys != 0)
        out[keys == 0] = self._has_zero
        pos = self._slots(keys[active])
        want = keys[active]
        while len(active):
            slot = self._table[pos]
            hit = slot == want
            out[active[hit]] = True
            go_on = ~hit & (slot != 0)
            active, want, pos = active[go_on], want[go_on], (pos[go_on] + 1) & mask
        return out

    def __contains__(self, key: int) -> bool:
        return bool(self.contains(np.array([key], dtype=np.uint64))[0])

    def _insert(self, keys: np.ndarray) -> np.ndarray:
        """Insert distinct non-zero keys (room reserved); True for keys that were absent.

        Each round, every key still probing looks at its slot: its own key ends the probe (present),
        another key moves it on, an empty slot is claimed. Keys claiming the same empty slot all write
        there and the one that reads itself back has it (the keys are distinct: exactly one does, whichever
        write numpy kept); the others find it taken by another key and move on."""
        table, mask = self._table, len(self._table) - 1
        inserted = np.zeros(len(keys), dtype=bool)
        active = np.arange(len(keys))
        want = keys
        pos = self._slots(keys)
        while len(active):
            slot = table[pos]
            claim = np.flatnonzero(slot == 0)
            if len(claim):
                where, claimed = pos[claim], want[claim]
                table[where] = claimed
                slot[claim] = table[where]  # the winner reads itself back: probe done
                inserted[active[claim[slot[claim] == claimed]]] = True
            go_on = slot != want
            active, want, pos = active[go_on], want[go_on], (pos[go_on] + 1) & mask
        self._count += int(np.count_nonzero(inserted))
        return inserted

    def reserve(self, count: int) -> None:
        """Make room for ``count`` keys in all now: a caller that knows how many keys will come (an upper bound,
        e.g. the items of a split) saves the doublings, each a new table and a rehash."""
        self._reserve(count)

    def _reserve(self, count: int) -> None:
        """Grow (doubling) so that ``count`` keys stay under the load limit; rehashes vectorized."""
        if count <= self.max_load * len(self._table):
            return
        old = self._table[self._table != 0]
        while count > self.max_load * (1 << self._bits):
            self._bits += 1
        self._table = np.zeros(1 << self._bits, dtype=np.uint64)
        self._count = 0
        self._place(old)

    def _place(self, keys: np.ndarray) -> None:
        """Put distinct non-zero keys into the empty table without probing: in the order of their home slots,
        linear probing puts key ``i`` at ``max(home[i], slot[i - 1] + 1)``, i.e. ``i + cummax(home - i)``; the
        few that run past the table's end (they would wrap round) are inserted by probing."""
        home = self._slots(keys)
        order = np.argsort(home, kind="stable")  # a table's keys come nearly in home order: timsort's best case
        home = home[order]
        shift = np.arange(len(home), dtype=np.int64)
        slots = np.maximum.accumulate(home - shift) + shift
        fits = slots < len(self._table)
        self._table[slots[fits]] = keys[order[fits]]
        self._count = int(np.count_nonzero(fits))
        if not fits.all():
            self._insert(keys[order[~fits]])

    def update(self, keys: np.ndarray) -> None:
        """Insert keys, ignoring which were new."""
        self.add(keys)


class Deduplicator:
    """Streaming exact dedup: feed chunks in input order; the first occurrence of a pair is kept."""

    def __init__(self, capacity: int = 1 << 20) -> None:
        self.seen = HashSet(capacity)

    def reserve(self, count: int) -> None:
        """Size the table for ``count`` keys at once (see :meth:`HashSet.reserve`)."""
        self.seen.reserve(count)

    def keep_first(
        self, keys: np.ndarray, stats: StepStats | None = None, firsts: np.ndarray | None = None
    ) -> np.ndarray:
        """Keep mask for precomputed keys (``pair_hashes`` or ``side_hashes`` for monolingual text); ``firsts``:
        their :func:`first_occurrences` when a worker found them already."""
        keep = self.seen.add(keys, firsts)
        if stats is not None:
            stats.add("pairs", len(keep))
            stats.add("duplicates", int(len(keep) - keep.sum()))
        return keep

    def __call__(
        self, src: Sequence[str], tgt: Sequence[str] | None = None, stats: StepStats | None = None
    ) -> np.ndarray:
        """Keep mask for a chunk of pairs (or of lines, with ``tgt=None``)."""
        keys = side_hashes(src) if tgt is None else pair_hashes(src, tgt)
        return self.keep_first(keys, stats)


class LeakageFilter:
    """Drop train pairs whose source, target or whole pair also occurs in valid/test data.

    ``mode``: ``"pair"`` (the same pair), ``"source"`` (the same source sentence), ``"target"``,
    or ``"either"`` (the same source or the same target). Feed the held-out sets first with
    :meth:`add_reference`, then call the filter on train chunks.
    """

    def __init__(self, mode: LeakageMode = "pair") -> None:
        if mode not in ("pair", "source", "target", "either"):
            raise ConfigError(f"leakage mode {mode!r}: choose 'pair', 'source', 'target' or 'either'")
        self.mode = mode
        self.pairs = HashSet()
        self.sources = HashSet()
        self.targets = HashSet()

    def add_reference(self, src: Sequence[str], tgt: Sequence[str] | None = None) -> None:
        """Register held-out items (call once per valid/test chunk)."""
        hs = side_hashes(src)
        if self.mode in ("source", "either"):
            self.sources.update(hs)
        if tgt is None:
            if self.mode in ("pair",):
                self.pairs.update(hs)
            return
        if self.mode == "pair":
            self.pairs.update(pair_hashes(src, tgt, hs))
        if self.mode in ("target", "either"):
            self.targets.update(side_hashes(tgt))

    def add_reference_chunks(self, chunks: Iterable[tuple[Sequence[str], Sequence[str] | None]]) -> None:
        """Register many held-out chunks, e.g. ``((c.src, c.tgt) for c in source.chunks())``."""
        for src, tgt in chunks:
            self.add_reference(src, tgt)

    @property
    def empty(self) -> bool:
        """No held-out item registered (nothing can leak: the filter keeps everything without hashing)."""
        return not (len(self.pairs) or len(self.sources) or len(self.targets))

    def nothing_leaked(self, n: int, stats: StepStats | None = None) -> np.ndarray:
        """The keep mask of ``n`` items when nothing is registered (:attr:`empty`), counted as a call is."""
        if stats is not None:
            stats.add("leaked", 0)
        return np.ones(n, dtype=bool)

    def __call__(
        self,
        src: Sequence[str],
        tgt: Sequence[str] | None = None,
        stats: StepStats | None = None,
        *,
        keys: tuple[np.ndarray, np.ndarray | None] | None = None,
    ) -> np.ndarray:
        """Keep mask: False for train items found in the held-out sets. ``keys``: (``side_hashes(src)``,
        ``pair_hashes(src, tgt)`` or None) when the caller has them already (dedup hashes the same)."""
        if self.empty:
            return self.nothing_leaked(len(src), stats)
        hs = side_hashes(src) if keys is None else keys[0]
        if tgt is None:
            leaked = (self.pairs if self.mode == "pair" else self.sources).contains(hs)
        elif self.mode == "pair":
            pairs = keys[1] if keys is not None and keys[1] is not None else pair_hashes(src, tgt, hs)
            leaked = self.pairs.contains(pairs)
        else:
            leaked = np.zeros(len(src), dtype=bool)
            if self.mode in ("source", "either"):
                leaked |= self.sources.contains(hs)
            if self.mode in ("target", "either"):
                leaked |= self.targets.contains(side_hashes(tgt))
        if stats is not None:
            stats.add("leaked", int(leaked.sum()))
        return ~leaked


__all__ = [
    "Deduplicator",
    "HashSet",
    "LeakageFilter",
    "LeakageMode",
    "first_occurrences",
    "pair_hashes",
    "side_hashes",
]
