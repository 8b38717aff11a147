"""Rules of bicleaner-hardrules that compare the two sides: no_identical, no_paren, no_titles,
no_number_inconsistencies. Each first picks, in one pass, the few pairs that can fail, and looks closer
at those only."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from tokenmill.text.charclass import CharView
from tokenmill.text.filters.prefilter import folded_letter_lengths
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
    where = np.flatnonzero(folded_letter_lengths(src) == folded_letter_lengths(tgt)).tolist()
    bad[where] = _pairwise([src[i] for i in where], [tgt[i] for i in where], same)
    return bad


_BRACKETS = (("[", "]"), ("{", "}"), ("⟨", "⟩"))


def _bracket_trouble(text: str) -> bool:
    """More than 6 of a bracket kind, or unbalanced ``[]``, ``{}``, ``⟨⟩``."""
    for opening, closing in _BRACKETS:
        a, b = text.count(opening), text.count(closing)
        if a + b > 6 or a != b:
            return True
    return False


def _paren_bad(left: str, right: str) -> bool:
    if _bracket_trouble(left) or _bracket_trouble(right):
        return True
    balanced = left.count("(") == left.count(")") and right.count("(") == right.count(")")
    return not (balanced or left.count(")") == right.count(")"))  # "a) ... b) ..." lists pass


@functools.cache
def _any_bracket() -> Any:
    return regex_module().compile(r"[\[\](){}⟨⟩]")


@register("no_paren", "unbalanced brackets", "bicleaner-hardrules no_paren", per_side=False)
def paren(src: Sequence[str], tgt: Sequence[str], on: bool, langs: Langs) -> np.ndarray:
    """Pairs with a side holding more than 6 square, curly or angle brackets or an unbalanced kind of them,
    or with unbalanced round brackets whose closing ones differ in number between the sides."""
    search = _any_bracket().search
    bad = np.zeros(len(src), dtype=bool)
    candidates = np.flatnonzero(flags(src, search) | flags(tgt, search))
    for i in candidates.tolist():
        bad[i] = _paren_bad(src[i], tgt[i])
    return bad


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
    view = CharView(list(lines))
    digit = (view.codepoints >= ord("0")) & (view.codepoints <= ord("9"))
    line = np.repeat(np.arange(len(lines), dtype=np.int64), view.lengths)[digit]
    cells = line * 10 + (view.codepoints[digit].astype(np.int64) - ord("0"))
    return np.bincount(cells, minlength=10 * len(lines)).reshape(len(lines), 10)


__all__ = ["identical", "number_inconsistencies", "paren", "titles"]
