"""OpusFilter's numeral, terminal-punctuation, HTML-tag, repetition and longest-common-substring filters.

numerals and common_substring score with :mod:`difflib`'s ``SequenceMatcher`` (the standard library, as
OpusFilter does), so their scores are the peer's to the last bit; numerals only scores pairs whose
non-zero digits differ (equal digit strings score 1.0). terminal_punctuation counts in numpy and decides
each distinct penalty once with ``math.log``, as the peer computes it. html_tags looks for a start tag
with a pattern where OpusFilter parses with BeautifulSoup (the differences are listed in
docs/how-to/cleaning.md and checked in tests/text/test_rules_oracle.py).
"""

from __future__ import annotations

import difflib
import functools
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from tokenmill.text.filters.chunk import class_count, codes_of, exact_where, rows_of, shared
from tokenmill.text.filters.prefilter import REPEAT_LONGEST, string_repeat_starts
from tokenmill.text.filters.registry import regex_module, register

Langs = tuple[str | None, str | None]
_NONZERO_DIGITS = re.compile("[1-9]+")


def _nonzero_digits(text: str) -> str:
    return "".join(_NONZERO_DIGITS.findall(text))


def _digit_ratio(a: str, b: str) -> float:
    return 1.0 if a == b else difflib.SequenceMatcher(None, a, b).ratio()


@register("numerals", "numerals differ (OpusFilter)", "OpusFilter NonZeroNumeralsFilter", per_side=False)
def numerals(src: Sequence[str], tgt: Sequence[str], threshold: float, langs: Langs) -> np.ndarray:
    """Pairs whose non-zero ASCII digits, as sequences, match with a similarity below ``threshold``
    (difflib's ratio; OpusFilter's default 0.5)."""
    where = np.flatnonzero((class_count(src, "[1-9]") > 0) | (class_count(tgt, "[1-9]") > 0)).tolist()
    ratios = np.ones(len(src), dtype=np.float64)  # no non-zero digit on either side: equal (empty) strings
    ratios[where] = np.fromiter(map(_digit_ratio, map(_nonzero_digits, map(src.__getitem__, where)),
                                    map(_nonzero_digits, map(tgt.__getitem__, where))), dtype=np.float64,
                                count=len(where))
    return ~(ratios >= threshold)


def _terminal_marks(lines: Sequence[str]) -> np.ndarray:
    return class_count(lines, "[.?!…]")  # OpusFilter's terminal marks, counted in numpy


@register("terminal_punctuation", "terminal punctuation differs (OpusFilter)", "OpusFilter TerminalPunctuationFilter",
          per_side=False)
def terminal_punctuation(src: Sequence[str], tgt: Sequence[str], threshold: float, langs: Langs) -> np.ndarray:
    """Pairs whose penalty ``-log(1 + |s - t| + max(s - 1, 0) + max(t - 1, 0))`` is below ``threshold``,
    where s and t count '.', '?', '!' and '…' on each side (OpusFilter's default -2)."""
    s, t = _terminal_marks(src), _terminal_marks(tgt)
    penalty = np.abs(s - t) + np.maximum(s - 1, 0) + np.maximum(t - 1, 0)
    values, where = np.unique(penalty, return_inverse=True)
    accepted = np.array([-math.log(int(v) + 1) >= threshold for v in values.tolist()], dtype=bool)
    return ~accepted[where] if len(values) else np.zeros(len(src), dtype=bool)


@functools.cache
def _pattern(name: str, *args: int) -> Any:
    if name == "tag":  # a start tag: '<', a letter, a name, attributes, '>' (what an HTML parser makes an element of)
        return regex_module().compile(r"<[a-zA-Z][^\t\n\r\f />\x00]*(?:[\t\n\r\f /][^>]*)?>")
    threshold, shortest, longest = args  # OpusFilter's RepetitionFilter: a string repeated `threshold` times more
    return regex_module().compile(rf"(\S.{{{shortest - 1},{longest}}}?)(?: *\1){{{threshold},}}")


@register("html_tags", "HTML tags", "OpusFilter HtmlTagFilter")
def html_tags(lines: Sequence[str], on: bool, lang: str | None) -> np.ndarray:
    """A side holding an HTML/XML start tag (``<b>``, ``<a href=...>``, ``<br/>``); the pattern runs only on
    lines where a '<' is followed by an ASCII letter (every match starts so)."""
    chunk, rows = shared(lines)
    opening = chunk.per_line(chunk.followed(chunk.equals("<"), chunk.mask("[a-zA-Z]"))) > 0
    return exact_where(lines, rows_of(opening, rows), _pattern("tag").search)


REPETITION_SHORTEST, REPETITION_LONGEST = 3, REPEAT_LONGEST
"""Lengths of the repeated string OpusFilter's RepetitionFilter looks for (its defaults)."""


@register("repetition", "repeated string (OpusFilter)", "OpusFilter RepetitionFilter")
def repetition(lines: Sequence[str], threshold: int, lang: str | None) -> np.ndarray:
    """A side where a string of 3 to 100 characters (not starting with a space) follows itself ``threshold``
    more times, spaces between allowed (OpusFilter's default 2: three in a row)."""
    match = _pattern("repeat", threshold, REPETITION_SHORTEST, REPETITION_LONGEST).match
    bad = np.zeros(len(lines), dtype=bool)
    for i, start in zip(*(part.tolist() for part in string_repeat_starts(codes_of(lines), threshold + 1)), strict=True):
        if not bad[i] and match(lines[i], start) is not None:  # a search finds a match iff one starts here
            bad[i] = True
    return bad


def _may_share(src: Sequence[str], tgt: Sequence[str], threshold: float) -> np.ndarray:
    """bool per pair: the longer side holds the middle of the shorter one, ``shorter[s - k : k]`` for a
    common substring length k just under ``threshold`` x s (s: the shorter side's length). A common
    substring of k characters or more sits at some ``[a, a + k')`` of the shorter side with ``a <= s - k`` and
    ``a + k' >= k``, so it holds that middle: a pair without it cannot reach the threshold (an empty middle
    tells nothing: the pair is kept for the exact test)."""
    a, b = _lengths(src), _lengths(tgt)
    a_shorter = a <= b
    shorter = np.minimum(a, b)
    k = np.clip(np.floor(threshold * shorter).astype(np.int64) - 1, 0, shorter)  # 1 under, for float rounding
    lows, highs = (shorter - k).tolist(), k.tolist()
    return np.fromiter((x[low:high] in y if first else y[low:high] in x
                        for x, y, first, low, high in zip(src, tgt, a_shorter.tolist(), lows, highs, strict=True)),
                       dtype=bool, count=len(src))


def _lengths(lines: Sequence[str]) -> np.ndarray:
    chunk, rows = shared(lines)
    return rows_of(chunk.lengths, rows)


def _common_share(a: str, b: str) -> float:
    shorter = min(len(a), len(b))
    if not shorter:
        return 0.0
    match = difflib.SequenceMatcher(None, a, b).find_longest_match(0, len(a), 0, len(b))
    return match.size / shorter


@register("common_substring", "sides share a long substring (OpusFilter)", "OpusFilter LongestCommonSubstringFilter",
          per_side=False)
def common_substring(src: Sequence[str], tgt: Sequence[str], threshold: float, langs: Langs) -> np.ndarray:
    """Pairs whose longest common substring is ``threshold`` of the shorter side or more (untranslated
    copies; OpusFilter's default 0.9). difflib runs only on the pairs :func:`_may_share` leaves."""
    bad = np.zeros(len(src), dtype=bool)
    where = np.flatnonzero(_may_share(src, tgt, threshold)).tolist()
    shares = np.fromiter(map(_common_share, map(src.__getitem__, where), map(tgt.__getitem__, where)),
                         dtype=np.float64, count=len(where))
    bad[where] = ~(shares < threshold)
    return bad


__all__ = ["REPETITION_LONGEST", "REPETITION_SHORTEST"]
