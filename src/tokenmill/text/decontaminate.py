"""Decontamination: drop training items that share a word n-gram with given evaluation files (FLORES, WMT ...).

Words are the ``\\w+`` runs of the casefolded text (punctuation and case do not hide a copy). Every word is
hashed (xxh3_64 of its UTF-8 bytes) and every run of ``n`` consecutive words of a line becomes one uint64
key, a polynomial of its word hashes modulo 2^64 computed for a whole chunk at once from prefix sums (no
loop per n-gram); a line of fewer than ``n`` words is one key of all its words, so a short test sentence is
still found when a training line equals it. The reference keys are built once from the files, sorted and
unique (a few MB even for large test sets); an item is contaminated when any of its keys is among them
(``np.isin`` over the chunk). Keys depend on the text alone: the result is the same for any chunking,
worker or task count. Two different n-grams share a key with probability ~2^-64 per pair compared.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np
import xxhash

from tokenmill.errors import ConfigError
from tokenmill.text.stats import StepStats

_P = 0x100000001B3  # odd, so invertible modulo 2^64
_MASK = (1 << 64) - 1


@functools.cache
def _inverse() -> int:
    """The inverse of the polynomial base modulo 2^64 (Newton's iteration)."""
    inv = _P
    for _ in range(7):
        inv = (inv * (2 - _P * inv)) & _MASK
    return inv


def _powers(base: int, count: int) -> np.ndarray:
    """uint64 ``base**0 .. base**(count-1)`` modulo 2^64."""
    out = np.full(count, base, dtype=np.uint64)
    if count:
        out[0] = 1
    with np.errstate(over="ignore"):
        return np.cumprod(out, dtype=np.uint64)


_WORD = re.compile(r"\w+")


def line_keys(lines: Sequence[str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(uint64 keys, int64 line index of each key) of ``lines``: their word ``n``-grams, or one key of all
    the words of a line with fewer than ``n`` (none for a line without words)."""
    words = list(map(_WORD.findall, map(str.casefold, lines)))
    per_line = np.fromiter(map(len, words), dtype=np.int64, count=len(lines))
    flat = list(chain.from_iterable(words))
    if not flat:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    hashes = np.fromiter(map(xxhash.xxh3_64_intdigest, map(str.encode, flat, repeat("utf-8"), repeat("surrogatepass"))),
                         dtype=np.uint64, count=len(flat))
    total = len(flat)
    with np.errstate(over="ignore"):
        prefix = np.cumsum(hashes * _powers(_inverse(), total), dtype=np.uint64)  # sum w[j] * P^-j
        up = _powers(_P, total)
    starts = np.zeros(len(lines), dtype=np.int64)
    np.cumsum(per_line[:-1], out=starts[1:])
    width = np.minimum(per_line, n)  # a key spans n words, or the whole of a shorter line
    grams = np.where(per_line > 0, np.maximum(per_line - n + 1, 1), 0)
    owner = np.repeat(np.arange(len(lines), dtype=np.int64), grams)
    first = np.repeat(starts - np.cumsum(grams) + grams, grams) + np.arange(len(owner), dtype=np.int64)
    span = width[owner]
    last = first + span - 1
    with np.errstate(over="ignore"):
        before = np.where(first > 0, prefix[np.maximum(first - 1, 0)], np.uint64(0))
        keys = (prefix[last] - before) * up[last]  # sum w[j] * P^(last - j): the same wherever the words are
    return keys, owner


@dataclass(frozen=True)
class Contamination:
    """Settings of decontamination: the reference files, the n-gram length and a digest of the files'
    contents (so a stage key changes when a file does)."""

    files: tuple[str, ...]
    ngram: int = 13
    digest: str = ""

    @classmethod
    def of_files(cls, files: Iterable[str], ngram: int) -> Contamination:
        """The settings for ``files`` (as absolute paths: a task process started elsewhere, given the run's
        settings with absolute paths, finds the same key), their contents digested (each file read once here)."""
        paths = tuple(os.path.abspath(path) for path in files)
        digest = xxhash.xxh3_128()
        for path in paths:
            try:
                with open(path, "rb") as handle:
                    for block in iter(lambda h=handle: h.read(1 << 20), b""):
                        digest.update(block)
            except OSError as error:
                raise ConfigError(f"--decontaminate: {path}: cannot read it ({error.strerror})") from None
            digest.update(b"\0")
        return cls(paths, ngram, digest.hexdigest())


class Decontaminator:
    """The reference n-gram keys of a :class:`Contamination`, and the test of chunks against them."""

    def __init__(self, settings: Contamination) -> None:
        self.settings = settings
        found: list[np.ndarray] = []
        for path in settings.files:
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    while lines := [line.rstrip("\r\n") for _, line in zip(range(65536), handle, strict=False)]:
                        found.append(line_keys(lines, settings.ngram)[0])
            except OSError as error:
                raise ConfigError(f"--decontaminate: {path}: cannot read it ({error.strerror})") from None
        self.keys = np.unique(np.concatenate(found)) if found else np.zeros(0, np.uint64)

    def contaminated(self, lines: Sequence[str]) -> np.ndarray:
        """bool per line: it shares a key with the reference files."""
        bad = np.zeros(len(lines), dtype=bool)
        if not len(self.keys) or not len(lines):
            return bad
        keys, owner = line_keys(lines, self.settings.ngram)
        bad[owner[np.isin(keys, self.keys)]] = True
        return bad

    def __call__(self, sides: list[Sequence[str]], stats: StepStats) -> np.ndarray:
        """Keep mask of a chunk of items (one side or two): an item is dropped when any side is contaminated.
        Counts ``items``, ``contaminated`` and, per side, ``side_<i>``."""
        bad = np.zeros(len(sides[0]), dtype=bool)
        for i, side in enumerate(sides):
            hit = self.contaminated(side)
            stats.add(f"side_{i}", int(np.count_nonzero(hit)))
            bad |= hit
        stats.add("items", len(bad))
        stats.add("contaminated", int(np.count_nonzero(bad)))
        return ~bad


__all__ = ["Contamination", "Decontaminator", "line_keys"]
