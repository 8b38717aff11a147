"""The registry of named bitext rules: one :class:`Rule` per rule, one signature for all.

A rule is switched on by the :class:`~tokenmill.text.filters.pairs.FilterConfig` field of its name
(``--filter-<name>`` on the command line, ``filters: {<name>: ...}`` in YAML); the field's value is its
threshold (a number) or ``True`` for a rule without one. A rule's test takes a whole chunk and returns a
bad mask (True = drop), so the filter can count and sample each rule's drops like its other steps:

* per-side rules (``per_side=True``): ``test(lines, value, lang) -> bool array``; a pair is dropped when
  either side is bad, a monolingual line when it is bad;
* pair rules: ``test(src, tgt, value, langs) -> bool array``; they do not run on monolingual chunks.

``lang`` is the side's ISO 639-1 code (``None`` when unknown): a few rules treat some languages
differently, as bicleaner-hardrules does (CJK counts characters instead of words, ...).

A new rule is a new small module that calls :func:`register`, its name in :data:`RULE_ORDER` and a field
of that name in ``FilterConfig``. Rules run in :data:`RULE_ORDER` (bicleaner-hardrules' order, then
OpusFilter's), cheap ones first, each on the pairs the earlier steps kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tokenmill._core.optional import require

RULE_ORDER = (
    "not_too_long", "not_too_short", "length_ratio", "no_identical", "no_literals", "no_only_symbols",
    "no_only_numbers", "no_urls", "no_breadcrumbs", "no_glued_words", "no_repeated_words", "no_unicode_noise",
    "no_space_noise", "no_paren", "no_escaped_unicode", "no_bad_encoding", "no_titles",
    "no_number_inconsistencies", "no_script_inconsistencies",
    "numerals", "terminal_punctuation", "html_tags", "repetition", "common_substring",
    "gopher_quality", "gopher_repetition", "c4", "fineweb",
)
"""Every rule, in the order they run (bicleaner-hardrules' rules, then OpusFilter's, then the LM document
filters of Gopher, C4 and FineWeb)."""
LM_RULES = ("gopher_quality", "gopher_repetition", "c4", "fineweb")
"""The rules for LM documents (monolingual input); they do not run on pairs."""

CJK = frozenset({"zh", "ja", "ko", "yue", "bo", "bod", "cmn", "zho", "jpn", "kor"})
"""Languages whose length rules count characters (or bytes) instead of words, as bicleaner-hardrules does."""


@dataclass(frozen=True)
class Rule:
    """One named rule: what it mirrors, how the report labels it, and its chunk-wide test."""

    name: str  # the FilterConfig field, the flag (--filter-<name>) and the report's reason
    label: str  # the report's wording
    peer: str  # the peer rule it follows (for the docs and the oracle tests)
    per_side: bool  # True: test(lines, value, lang); False: test(src, tgt, value, langs)
    test: Callable[..., np.ndarray]
    options: tuple[str, ...] = ()  # FilterConfig fields passed to test (as a mapping) instead of the rule's value
    documents: bool = False  # a filter of LM documents: runs on monolingual chunks only


RULES: dict[str, Rule] = {}


def register(name: str, label: str, peer: str, *, per_side: bool = True, options: tuple[str, ...] = (),
             documents: bool = False) -> Callable[[Callable[..., np.ndarray]], Callable[..., np.ndarray]]:
    """Decorator: record ``test`` as the rule ``name`` (which must be in :data:`RULE_ORDER`); ``options``: the
    settings it reads, ``documents``: an LM document filter."""
    if name not in RULE_ORDER:
        raise ValueError(f"rule {name!r} is not in RULE_ORDER")

    def add(test: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
        RULES[name] = Rule(name, label, peer, per_side, test, options, documents)
        return test

    return add


def regex_module() -> Any:
    """The ``regex`` package (Unicode properties and POSIX classes), or an install hint."""
    return require("regex", extra="clean", needed_by="the bitext rules (tokenmill.text.filters)")


def flags(lines: Any, function: Callable[[str], Any]) -> np.ndarray:
    """bool per line: ``bool(function(line))``, one C-level pass (``map``) over the chunk."""
    return np.fromiter(map(bool, map(function, lines)), dtype=bool, count=len(lines))


def counts(lines: Any, function: Callable[[str], Any]) -> np.ndarray:
    """int64 per line: ``function(line)`` (an int), one C-level pass over the chunk."""
    return np.fromiter(map(function, lines), dtype=np.int64, count=len(lines))


def base_lang(code: str | None) -> str | None:
    """The language part of a code as the rules compare it: ``en_XX`` -> ``en``, ``de-DE`` -> ``de``."""
    if not code:
        return None
    return code.replace("-", "_").split("_", 1)[0].lower()


__all__ = [
    "CJK", "LM_RULES", "RULES", "RULE_ORDER", "Rule", "base_lang", "counts", "flags", "regex_module",
    "register",
]
