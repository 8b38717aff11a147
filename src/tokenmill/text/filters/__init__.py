"""Filters over chunks of pairs (or single lines): the length/ratio/script/language steps of
:mod:`~tokenmill.text.filters.pairs` and the named bitext rules of :mod:`~tokenmill.text.filters.registry`
(one small module per family of rules), all run by :class:`PairFilter` with per-step drop counts."""

from tokenmill.text.filters.pairs import (
    BASE_STEPS,
    FILTER_STEPS,
    FilterConfig,
    FilterResult,
    PairFilter,
    char_lengths,
    piece_filters,
    whitespace_token_lengths,
    with_rule_langs,
    without_piece_filters,
)
from tokenmill.text.filters.registry import RULE_ORDER, RULES, Rule

__all__ = [
    "BASE_STEPS",
    "FILTER_STEPS",
    "RULES",
    "RULE_ORDER",
    "FilterConfig",
    "FilterResult",
    "PairFilter",
    "Rule",
    "char_lengths",
    "piece_filters",
    "whitespace_token_lengths",
    "with_rule_langs",
    "without_piece_filters",
]
