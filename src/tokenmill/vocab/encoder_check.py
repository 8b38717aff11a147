"""The proof a fast encoder owes every run: a sample of the run's own documents, encoded by the fast encoder
and by the reference library, must match id for id.

The sample is taken while the documents stream past the encoder (:meth:`CheckSample.tap`, no extra read),
and is a pure function of the documents and the seed, whatever the chunking:

* ``docs`` documents at random: the ones whose input position has the smallest seeded hash;
* ``docs // 4`` more at random among the documents that are not plain ASCII (other scripts, symbols, emoji);
* the longest documents (at most :data:`LONGEST` of them, and at most :data:`LONGEST_CHARS` characters
  together, but always the longest one);
* the first :data:`SPECIAL_DOCS` documents holding the text of a special or added token;

the random part within a fixed budget of characters (:data:`BUDGET_CHARS`), the special-text part within a
quarter of it, the longest part within :data:`LONGEST_CHARS` (always the first document of each part). The
budgets do not grow with the corpus: the sample is chosen for what it holds (the longest documents, other
scripts, special-token text, a spread of random ones), and the reference library's pass over it costs about
the same (~1 CPU second) on 1 MB or 1 TB of input.

The check itself (:func:`check_sample`) encodes the sample with both and says whether every id list is
equal, and where the first difference is.
"""

from __future__ import annotations

import operator
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise, repeat
from typing import Any

import numpy as np

from tokenmill.vocab.tokenizer import Tokenizer

LONGEST = 16
"""At most this many of the longest documents join the sample..."""
LONGEST_CHARS = 1 << 19
"""...and at most this many characters of them (the longest one always)."""
SPECIAL_DOCS = 64
"""Documents holding special-token text that join the sample (the first ones met)."""
FEW_SPECIALS = 4
"""Up to this many special texts, documents are searched for each with ``in``; more, with one regex."""
BUDGET_CHARS = 1 << 19
"""The random part of the sample holds at most this many characters (the special-text part a quarter of it),
whatever the stage's size: the reference library's pass over the sample is a fixed cost of the run."""
CHECK_CALL_CHARS = 1 << 18
"""Characters per encode call of the check (each encoder's whole sample in one call would hold the reference
library's per-token objects for all of it at once)."""
_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(index: np.ndarray, seed: int) -> np.ndarray:
    """A seeded 64-bit hash of each input position (splitmix64's finalizer): the random order of the sample."""
    with np.errstate(over="ignore"):
        z = index.astype(np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return (z ^ (z >> np.uint64(31))) & _MASK


class _BottomK:
    """The ``k`` documents of smallest hash seen so far (ties cannot happen: positions are distinct)."""

    def __init__(self, k: int, seed: int) -> None:
        self.k, self.seed = k, seed
        self.keys = np.empty(0, dtype=np.uint64)
        self.items: list[tuple[int, str]] = []

    def add(self, positions: np.ndarray, chunk: Sequence[str], base: int) -> None:
        if self.k <= 0 or not len(positions):
            return
        keys = _mix(positions, self.seed)
        if len(positions) > self.k:  # only this chunk's k smallest can join
            smallest = np.argpartition(keys, self.k)[: self.k]
            positions, keys = positions[smallest], keys[smallest]
        if len(self.keys) >= self.k:
            wanted = keys < self.keys.max()
            positions, keys = positions[wanted], keys[wanted]
            if not len(positions):
                return
        all_keys = np.concatenate([self.keys, keys])
        items = self.items + [(int(p), chunk[int(p) - base]) for p in positions.tolist()]
        keep = np.argsort(all_keys, kind="stable")[: self.k]
        self.keys = all_keys[keep]
        self.items = [items[i] for i in keep.tolist()]


@dataclass
class CheckResult:
    """What the check found: how many documents and characters, and the first document that differs."""

    documents: int
    characters: int
    mismatches: int
    first_mismatch: int | None
    """Input position (0-based) of the first differing document, None when all match."""
    seconds: float = 0.0
    """Wall seconds the check took (both encoders on the sample): its share of the stage's time."""

    @property
    def matched(self) -> bool:
        return self.mismatches == 0

    def record(self) -> dict[str, Any]:
        return {"documents": self.documents, "characters": self.characters, "mismatches": self.mismatches,
                "first_mismatch": self.first_mismatch, "matched": self.matched, "seconds": round(self.seconds, 3)}


class CheckSample:
    """The sample of one encode stage's documents, gathered as they stream past (see the module)."""

    def __init__(self, docs: int, seed: int, special_texts: Iterable[str] = ()) -> None:
        self.random = _BottomK(docs, seed)
        self.scripts = _BottomK(docs // 4, seed + 1)
        self.specials = tuple(sorted({t for t in special_texts if t}))
        # one search per document for any of the texts (a literal alternation, longest first): ~10x faster
        # than scanning the chunk joined, or each document for each text's first characters
        self._special_text = re.compile("|".join(map(re.escape, sorted(self.specials, key=len, reverse=True))))
        self.special: list[tuple[int, str]] = []
        self.longest: list[tuple[int, int, str]] = []  # (-length, position, text)
        self.seen = 0

    def tap(self, chunks: Iterable[Sequence[str]]) -> Iterator[Sequence[str]]:
        """``chunks`` unchanged, each observed on its way (call in input order)."""
        for chunk in chunks:
            self.observe(chunk)
            yield chunk

    def observe(self, chunk: Sequence[str]) -> None:
        base, n = self.seen, len(chunk)
        self.seen += n
        if not n:
            return
        positions = np.arange(base, base + n, dtype=np.int64)
        self.random.add(positions, chunk, base)
        ascii_only = np.fromiter(map(str.isascii, chunk), dtype=bool, count=n)
        self.scripts.add(positions[~ascii_only], chunk, base)
        self._observe_longest(chunk, base)
        if len(self.special) < SPECIAL_DOCS and self.specials:
            self._observe_special(chunk, base)

    def _observe_longest(self, chunk: Sequence[str], base: int) -> None:
        lengths = np.fromiter(map(len, chunk), dtype=np.int64, count=len(chunk))
        top = np.argsort(-lengths, kind="stable")[:LONGEST].tolist()
        merged = sorted(self.longest + [(-int(lengths[i]), base + i, chunk[i]) for i in top])
        kept, chars = [], 0
        for item in merged[:LONGEST]:
            if kept and chars - item[0] > LONGEST_CHARS:
                break
            kept.append(item)
            chars -= item[0]
        self.longest = kept

    def _observe_special(self, chunk: Sequence[str], base: int) -> None:
        n = len(chunk)
        if len(self.specials) <= FEW_SPECIALS:  # str's own substring search, one pass per text: ~2x the regex
            holds = np.zeros(n, dtype=bool)
            for text in self.specials:
                holds |= np.fromiter(map(operator.contains, chunk, repeat(text)), dtype=bool, count=n)
        else:
            holds = np.fromiter(map(bool, map(self._special_text.search, chunk)), dtype=bool, count=n)
        for i in np.flatnonzero(holds)[: SPECIAL_DOCS - len(self.special)].tolist():
            self.special.append((base + i, chunk[i]))

    def budget(self) -> int:
        """The most characters the random part holds (see :data:`BUDGET_CHARS`)."""
        return BUDGET_CHARS

    def documents(self) -> list[tuple[int, str]]:
        """(input position, text) of every sampled document, once each, in input order: the longest ones (within
        :data:`LONGEST_CHARS`), the special-text ones (within a quarter of the budget), then the random ones in
        hash order (within the budget); the first of each part always."""
        keyed = sorted([(int(k), item) for k, item in zip(self.random.keys.tolist(), self.random.items, strict=True)]
                       + [(int(k), item) for k, item in zip(self.scripts.keys.tolist(), self.scripts.items,
                                                            strict=True)])
        chosen: dict[int, str] = {}
        budget = self.budget()
        for part, cap in (([(p, t) for _, p, t in self.longest], LONGEST_CHARS), (self.special, budget // 4),
                          ([item for _, item in keyed], budget)):
            used = 0
            for position, text in part:
                if position in chosen:
                    continue
                if used and used + len(text) > cap:
                    break
                chosen[position] = text
                used += len(text)
        return sorted(chosen.items())


def _encoded(tokenizer: Tokenizer, texts: list[str], num_threads: int) -> tuple[np.ndarray, np.ndarray]:
    """``tokenizer.encode_batch(texts)`` in calls of about :data:`CHECK_CALL_CHARS` characters: a reference
    library's per-token objects for the whole sample would be the largest memory of a run."""
    ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
    cuts = np.searchsorted(ends, np.arange(CHECK_CALL_CHARS, int(ends[-1]) if len(ends) else 0, CHECK_CALL_CHARS))
    bounds = [0, *sorted({int(c) + 1 for c in cuts if 0 <= c < len(texts) - 1}), len(texts)]
    parts = [tokenizer.encode_batch(texts[a:b], num_threads=num_threads) for a, b in pairwise(bounds) if b > a]
    if not parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate([f for f, _ in parts]).astype(np.int64, copy=False), np.concatenate([n for _, n in parts])


def check_sample(reference: Tokenizer, fast: Tokenizer, documents: Sequence[tuple[int, str]],
                 num_threads: int = 1) -> CheckResult:
    """Encode ``documents`` with both; equal when every document's id list is."""
    started = time.perf_counter()
    texts = [text for _, text in documents]
    ref_flat, ref_lengths = _encoded(reference, texts, num_threads)
    fast_flat, fast_lengths = _encoded(fast, texts, num_threads)
    chars = sum(map(len, texts))
    if np.array_equal(ref_lengths, fast_lengths) and np.array_equal(ref_flat, fast_flat):
        return CheckResult(len(texts), chars, 0, None, time.perf_counter() - started)
    ref_ends, fast_ends = np.cumsum(ref_lengths), np.cumsum(fast_lengths)
    differing = [
        i for i in range(len(texts))
        if not np.array_equal(ref_flat[ref_ends[i] - ref_lengths[i] : ref_ends[i]],
                              fast_flat[fast_ends[i] - fast_lengths[i] : fast_ends[i]])
    ]
    return CheckResult(len(texts), chars, len(differing), documents[differing[0]][0], time.perf_counter() - started)
