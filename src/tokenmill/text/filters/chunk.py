"""The per-chunk intermediates the bitext rules share, computed once per side of a chunk.

Most rules look at the same things: the code points of the side's lines, per-line counts of a character
class (letters, digits, blanks ...), or whether a rare pattern occurs in a line. Instead of each rule joining
and encoding the lines again, :class:`ChunkText` holds them for the whole chunk, lazily: the lines joined
with ``"\\n"`` into one text, its code points (``np.frombuffer`` of UTF-32, or of ASCII when the chunk is
ASCII), where each line starts in it, per-position class masks from per-code-point tables and per-line
counts. A pattern that cannot match ``"\\n"`` runs once over the joined text; its matches are mapped back to
lines with ``numpy.searchsorted`` (a match cannot span two lines, as the separator cannot be part of it).

The filter hands a rule its lines as a :class:`Side`: the list of lines still kept (what the rule decides
on) that also carries the whole chunk's :class:`ChunkText` and the rows of the kept lines in it, so that the
intermediates are computed once for the chunk, whatever the rules dropped before. A rule called with a
plain list gets a fresh :class:`ChunkText` of it (:func:`shared`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from tokenmill.text.filters.prefilter import Codes, class_table
from tokenmill.text.filters.registry import regex_module


def char_class(chars: str) -> str:
    """The one-character ``regex`` class of the characters ``chars``."""
    return "[" + "".join(map(regex_module().escape, chars)) + "]"


COMMON = ("[[:alpha:]]", "[[:upper:]]", "[[:lower:]]", "[[:digit:]]", r"\d", r"\s", r"\w", "[ \u00a0]", "[a-z]",
          "[a-zA-Z]", "[1-9]", "[.?!…]", "[»|→←•·¬]", "[ÃÂ]", "()[]{}⟨⟩", "0123456789")
"""The classes several rules ask for: one table holds them all as bits, so one ``take`` over a chunk's code
points gives each of them (the last two are sets of characters, see :meth:`ChunkText.char_counts`)."""


@functools.cache
def _common_bits() -> tuple[np.ndarray, dict[str, np.uint16]]:
    """uint16 per code point (bit k: in the class ``COMMON[k]``) and each class's bit."""
    patterns = [p if p.startswith(("[", "\\")) else char_class(p) for p in COMMON]
    table = np.zeros(len(class_table(patterns[0])), dtype=np.uint16)
    for k, pattern in enumerate(patterns):
        table[class_table(pattern)] |= np.uint16(1 << k)
    return table, {pattern: np.uint16(1 << k) for k, pattern in enumerate(patterns)}


class ChunkText:
    """One side of a chunk as one text: code points, line starts, class masks and per-line counts."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines if isinstance(lines, list) else list(lines)
        self.count = len(self.lines)
        self._masks: dict[str, np.ndarray] = {}
        self._counts: dict[str, np.ndarray] = {}

    @functools.cached_property
    def text(self) -> str:
        """The lines joined with ``"\\n"``."""
        return "\n".join(self.lines)

    @functools.cached_property
    def lengths(self) -> np.ndarray:
        """int64 characters per line."""
        return np.fromiter(map(len, self.lines), dtype=np.int64, count=self.count)

    @functools.cached_property
    def starts(self) -> np.ndarray:
        """int64 offset of each line in :attr:`text`, then ``len(text) + 1`` (where a next line would start)."""
        out = np.zeros(self.count + 1, dtype=np.int64)
        np.cumsum(self.lengths + 1, out=out[1:])
        return out

    @functools.cached_property
    def points(self) -> np.ndarray:
        """The code points of :attr:`text` (uint8 when it is ASCII, else uint32)."""
        if self.text.isascii():
            return np.frombuffer(self.text.encode("ascii"), dtype=np.uint8)
        return np.frombuffer(self.text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)

    @functools.cached_property
    def separators(self) -> np.ndarray:
        """int64 positions of the ``"\\n"`` put between lines (not part of any line)."""
        return self.starts[1:-1] - 1

    @functools.cached_property
    def one_line_each(self) -> bool:
        """No line holds a ``"\\n"`` of its own: then every ``"\\n"`` of :attr:`text` is a separator."""
        return self.text.count("\n") == max(self.count - 1, 0)

    def points_of(self, rows: np.ndarray) -> np.ndarray:
        """The code points of the lines at ``rows`` (ascending), one after another, without separators."""
        wanted = np.zeros(self.count, dtype=bool)
        wanted[rows] = True
        inside = np.repeat(wanted, self.lengths + 1)[: len(self.points)]  # each line and the separator after it
        inside[self.separators] = False
        return self.points[inside]

    def line_of(self, positions: np.ndarray) -> np.ndarray:
        """int64 line of each position of :attr:`text` (a separator counts with the line before it)."""
        return np.searchsorted(self.starts, positions, side="right") - 1

    @functools.cached_property
    def common(self) -> np.ndarray:
        """uint16 per position: the bits of the :data:`COMMON` classes the character is in."""
        return np.take(_common_bits()[0], self.points)

    def mask(self, pattern: str) -> np.ndarray:
        """bool per position: the character matches the one-character ``regex`` class ``pattern`` (False at
        the separators); computed once per pattern (from :attr:`common` for a class of :data:`COMMON`)."""
        if pattern not in self._masks:
            bit = _common_bits()[1].get(pattern)
            found = (self.common & bit) != 0 if bit is not None else np.take(class_table(pattern), self.points)
            found[self.separators] = False
            self._masks[pattern] = found
        return self._masks[pattern]

    def per_line(self, hit: np.ndarray) -> np.ndarray:
        """int64 per line: how many positions of it have ``hit`` (separators must be False)."""
        out = np.zeros(self.count, dtype=np.int64)
        if not len(hit):
            return out
        where = np.flatnonzero(hit)
        if len(where) * 8 < len(hit):  # sparse: count the hits' lines
            return np.bincount(self.line_of(where), minlength=self.count)
        nonempty = self.lengths > 0
        out[nonempty] = np.add.reduceat(hit.view(np.uint8), self.starts[:-1][nonempty], dtype=np.int64)
        return out

    def per_line_at(self, positions: np.ndarray) -> np.ndarray:
        """int64 per line: how many of ``positions`` (of :attr:`text`, none a separator) fall in it."""
        return np.bincount(self.line_of(positions), minlength=self.count)

    def class_count(self, pattern: str) -> np.ndarray:
        """int64 per line: characters matching the one-character class ``pattern``; computed once."""
        if pattern not in self._counts:
            self._counts[pattern] = self.per_line(self.mask(pattern))
        return self._counts[pattern]

    def char_counts(self, chars: str) -> np.ndarray:
        """int64 (lines, len(chars)): how many of each character of ``chars`` each line holds; computed once."""
        key = "chars:" + chars
        if key not in self._counts:
            where = np.flatnonzero(self.mask(char_class(chars)))
            codes = np.array([ord(c) for c in chars], dtype=np.int64)
            order = np.argsort(codes)
            kind = order[np.searchsorted(codes[order], self.points[where])]
            cells = np.bincount(self.line_of(where) * len(chars) + kind, minlength=self.count * len(chars))
            self._counts[key] = cells.reshape(self.count, len(chars))
        return self._counts[key]

    def per_line_sum(self, values: np.ndarray) -> np.ndarray:
        """int64 per line: the sum of ``values`` (one per position, 0 at the separators) over its positions."""
        out = np.zeros(self.count, dtype=np.int64)
        nonempty = self.lengths > 0
        if nonempty.any():
            out[nonempty] = np.add.reduceat(values, self.starts[:-1][nonempty], dtype=np.int64)
        return out

    def any_match(self, pattern: Any) -> np.ndarray:
        """bool per line: the compiled ``pattern`` (which must not match ``"\\n"``) finds a match in it: one
        ``finditer`` over the joined text (a line without a match costs no Python call), or a search per
        line when a line holds a ``"\\n"`` of its own."""
        if not self.one_line_each:
            return np.fromiter(map(bool, map(pattern.search, self.lines)), dtype=bool, count=self.count)
        out = np.zeros(self.count, dtype=bool)
        found = np.fromiter((m.start() for m in pattern.finditer(self.text)), dtype=np.int64)
        out[self.line_of(found)] = True
        return out

    def followed(self, *tests: np.ndarray) -> np.ndarray:
        """bool per position p: ``tests[k][p + k]`` for every k (a run of characters, each passing its test;
        separators fail every mask, so a run never spans two lines)."""
        out = tests[0].copy()
        for k, test in enumerate(tests[1:], 1):
            out[:-k] &= test[k:]
            out[len(out) - k:] = False
        return out

    def equals(self, char: str) -> np.ndarray:
        """bool per position: the character is ``char`` (never at a separator, even for ``"\\n"``)."""
        found = self.points == ord(char)
        if char == "\n":
            found[self.separators] = False
        return found


class Side(Sequence[str]):
    """The lines a rule decides on (the chunk's lines at ``rows``, those still kept), carrying the whole
    chunk's :class:`ChunkText` (``chunk``). The list of them is only made when a rule iterates over them
    (most rules only index the chunk's per-line arrays with ``rows``, or pick a few lines)."""

    def __init__(self, chunk: ChunkText, rows: np.ndarray) -> None:
        self.chunk, self.rows = chunk, rows

    @functools.cached_property
    def listed(self) -> list[str]:
        """The lines, as a list (made on first use)."""
        if len(self.rows) == self.chunk.count:
            return self.chunk.lines
        return list(map(self.chunk.lines.__getitem__, self.rows.tolist()))

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self.listed[index]
        return self.listed[index] if "listed" in self.__dict__ else self.chunk.lines[self.rows[index]]

    def __iter__(self) -> Iterator[str]:
        return iter(self.listed)


def shared(lines: Sequence[str]) -> tuple[ChunkText, np.ndarray | None]:
    """The chunk intermediates for ``lines`` and the rows of ``lines`` in them (None: all rows, in order)."""
    if isinstance(lines, Side):
        return lines.chunk, (None if len(lines.rows) == lines.chunk.count else lines.rows)
    return ChunkText(lines), None


def codes_of(lines: Sequence[str]) -> Codes:
    """The code points of ``lines`` with each one's line (:class:`~tokenmill.text.filters.prefilter.Codes`),
    taken from the chunk's code points when ``lines`` is a :class:`Side` (no second join and encode)."""
    if not isinstance(lines, Side):
        return Codes(lines)
    if len(lines.rows) == lines.chunk.count:
        points = np.delete(lines.chunk.points, lines.chunk.separators)
    else:
        points = lines.chunk.points_of(lines.rows)
    return Codes(lines, points, lines.chunk.lengths[lines.rows])


def rows_of(values: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """``values`` (one per chunk line) at ``rows`` (all of them for None)."""
    return values if rows is None else values[rows]


def class_count(lines: Sequence[str], pattern: str) -> np.ndarray:
    """int64 per line of ``lines``: characters matching the one-character ``regex`` class ``pattern``."""
    chunk, rows = shared(lines)
    return rows_of(chunk.class_count(pattern), rows)


def any_match(lines: Sequence[str], pattern: Any) -> np.ndarray:
    """bool per line of ``lines``: the compiled ``pattern`` (which must not match ``"\\n"``) matches in it."""
    chunk, rows = shared(lines)
    return rows_of(_cached_match(chunk, pattern), rows)


def _cached_match(chunk: ChunkText, pattern: Any) -> np.ndarray:
    key = f"match:{pattern.pattern}:{pattern.flags}"
    if key not in chunk._counts:
        chunk._counts[key] = chunk.any_match(pattern)
    return chunk._counts[key]


def exact_where(lines: Sequence[str], candidates: np.ndarray, test: Any) -> np.ndarray:
    """bool per line: ``bool(test(line))`` where ``candidates`` holds (a cheap necessary condition), else False."""
    out = np.zeros(len(lines), dtype=bool)
    where = np.flatnonzero(candidates).tolist()
    if where:
        out[where] = np.fromiter(map(bool, map(test, map(lines.__getitem__, where))), dtype=bool, count=len(where))
    return out


__all__ = [
    "COMMON", "ChunkText", "Side", "any_match", "char_class", "class_count", "codes_of", "exact_where", "rows_of",
    "shared",
]
