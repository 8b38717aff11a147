"""Length rules (bicleaner-hardrules' not_too_long, not_too_short, length_ratio): numpy over whole chunks, on
the chunk's shared character and blank counts."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat

import numpy as np

from tokenmill.text.filters.chunk import class_count, rows_of, shared
from tokenmill.text.filters.registry import CJK, register


def _chars(lines: Sequence[str]) -> np.ndarray:
    chunk, rows = shared(lines)
    return rows_of(chunk.lengths, rows)


@register("not_too_long", "too long (characters, bicleaner)", "bicleaner-hardrules not_too_long")
def too_long(lines: Sequence[str], limit: int, lang: str | None) -> np.ndarray:
    """A side of ``limit`` characters or more."""
    return _chars(lines) >= limit


@register("not_too_short", "too short (words, bicleaner)", "bicleaner-hardrules not_too_short")
def too_short(lines: Sequence[str], words: int, lang: str | None) -> np.ndarray:
    """A side of fewer than ``words`` words, counted as blanks (space or no-break space) + 1; CJK sides
    count characters instead."""
    if lang in CJK:
        return _chars(lines) < words
    blanks = class_count(lines, "[ \u00a0]")
    return blanks < words - 1


def _byte_lengths(lines: Sequence[str]) -> np.ndarray:
    encoded = map(str.encode, lines, repeat("utf-8"), repeat("surrogatepass"))
    return np.fromiter(map(len, encoded), dtype=np.int64, count=len(lines))


@register("length_ratio", "length ratio (characters, bicleaner)", "bicleaner-hardrules length_ratio", per_side=False)
def bad_ratio(src: Sequence[str], tgt: Sequence[str], ratio: float, langs: tuple[str | None, str | None]) -> np.ndarray:
    """Source length / target length outside [1/ratio, ratio]: characters, or UTF-8 bytes when either side
    is CJK. An empty target leaves the ratio undefined: such a pair is dropped (bicleaner never sees one,
    its no_empty rule runs first; here ``--filter-drop-empty`` does the same unless turned off)."""
    if any(lang in CJK for lang in langs):
        a, b = _byte_lengths(src), _byte_lengths(tgt)
    else:
        a, b = _chars(src), _chars(tgt)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = a / b
    return ~((1 / ratio <= value) & (value <= ratio)) | (b == 0)


__all__ = ["bad_ratio", "too_long", "too_short"]
