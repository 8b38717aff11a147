"""Chunk-wide numpy tests that rule out most lines before a costly pattern runs, and the per-code-point
class tables the rules share.

The slow rules (repeated words, repeated strings) use backtracking patterns whose cost grows with the
square or cube of a line's length. Each has a *necessary*
condition that numpy checks for a whole chunk at once over its code points: a line (pair) that fails it
cannot be bad, so only the rest go through the exact test, and the decisions stay those of the exact test.
Character classes come from per-code-point tables built once from the ``regex`` package's own classes,
so they are the classes the exact patterns use.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence

import numpy as np

from tokenmill.text.charclass import CharView
from tokenmill.text.filters.registry import regex_module

REPEAT_LONGEST = 100
"""The longest repeated string OpusFilter's repetition filter looks for (its ``max_length`` default)."""


@functools.cache
def _every_char() -> str:
    cps = np.arange(sys.maxunicode + 1, dtype=np.uint32)
    cps[0xD800:0xE000] = 0
    return cps.tobytes().decode("utf-32-le")


@functools.cache
def class_table(pattern: str) -> np.ndarray:
    """bool per code point: the character matches the one-character ``regex`` class ``pattern``."""
    members = "".join(regex_module().compile(pattern).findall(_every_char()))
    table = np.zeros(sys.maxunicode + 1, dtype=bool)
    table[np.frombuffer(members.encode("utf-32-le"), dtype=np.uint32)] = True
    return table


@functools.cache
def fold_table() -> np.ndarray:
    """uint32 per code point: the first code point of its casefold, so that characters a case-insensitive
    match equates share a value (coarser is fine: it only lets more lines through to the exact test)."""
    folded = [c.casefold()[:1] or c for c in _every_char()]
    return np.frombuffer("".join(folded).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).copy()


@functools.cache
def folded_letter_length_table() -> np.ndarray:
    """uint8 per code point: the length of its casefold for a letter (Unicode L*, at most 3), 0 for anything
    else."""
    letters = class_table(r"\p{L}")
    table = np.zeros(sys.maxunicode + 1, dtype=np.uint8)
    where = np.flatnonzero(letters)
    table[where] = [len(chr(c).casefold()) for c in where.tolist()]
    return table


class Codes:
    """The code points of a chunk's lines, with each position's line and distance to its line's end."""

    def __init__(self, lines: Sequence[str], points: np.ndarray | None = None,
                 lengths: np.ndarray | None = None) -> None:
        """``points`` and ``lengths`` (the lines' code points one after another, and characters per line):
        given when the caller has them already, else taken from ``lines``."""
        if points is None or lengths is None:
            view = CharView(list(lines))
            points, lengths = view.codepoints, view.lengths
        self.count = len(lengths)
        self.starts = np.zeros(self.count + 1, dtype=np.int64)
        """where each line starts among the positions, then the number of positions."""
        np.cumsum(lengths, out=self.starts[1:])
        self.points = points.astype(np.uint32, copy=False)
        self.line = np.repeat(np.arange(self.count, dtype=np.int64), lengths)
        self.left = np.repeat(self.starts[1:], lengths) - np.arange(len(self.points), dtype=np.int64)
        """characters from each position to its line's end (1 for the last one)."""

    def flags(self, pattern: str) -> np.ndarray:
        return np.take(class_table(pattern), self.points)

    def trigrams(self, points: np.ndarray | None = None) -> np.ndarray:
        """uint64 key of the three characters starting at each position (garbage where fewer than three are
        left in the line: mask with ``left >= 3``)."""
        p = (self.points if points is None else points).astype(np.uint64)
        out = p << np.uint64(42)
        out[:-1] |= p[1:] << np.uint64(21)
        out[:-2] |= p[2:]
        return out

    def per_line_any(self, hit: np.ndarray) -> np.ndarray:
        """bool per line: some position of it has ``hit``."""
        out = np.zeros(self.count, dtype=bool)
        out[self.line[hit]] = True
        return out


def _repeats_within_lines(codes: Codes, keys: np.ndarray, where: np.ndarray,
                          least: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``where`` grouped by (line, key), in position order within a group, and whether each is in the
    group of the one before it; only groups of at least ``least`` positions. One stable sort of the line and a
    32-bit hash of the key packed in an int64: the positions come in line order, so the sort mostly orders
    short runs, cheaper than counting hash buckets in a table the size of the chunk (random writes). A hash
    collision can only put different keys together, which lets more places through to the exact test, never
    fewer."""
    with np.errstate(over="ignore"):
        hashed = ((keys[where] * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(32)).astype(np.int64)
    packed = (codes.line[where] << 32) | hashed
    order = np.argsort(packed, kind="stable")  # `where` is ascending: positions stay in order within a group
    sorted_at, ordered = where[order], packed[order]
    same = np.zeros(len(sorted_at), dtype=bool)
    same[1:] = ordered[1:] == ordered[:-1]
    if least > 1 and len(same):
        group = np.cumsum(~same) - 1
        keep = np.bincount(group)[group] >= least
        sorted_at, same = sorted_at[keep], _regrouped(same, keep)
    return sorted_at, same


_BASE = 0x100000001B3
_MAX_PAIRS = 1 << 22


_POWERS: dict[int, np.ndarray] = {}


def _powers(base: int, count: int) -> np.ndarray:
    """``base ** j`` modulo 2^64 for j < ``count``: computed once per process (grown by doubling when a chunk
    is longer than any before), as they do not depend on the text."""
    known = _POWERS.get(base)
    if known is None or len(known) < count:
        size = max(count, 2 * len(known) if known is not None else 1 << 16)
        out = np.full(size, base, dtype=np.uint64)
        out[:1] = 1
        with np.errstate(over="ignore"):
            known = _POWERS[base] = np.cumprod(out, dtype=np.uint64)
    return known[:count]


class _Windows:
    """Hashes of any stretch of a chunk's code points in O(1): ``(prefix sums of v[j] * B^-j) * B^end``
    modulo 2^64, the same value for the same characters wherever they are."""

    def __init__(self, values: np.ndarray) -> None:
        inverse = _BASE
        for _ in range(7):
            inverse = (inverse * (2 - _BASE * inverse)) & ((1 << 64) - 1)
        with np.errstate(over="ignore"):
            weighted = (values.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1))
            self.prefix = np.cumsum(weighted * _powers(inverse, len(values)), dtype=np.uint64)
        self.up = _powers(_BASE, len(values))

    def __call__(self, start: np.ndarray, length: np.ndarray) -> np.ndarray:
        last = start + length - 1
        with np.errstate(over="ignore"):
            before = np.where(start > 0, self.prefix[np.maximum(start - 1, 0)], np.uint64(0))
            return (self.prefix[last] - before) * self.up[last]


def window_hashes(values: np.ndarray) -> _Windows:
    """Hashes of any stretch of ``values`` (code points): ``window_hashes(v)(starts, lengths)``."""
    return _Windows(values)


def _copied_later(codes: Codes, values: np.ndarray, sorted_at: np.ndarray, same: np.ndarray, second: np.ndarray,
                  gap: np.ndarray, longest: int) -> np.ndarray:
    """Positions p (of ``sorted_at``, grouped by equal keys) for which a later q of the same group, with
    ``second[q]``, starts a copy of ``text[p : q - g]``, where g is the run of ``gap`` characters right
    before q (and that stretch is 1 to ``longest`` characters): what ``X<gap>X`` needs. Too many pairs to
    check: every position that has a later ``second`` in its group is returned (still a superset)."""
    group_start = np.maximum.accumulate(np.where(~same, np.arange(len(same)), 0))
    seconds = np.flatnonzero(second[sorted_at])
    earlier = seconds - group_start[seconds]
    if earlier.sum() > _MAX_PAIRS:
        last = np.maximum.reduceat(np.where(second[sorted_at], sorted_at, -1), np.flatnonzero(~same))
        return np.sort(sorted_at[sorted_at < last[np.cumsum(~same) - 1]])
    q = np.repeat(sorted_at[seconds], earlier)
    offsets = np.arange(int(earlier.sum())) - np.repeat(np.cumsum(earlier) - earlier, earlier)
    p = sorted_at[np.repeat(group_start[seconds], earlier) + offsets]
    others = np.flatnonzero(~gap)  # the gap before q ends at q - 1 and starts after the last other character
    last = np.searchsorted(others, q - 1, side="right") - 1
    length = np.where(last >= 0, others[np.maximum(last, 0)], -1) + 1 - p
    ok = (length >= 1) & (length <= longest) & (codes.left[q] >= length)
    windows = _Windows(values)
    p, q, length = p[ok], q[ok], length[ok]
    return np.unique(p[windows(p, length) == windows(q, length)])


def _line_starts(codes: Codes) -> np.ndarray:
    """bool per position: the first of its line."""
    first = np.ones(len(codes.points), dtype=bool)
    first[1:] = codes.line[1:] != codes.line[:-1]
    return first


def string_repeat_starts(lines: Sequence[str] | Codes, copies: int) -> tuple[np.ndarray, np.ndarray]:
    """(line, position in line) of every place a string repeated ``copies`` times can start (OpusFilter's
    repetition): a non-space character whose three characters occur ``copies`` times or more in the line.
    Sorted by line, then position."""
    codes = lines if isinstance(lines, Codes) else Codes(lines)
    if not len(codes.points):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    visible = (codes.left >= 3) & ~codes.flags(r"\s")
    sorted_at, same = _repeats_within_lines(codes, codes.trigrams(), np.flatnonzero(visible), copies)
    group = np.cumsum(~same) - 1
    size = np.bincount(group)[group]
    often = np.zeros(len(codes.points), dtype=bool)
    often[sorted_at[size >= copies]] = True  # the first three characters occur `copies` times in the line
    keep = often[sorted_at]
    sorted_at, same = sorted_at[keep], _regrouped(same, keep)
    spaces = codes.points == ord(" ")
    return _in_line(codes, _copied_later(codes, codes.points, sorted_at, same, often, spaces, REPEAT_LONGEST + 1))


def word_repeat_starts(lines: Sequence[str] | Codes) -> tuple[np.ndarray, np.ndarray]:
    """(line, position in line) of every place a match of bicleaner's repeated-words pattern ``X<space>X``
    can start: a word start (a word character after a non-word one) whose two characters, case folded,
    also start a later word that follows a space. Sorted by line, then position."""
    codes = lines if isinstance(lines, Codes) else Codes(lines)
    if not len(codes.points):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    first = _line_starts(codes)
    word, space = codes.flags(r"\w"), codes.flags(r"\s")
    before_word = np.concatenate([[False], word[:-1]])
    before_space = np.concatenate([[False], space[:-1]])
    start = word & (first | ~before_word) & (codes.left >= 2)
    after_space = start & before_space & ~first
    folded = np.take(fold_table(), codes.points).astype(np.uint64)
    keys = (folded << np.uint64(21)) | np.concatenate([folded[1:], np.zeros(1, np.uint64)])
    sorted_at, same = _repeats_within_lines(codes, keys, np.flatnonzero(start), 2)  # a repeat needs two
    if not len(sorted_at):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    folded_points = np.take(fold_table(), codes.points)
    return _in_line(codes, _copied_later(codes, folded_points, sorted_at, same, after_space, space, len(space)))


def _regrouped(same: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``same`` (each sorted position repeats the key before it) for the ``keep`` subset of the positions."""
    group = np.cumsum(~same)[keep]
    out = np.zeros(len(group), dtype=bool)
    out[1:] = group[1:] == group[:-1]
    return out


def _in_line(codes: Codes, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(line, offset within the line) of chunk-wide ``positions``."""
    lines = codes.line[positions]
    return lines, positions - codes.starts[lines]


__all__ = [
    "Codes",
    "class_table",
    "fold_table",
    "folded_letter_length_table",
    "string_repeat_starts",
    "window_hashes",
    "word_repeat_starts",
]
