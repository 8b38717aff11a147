"""Rules of bicleaner-hardrules that compare the two sides: no_identical, no_paren, no_titles,
no_number_inconsistencies. Each first picks, in one pass, the few pairs that can fail, and looks closer
at those only."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from tokenmill.text.filters.chunk import rows_of, shared
from tokenmill.text.filters.prefilter import folded_letter_length_table
from tokenmill.text.filters.registry import flags, regex_module, register

Langs = tuple[str | None, str | None]


def _pairwise(src: Sequence[str], tgt: Sequence[str], function: Any) -> np.ndarray:
    return np.fromiter(map(function, src, tgt), dtype=bool, count=len(src))


@functools.cache
def _non_letters() -> Any:
    return regex_module().compile(r"\P{L}+")


@register("no_identical", "same letters on both sides", "bicleaner-hardrules no_identical", per_side=False)
def identical(src: Sequence[str], tgt: Sequence[str], on: bool, langs: Langs) -> np.ndarray:
    """Pairs whose sides are equal once everything but letters (Unicode L*) is removed, ignoring case. Only pairs
    whose casefolded letters are as long on both sides (counted in numpy) are compared."""
    strip = _non_letters().sub

    def same(a: str, b: str) -> bool:
        return strip("", a).casefold() == strip("", b).casefold()

    bad = np.zeros(len(src), dtype=bool)
    where = np.flatnonzero(_folded_letter_lengths(src) == _folded_letter_lengths(tgt)).tolist()
    bad[where] = _pairwise([src[i] for i in where], [tgt[i] for i in where], same)
    return bad


def _folded_letter_lengths(lines: Sequence[str]) -> np.ndarray:
    """int64 per line: the length of its letters, casefolded (equal for two lines whose letters casefold
    equal; casefold maps each character on its own)."""
    chunk, rows = shared(lines)
    return rows_of(chunk.per_line_sum(np.take(folded_letter_length_table(), chunk.points)), rows)


_BRACKETS = "()[]{}⟨⟩"
"""Round, square, curly and angle brackets: each opening one, then its closing one."""


def _brackets(lines: Sequence[str]) -> np.ndarray:
    """int64 (lines, 8): how many of each of :data:`_BRACKETS` each line holds."""
    chunk, rows = shared(lines)
    return rows_of(chunk.char_counts(_BRACKETS), rows)


def _bracket_trouble(counts: np.ndarray) -> np.ndarray:
    """More than 6 of a bracket kind, or unbalanced ``[]``, ``{}``, ``⟨⟩``."""
    opening, closing = counts[:, 2::2], counts[:, 3::2]
    return ((opening + closing > 6) | (opening != closing)).any(axis=1)


@register("no_paren", "unbalanced brackets", "bicleaner-hardrules no_paren", per_side=False)
def paren(src: Sequence[str], tgt: Sequence[str], on: bool, langs: Langs) -> np.ndarray:
    """Pairs with a side holding more than 6 square, curly or angle brackets or an unbalanced kind of them,
    or with unbalanced round brackets whose closing ones differ in number between the sides ("a) ... b) ..."
    lists pass); bracket counts per line in numpy."""
    left, right = _brackets(src), _brackets(tgt)
    balanced = (left[:, 0] == left[:, 1]) & (right[:, 0] == right[:, 1])
    return _bracket_trouble(left) | _bracket_trouble(right) | ~(balanced | (left[:, 1] == right[:, 1]))


def _title(text: str) -> bool:
    """Several words (a space inside the stripped text) in Title Case; ``istitle`` first, the cheap test."""
    return text.istitle() and " " in text.strip()


@register("no_titles", "both sides in Title Case", "bicleaner-hardrules no_titles", per_side=False)
def titles(src: Sequence[str], tgt: Sequence[str], on: bool, langs: Langs) -> np.ndarray:
    """Pairs whose two sides are both several words in Title Case (menus, headings)."""
    bad = flags(src, _title)  # a title is never empty
    where = np.flatnonzero(bad).tolist()
    bad[where] = flags([tgt[i] for i in where], _title)
    return bad


@register("no_number_inconsistencies", "numbers differ between sides", "bicleaner-hardrules no_number_inconsistencies",
          per_side=False)
def number_inconsistencies(src: Sequence[str], tgt: Sequence[str], on: bool, langs: Langs) -> np.ndarray:
    """Pairs whose sides hold different multisets of ASCII digits: each side's count of every digit per line,
    in numpy, compared."""
    return (_digit_counts(src) != _digit_counts(tgt)).any(axis=1)


def _digit_counts(lines: Sequence[str]) -> np.ndarray:
    """int64 (lines, 10): how many of each ASCII digit each line holds."""
    chunk, rows = shared(lines)
    return rows_of(chunk.char_counts("0123456789"), rows)


__all__ = ["identical", "number_inconsistencies", "paren", "titles"]
