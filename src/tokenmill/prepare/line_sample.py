"""The tokenizer's training sample: the ``k`` lines whose global line numbers have the smallest seeded hashes.

A line's chance depends only on (seed, its line number in the cleaned text), never on the lines before it
(a reservoir's sequential draws do), so the sample is splittable: any cut of the text into parts, each
sampled on its own with its first line number, and the parts' samples merged keeping the ``k`` smallest
keys, gives the lines one pass over the whole text keeps. The hash is the drop sample's SplitMix64
(:func:`~tokenmill.text.drop_sample.line_keys`): bijective per seed, so no two lines tie.

Per chunk: one vectorized hash of its line numbers and one comparison with the largest key kept; only the
lines below it are picked out (about ``k * (1 + ln(n / k))`` over ``n`` lines), and the candidates are cut
back to ``k`` whenever they reach ``2k``. A part of a larger text can start from a key limit
(:func:`key_limit`): the keys are spread evenly, so only about its share of ``k`` lines fall below it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tokenmill.errors import ConfigError
from tokenmill.text.drop_sample import line_keys

KEYS = 1 << 64


def key_limit(capacity: int, population: int) -> int | None:
    """A key below which, of ``population`` evenly spread keys, ``capacity`` plus a wide margin fall (8 standard
    deviations + 64): the ``capacity`` smallest keys of the whole text lie below it but for odds of about
    e^-32, so a part keeps only the lines under it (its share of the sample, not ``capacity`` lines). None
    when the margin covers the whole population. A merge that finds fewer than ``capacity`` keys below it
    must draw the sample in one pass instead (:func:`~tokenmill.prepare.sample_tasks.merged_sample`)."""
    wanted = capacity + 8 * math.sqrt(capacity) + 64
    if wanted >= population:
        return None
    return min(KEYS - 1, math.ceil(KEYS * wanted / population))


class SmallestKeys:
    """The ``capacity`` lines with the smallest ``line_keys(number, seed)`` among those added; numbers count
    on from ``first`` (the part's first global line number) unless a chunk gives its own. With ``limit`` only
    keys below it are kept (:func:`key_limit`)."""

    def __init__(self, capacity: int, seed: int = 0, first: int = 0, limit: int | None = None) -> None:
        if capacity <= 0:
            raise ConfigError(f"input_sentence_size must be positive, got {capacity}")
        self.capacity = int(capacity)
        self.seed = int(seed)
        self.seen = int(first)
        """The global number of the next line added."""
        self.keys = np.zeros(0, np.uint64)
        self.numbers = np.zeros(0, np.int64)
        self.lines: list[str] = []
        # the largest key of the last cut (or the part's limit): a line above it is never kept
        self._limit: np.uint64 | None = None if limit is None else np.uint64(limit)

    def add(self, lines: Sequence[str]) -> None:
        """The next chunk of lines (numbered on from :attr:`seen`)."""
        n = len(lines)
        if not n:
            return
        numbers = np.arange(self.seen, self.seen + n, dtype=np.int64)
        keys = line_keys(numbers, self.seed)
        picked = np.arange(n) if self._limit is None else np.flatnonzero(keys < self._limit)
        self.seen += n
        if not len(picked):
            return
        self.keys = np.concatenate([self.keys, keys[picked]])
        self.numbers = np.concatenate([self.numbers, numbers[picked]])
        self.lines.extend([lines[i] for i in picked.tolist()])
        if len(self.keys) >= 2 * self.capacity:
            self._cut()

    def merge(self, other: SmallestKeys) -> None:
        """Take another part's candidates (the parts' line numbers must not overlap)."""
        self.keys = np.concatenate([self.keys, other.keys])
        self.numbers = np.concatenate([self.numbers, other.numbers])
        self.lines.extend(other.lines)
        self.seen = max(self.seen, other.seen)
        self._cut()

    def _cut(self) -> None:
        if len(self.keys) > self.capacity:
            kept = np.argpartition(self.keys, self.capacity - 1)[: self.capacity]
            self.keys, self.numbers = self.keys[kept], self.numbers[kept]
            self.lines = [self.lines[i] for i in kept.tolist()]
        if len(self.keys) >= self.capacity:
            self._limit = self.keys.max()

    def sample(self) -> list[str]:
        """The kept lines in line order."""
        self._cut()
        order = np.argsort(self.numbers, kind="stable")
        return [self.lines[i] for i in order.tolist()]

    def to_arrays(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(keys, numbers, lines) of the candidates, cut to ``capacity``: what a part hands to the merge."""
        self._cut()
        return self.keys, self.numbers, self.lines


__all__ = ["KEYS", "SmallestKeys", "key_limit"]
