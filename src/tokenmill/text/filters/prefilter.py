"""Chunk-wide numpy tests that rule out most lines before a costly pattern runs.

The slow rules (repeated words, repeated strings, common substrings, glued words) use backtracking
patterns or difflib whose cost grows with the square or cube of a line's length. Each has a *necessary*
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


class Codes:
    """The code points of a chunk's lines, with each position's line and distance to its line's end."""

    def __init__(self, lines: Sequence[str]) -> None:
        view = CharView(list(lines))
        self.count = len(lines)
        self.points = view.codepoints.astype(np.uint32, copy=False)
        self.line = np.repeat(np.arange(len(lines), dtype=np.int64), view.lengths)
        self.left = np.repeat(view.bounds[1:], view.lengths) - np.arange(len(self.points), dtype=np.int64)
        """characters from each position to its line's end (1 for the last one)."""

    def flags(self, pattern: str) -> np.ndarray:
        return np.take(class_table(pattern), self.points)

    def trigrams(self, points: np.ndarray | None = None) -> np.ndarray:
        """uint64 key of the three characters starting at each position (garbage where fewer than three are
        left in the line: mask with ``left >= 3``)."""
        p = (self.points if points is None else points).astype(np.uint64)
        nxt = np.concatenate([p[1:], np.zeros(1, np.uint64)])
        third = np.concatenate([p[2:], np.zeros(2, np.uint64)])
        return (p << np.uint64(42)) | (nxt << np.uint64(21)) | third

    def per_line_any(self, hit: np.ndarray) -> np.ndarray:
        """bool per line: some position of it has ``hit``."""
        out = np.zeros(self.count, dtype=bool)
        out[self.line[hit]] = True
        return out


def _repeats_within_lines(codes: Codes, keys: np.ndarray, where: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``where`` sorted by (line, key, position), and whether each repeats the one before it."""
    order = np.lexsort((where, keys[where], codes.line[where]))
    sorted_at = where[order]
    same = np.zeros(len(sorted_at), dtype=bool)
    if len(sorted_at) > 1:
        lines, grams = codes.line[sorted_at], keys[sorted_at]
        same[1:] = (lines[1:] == lines[:-1]) & (grams[1:] == grams[:-1])
    return sorted_at, same


def _line_starts(codes: Codes) -> np.ndarray:
    """bool per position: the first of its line."""
    first = np.ones(len(codes.points), dtype=bool)
    first[1:] = codes.line[1:] != codes.line[:-1]
    return first


def may_share_substring(src: Sequence[str], tgt: Sequence[str], share: float) -> np.ndarray:
    """Pairs where the source has at least ``share`` x the shorter length - 3 positions whose three characters
    also occur in the target: a common substring that long needs it (OpusFilter's common substring)."""
    a, b = Codes(src), Codes(tgt)
    out = np.ones(len(src), dtype=bool)
    if not len(a.points) or not len(b.points):
        return out
    mix = np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        a_keys = a.trigrams() * mix + a.line.astype(np.uint64)
        b_keys = b.trigrams() * mix + b.line.astype(np.uint64)
    a_ok, b_ok = a.left >= 3, b.left >= 3
    found = _members(a_keys[a_ok], np.sort(b_keys[b_ok]))
    shared = np.bincount(a.line[a_ok][found], minlength=len(src))
    lengths_a = np.bincount(a.line, minlength=len(src))
    lengths_b = np.bincount(b.line, minlength=len(tgt))
    shorter = np.minimum(lengths_a, lengths_b)
    needed = np.floor(share * shorter) - 3  # a common substring of k >= share*shorter chars has k - 2 trigrams
    return (shared >= needed) | (shorter < 6)


def _members(keys: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """bool per key: it is in ``sorted_set`` (binary search; numpy's hashing ``isin`` is slow on uint64)."""
    if not len(sorted_set):
        return np.zeros(len(keys), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_set, keys), len(sorted_set) - 1)
    return sorted_set[at] == keys


def string_repeat_starts(lines: Sequence[str], copies: int) -> tuple[np.ndarray, np.ndarray]:
    """(line, position in line) of every place a string repeated ``copies`` times can start (OpusFilter's
    repetition): a non-space character whose three characters occur ``copies`` times or more in the line.
    Sorted by line, then position."""
    codes = Codes(lines)
    if not len(codes.points):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    where = np.flatnonzero((codes.left >= 3) & ~codes.flags(r"\s"))
    keys = codes.trigrams()
    sorted_at, same = _repeats_within_lines(codes, keys, where)
    group = np.cumsum(~same) - 1
    size = np.bincount(group)[group]
    return _in_line(codes, np.sort(sorted_at[size >= copies]))


def word_repeat_starts(lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(line, position in line) of every place a match of bicleaner's repeated-words pattern ``X<space>X``
    can start: a word start (a word character after a non-word one) whose two characters, case folded,
    also start a later word that follows a space. Sorted by line, then position."""
    codes = Codes(lines)
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
    sorted_at, same = _repeats_within_lines(codes, keys, np.flatnonzero(start))
    if not len(sorted_at):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    group_starts = np.flatnonzero(~same)
    later = np.where(after_space[sorted_at], sorted_at, -1)
    last_after_space = np.maximum.reduceat(later, group_starts)[np.cumsum(~same) - 1]
    return _in_line(codes, np.sort(sorted_at[sorted_at < last_after_space]))


def _in_line(codes: Codes, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(line, offset within the line) of chunk-wide ``positions``."""
    lines = codes.line[positions]
    line_start = np.zeros(codes.count + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes.line, minlength=codes.count), out=line_start[1:])
    return lines, positions - line_start[lines]


def may_glue(lines: Sequence[str]) -> np.ndarray:
    """Lines with an uppercase letter followed by a lowercase one at two places or more (glued words)."""
    codes = Codes(lines)
    if not len(codes.points):
        return np.zeros(len(lines), dtype=bool)
    upper, lower = codes.flags(r"[[:upper:]]"), codes.flags(r"[[:lower:]]")
    pair = upper[:-1] & lower[1:] & (codes.left[:-1] >= 2)
    counts = np.bincount(codes.line[:-1][pair], minlength=codes.count)
    return counts >= 2


def class_counts(lines: Sequence[str], pattern: str) -> np.ndarray:
    """int64 per line: characters matching the one-character ``regex`` class ``pattern``."""
    view = CharView(list(lines))
    return view.per_line(np.take(class_table(pattern), view.codepoints))


__all__ = ["class_counts", "may_glue", "may_share_substring", "string_repeat_starts", "word_repeat_starts"]
