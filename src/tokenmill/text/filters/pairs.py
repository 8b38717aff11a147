"""Pair filters over chunks: a keep mask plus how many pairs each step dropped.

Steps, each optional, run in this fixed order (cheap first); a pair dropped by one step is counted
there and not looked at by later ones, so the per-step counts add up to the pairs dropped:

1. ``empty``      either side empty (after normalization, so whitespace-only lines are empty).
2. ``chars``      a side shorter than ``min_chars`` or longer than ``max_chars`` characters.
3. ``tokens``     a side with fewer than ``min_tokens`` or more than ``max_tokens`` tokens:
                  whitespace tokens by default, or lengths you pass (e.g. subword counts).
4. ``ratio``      longer side / shorter side above ``max_ratio`` (in tokens, or characters with
                  ``ratio_unit="chars"``; a zero length counts as 1).
5. ``identical``  source equal to target.
6. ``nonletter``  a side whose share of non-letter characters (whitespace ignored; letters are
                  Unicode L* and M*) is above ``max_nonletter``.
7. ``script``     a side whose letters are less than ``min_script_fraction`` in the expected
                  script (``src_script``/``tgt_script``; lines without letters pass).
8. the bitext rules that are switched on (see :mod:`tokenmill.text.filters.registry`: bicleaner-hardrules'
   model-free rules and OpusFilter's numeral, punctuation, HTML, repetition and common-substring filters),
   in :data:`~tokenmill.text.filters.registry.RULE_ORDER`, each counted under its own name.
9. ``langid``     a side whose language (py3langid) is not ``src_lang``/``tgt_lang``.

Monolingual chunks (``tgt=None``) run the one-sided steps on the source only. Every step works on
whole chunks: lengths via ``map(len, ...)`` into numpy, masks combined with numpy; the character
and language steps only look at pairs that survived the earlier steps.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from itertools import compress, repeat
from typing import Annotated, Literal

import numpy as np

from tokenmill.errors import ConfigError
from tokenmill.settings import Range, check_settings
from tokenmill.text.charclass import nonletter_fraction, script_fraction, script_table
from tokenmill.text.filters import (  # noqa: F401 (they register)  # noqa: F401
    rules_gopher,
    rules_length,
    rules_noise,
    rules_opus,
    rules_pairs,
    rules_script,
    rules_web,
)
from tokenmill.text.filters.registry import RULE_ORDER, RULES, base_lang, regex_module
from tokenmill.text.langid import LanguageIdentifier
from tokenmill.text.stats import StepStats

BASE_STEPS = ("empty", "chars", "tokens", "ratio", "identical", "nonletter", "script")
FILTER_STEPS = (*BASE_STEPS, *RULE_ORDER, "langid")


def _rule(help_text: str, default: object = None) -> object:
    """A bitext rule's setting: off by default, its help text as field metadata (``--help`` shows it)."""
    return field(default=default, metadata={"help": help_text})
_FRACTION = Range(0, 1, what="a fraction")
_RATIO = Range(1, why="it compares the longer side to the shorter")
_BEFORE_RULES = frozenset({
    "drop_empty", "min_chars", "max_chars", "min_tokens", "max_tokens", "max_ratio", "ratio_unit", "drop_identical",
    "max_nonletter", "src_script", "tgt_script", "min_script_fraction", "src_lang", "tgt_lang", "langid_candidates",
})


@dataclass(frozen=True)
class FilterConfig:
    """Which filters run and their thresholds; all off except ``drop_empty`` by default."""

    drop_empty: bool = True  # drop pairs with an empty side
    min_chars: Annotated[int, Range(0)] = 0  # per side, characters (code points); 0 = no minimum
    max_chars: Annotated[int | None, Range(0)] = None  # per side; default: no maximum
    min_tokens: Annotated[int, Range(0)] = 0  # per side, whitespace tokens (or the lengths passed in)
    max_tokens: Annotated[int | None, Range(0)] = None  # per side; default: no maximum
    max_ratio: Annotated[float | None, _RATIO] = None  # longer side / shorter side, e.g. 9 (Moses); default: off
    ratio_unit: Literal["tokens", "chars"] = "tokens"  # what max_ratio compares
    drop_identical: bool = False  # drop pairs whose source equals the target
    max_nonletter: Annotated[float | None, _FRACTION] = None  # max share of non-letters among non-space chars, e.g. 0.5
    src_script: str | None = None  # Unicode script(s) of the source, e.g. "Latin", "Han+Hiragana"
    tgt_script: str | None = None  # same for the target
    min_script_fraction: Annotated[float, _FRACTION] = 0.5  # share of letters that must be in the expected script
    src_lang: str | None = None  # expected language of the source (py3langid code, e.g. "en")
    tgt_lang: str | None = None  # expected language of the target
    langid_candidates: tuple[str, ...] | None = None  # restrict language-ID to these labels; default: all
    # The bitext rules (tokenmill.text.filters.registry): off unless given; --clean-preset bitext turns on a set.
    not_too_long: Annotated[int | None, Range(1)] = _rule(
        "drop a pair with a side of this many characters or more (bicleaner-hardrules: 1024)")
    not_too_short: Annotated[int | None, Range(1)] = _rule(
        "drop a pair with a side of fewer words than this, counted as blanks + 1; CJK sides count characters "
        "(bicleaner-hardrules: 3)")
    length_ratio: Annotated[float | None, _RATIO] = _rule(
        "drop a pair whose source/target length in characters (UTF-8 bytes with a CJK side) is outside "
        "[1/R, R] (bicleaner-hardrules: 3.0)")
    no_identical: bool = _rule("drop a pair whose sides have the same letters, ignoring case (bicleaner-hardrules)",
                               False)
    no_literals: bool = _rule("drop a pair with a side holding {{, }}, %s, Re:, +++, ***, or =\" "
                              "(bicleaner-hardrules)", False)
    no_only_symbols: Annotated[float | None, _FRACTION] = _rule(
        "drop a pair with a side whose alphabetic characters are at most this share of it (bicleaner-hardrules: 0.1)")
    no_only_numbers: Annotated[float | None, _FRACTION] = _rule(
        "drop a pair with a side whose digits are at least this share of it; CJK sides 0.2 more "
        "(bicleaner-hardrules: 0.5)")
    no_urls: bool = _rule("drop a pair with a side holding a URL or host name (bicleaner-hardrules)", False)
    no_breadcrumbs: bool = _rule("drop a pair with a side of navigation breadcrumbs (bicleaner-hardrules)", False)
    no_glued_words: bool = _rule("drop a pair with a side holding glued words like WordWord (bicleaner-hardrules)",
                                 False)
    no_repeated_words: Annotated[int | None, Range(1)] = _rule(
        "drop a pair with a side holding this many repeated words or strings (bicleaner-hardrules: 1)")
    no_unicode_noise: bool = _rule("drop a pair with a side holding 3 Latin-1 characters in a row, mojibake "
                                   "(bicleaner-hardrules)", False)
    no_space_noise: bool = _rule("drop a pair with a side s p a c e d  o u t (bicleaner-hardrules)", False)
    no_paren: bool = _rule("drop a pair with unbalanced or too many brackets (bicleaner-hardrules)", False)
    no_escaped_unicode: bool = _rule("drop a pair with a side holding escapes like \\u00e9 (bicleaner-hardrules)",
                                     False)
    no_bad_encoding: bool = _rule("drop a pair with a side holding Ã or Â where its language does not write them "
                                  "(bicleaner-hardrules)", False)
    no_titles: bool = _rule("drop a pair whose sides are both in Title Case (bicleaner-hardrules)", False)
    no_number_inconsistencies: bool = _rule("drop a pair whose sides hold different digits (bicleaner-hardrules)",
                                            False)
    no_script_inconsistencies: bool = _rule("drop a pair with a side mixing writing systems (bicleaner-hardrules)",
                                            False)
    numerals: Annotated[float | None, _FRACTION] = _rule(
        "drop a pair whose non-zero digits match with a similarity below this (OpusFilter NonZeroNumeralsFilter: 0.5)")
    terminal_punctuation: float | None = _rule(
        "drop a pair whose terminal punctuation penalty -log(1 + mismatch) is below this "
        "(OpusFilter TerminalPunctuationFilter: -2)")
    html_tags: bool = _rule("drop a pair with a side holding an HTML tag (OpusFilter HtmlTagFilter)", False)
    repetition: Annotated[int | None, Range(1)] = _rule(
        "drop a pair with a side where a string of 3-100 characters repeats this many more times in a row "
        "(OpusFilter RepetitionFilter: 2)")
    common_substring: Annotated[float | None, _FRACTION] = _rule(
        "drop a pair whose longest common substring is at least this share of the shorter side "
        "(OpusFilter LongestCommonSubstringFilter: 0.9)")
    rule_src_lang: str | None = _rule(
        "ISO 639-1 language of the source for the rules that treat some languages differently "
        "(CJK, ...); default: --source-lang")
    rule_tgt_lang: str | None = _rule("the same for the target; default: --target-lang")
    # LM document filters (monolingual input; docs/how-to/cleaning.md): off unless given, datatrove's defaults.
    gopher_quality: bool = _rule("drop documents failing Gopher's quality checks (datatrove GopherQualityFilter)",
                                 False)
    gopher_min_words: Annotated[int | None, Range(0)] = _rule("Gopher: fewest words (not symbols only)", 50)
    gopher_max_words: Annotated[int | None, Range(0)] = _rule("Gopher: most words", 100_000)
    gopher_min_mean_word_length: Annotated[float | None, Range(0)] = _rule("Gopher: shortest mean word length", 3)
    gopher_max_mean_word_length: Annotated[float | None, Range(0)] = _rule("Gopher: longest mean word length", 10)
    gopher_max_symbol_ratio: Annotated[float | None, Range(0)] = _rule("Gopher: most # (or ellipses) per word", 0.1)
    gopher_max_bullet_lines: Annotated[float | None, _FRACTION] = _rule("Gopher: most lines starting • or -", 0.9)
    gopher_max_ellipsis_lines: Annotated[float | None, _FRACTION] = _rule("Gopher: most lines ending ... or …", 0.3)
    gopher_min_alpha_words: Annotated[float | None, _FRACTION] = _rule("Gopher: fewest words with a letter", 0.8)
    gopher_min_stop_words: Annotated[int | None, Range(0)] = _rule("Gopher: fewest of the, be, to, of, and, ...", 2)
    gopher_repetition: bool = _rule("drop documents with Gopher's repetition (datatrove GopherRepetitionFilter)",
                                    False)
    gopher_dup_lines: Annotated[float | None, _FRACTION] = _rule("Gopher: most duplicate lines (share)", 0.3)
    gopher_dup_paragraphs: Annotated[float | None, _FRACTION] = _rule("Gopher: most duplicate paragraphs", 0.3)
    gopher_dup_line_chars: Annotated[float | None, _FRACTION] = _rule("Gopher: most characters in duplicate lines",
                                                                      0.2)
    gopher_dup_paragraph_chars: Annotated[float | None, _FRACTION] = _rule(
        "Gopher: most characters in duplicate paragraphs", 0.2)
    gopher_top_2gram: Annotated[float | None, _FRACTION] = _rule("Gopher: most characters in the top 2-gram", 0.2)
    gopher_top_3gram: Annotated[float | None, _FRACTION] = _rule("Gopher: the same, 3-gram", 0.18)
    gopher_top_4gram: Annotated[float | None, _FRACTION] = _rule("Gopher: the same, 4-gram", 0.16)
    gopher_dup_5grams: Annotated[float | None, _FRACTION] = _rule("Gopher: most characters in duplicate 5-grams", 0.15)
    gopher_dup_6grams: Annotated[float | None, _FRACTION] = _rule("Gopher: the same, 6-grams", 0.14)
    gopher_dup_7grams: Annotated[float | None, _FRACTION] = _rule("Gopher: the same, 7-grams", 0.13)
    gopher_dup_8grams: Annotated[float | None, _FRACTION] = _rule("Gopher: the same, 8-grams", 0.12)
    gopher_dup_9grams: Annotated[float | None, _FRACTION] = _rule("Gopher: the same, 9-grams", 0.11)
    gopher_dup_10grams: Annotated[float | None, _FRACTION] = _rule("Gopher: the same, 10-grams", 0.10)
    c4: bool = _rule("drop documents C4 drops (datatrove C4QualityFilter; decision only, lines are kept)", False)
    c4_min_sentences: Annotated[int | None, Range(0)] = _rule("C4: fewest sentences in the kept lines", 5)
    c4_min_words_per_line: Annotated[int | None, Range(0)] = _rule("C4: a line with fewer words is set aside", 3)
    c4_max_word_length: Annotated[int | None, Range(0)] = _rule("C4: a line with a longer word is set aside", 1000)
    c4_terminal_punctuation: bool = _rule("C4: set aside lines not ending in . ? ! \" '", True)
    c4_citations: bool = _rule("C4: remove [1], [edit], [citation needed] before the checks", True)
    c4_lorem_ipsum: bool = _rule("C4: drop documents with lorem ipsum", True)
    c4_javascript: bool = _rule("C4: set aside lines mentioning javascript", True)
    c4_curly_bracket: bool = _rule("C4: drop documents with a { in a kept line", True)
    c4_policy: bool = _rule("C4: set aside cookie and terms-of-use lines", True)
    fineweb: bool = _rule("drop documents FineWeb drops (datatrove FineWebQualityFilter)", False)
    fineweb_min_punct_lines: Annotated[float | None, _FRACTION] = _rule(
        "FineWeb: fewest lines ending in sentence-final punctuation", 0.12)
    fineweb_max_short_lines: Annotated[float | None, _FRACTION] = _rule("FineWeb: most short lines", 0.67)
    fineweb_short_line_length: Annotated[int, Range(0)] = _rule("FineWeb: a short line's most characters", 30)
    fineweb_max_dup_line_chars: Annotated[float | None, Range(0)] = _rule(
        "FineWeb: most characters in duplicate lines (share of the non-newline characters)", 0.01)
    fineweb_max_list_ratio: Annotated[float | None, Range(0)] = _rule("FineWeb: most newlines per word", 0.3)

    def __repr__(self) -> str:
        """The dataclass repr of the settings that existed before the bitext rules, then the rule settings
        that differ from their defaults: a run without rules keeps its stage keys (they hold this repr)."""
        shown = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                 if f.name in _BEFORE_RULES or getattr(self, f.name) != f.default]
        return f"{type(self).__name__}({', '.join(shown)})"

    def recorded(self) -> dict[str, object]:
        """The settings as a manifest records them: those that existed before the bitext rules, then the rule
        settings that differ from their defaults (as :meth:`__repr__`), so a run without rules records what
        it recorded before the rules came."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name in _BEFORE_RULES or getattr(self, f.name) != f.default}

    @property
    def rules(self) -> tuple[str, ...]:
        """The bitext rules switched on, in the order they run."""
        return tuple(name for name in RULE_ORDER if getattr(self, name) not in (None, False))

    def __post_init__(self) -> None:
        def bad(msg: str) -> ConfigError:
            return ConfigError(f"filter settings: {msg}")

        check_settings(FilterConfig, self, lambda name: f"filter settings: {name}")  # types and ranges
        if self.max_chars is not None and self.max_chars < self.min_chars:
            raise bad(f"max_chars={self.max_chars} is below min_chars={self.min_chars}")
        if self.max_tokens is not None and self.max_tokens < self.min_tokens:
            raise bad(f"max_tokens={self.max_tokens} is below min_tokens={self.min_tokens}")
        if self.langid_candidates is not None:
            for lang in (self.src_lang, self.tgt_lang):
                if lang is not None and lang not in self.langid_candidates:
                    raise bad(f"expected language {lang!r} is not among langid_candidates")


@dataclass
class FilterResult:
    """``keep[i]`` is True for pairs that pass every step; ``counts[step]`` = pairs dropped there."""

    keep: np.ndarray  # bool, one per input pair
    counts: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, np.ndarray] = field(default_factory=dict)  # step -> positions it dropped (steps that dropped)

    @property
    def kept(self) -> int:
        return int(self.keep.sum())

    def apply(self, lines: Sequence[str]) -> list[str]:
        """The kept items of ``lines`` (same length as the filtered chunk), in order."""
        return list(compress(lines, self.keep.tolist()))


def char_lengths(lines: Sequence[str]) -> np.ndarray:
    """int64 characters per line."""
    return np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))


def whitespace_token_lengths(lines: Sequence[str], collapsed: bool = False) -> np.ndarray:
    """int64 whitespace-separated tokens per line (``len(line.split())``).

    ``collapsed=True`` promises single spaces and no space at either end (what
    ``Normalizer(collapse_whitespace=True)`` produces): then tokens = spaces + 1, counted faster.
    """
    if not collapsed:
        return np.fromiter(map(len, map(str.split, lines)), dtype=np.int64, count=len(lines))
    spaces = np.fromiter(map(str.count, lines, repeat(" ")), dtype=np.int64, count=len(lines))
    return spaces + np.fromiter(map(bool, lines), dtype=np.int64, count=len(lines))


class _Lengths:
    """Characters and tokens per line of each side, counted on first use (once per chunk)."""

    def __init__(self, sides: list[Sequence[str]], given: list[np.ndarray | None], collapsed: bool) -> None:
        self._sides, self._given, self._collapsed = sides, given, collapsed
        self._picked: tuple[int, list[Sequence[str]]] = (len(sides[0]), sides)

    def picked(self, keep: np.ndarray, kept: int) -> list[Sequence[str]]:
        """The sides' items still kept (``kept`` of them): built once per state of ``keep``; ``keep`` only
        loses items, so the count tells whether it changed."""
        if self._picked[0] != kept:
            survivors = keep.tolist()
            self._picked = (kept, [list(compress(side, survivors)) for side in self._sides])
        return self._picked[1]

    @functools.cached_property
    def chars(self) -> list[np.ndarray]:
        return [char_lengths(side) for side in self._sides]

    @functools.cached_property
    def tokens(self) -> list[np.ndarray]:
        n = len(self._sides[0])
        return [whitespace_token_lengths(side, self._collapsed) if given is None else _checked_lengths(given, n)
                for side, given in zip(self._sides, self._given, strict=True)]


class PairFilter:
    """Compiled filters for one :class:`FilterConfig`; call it on chunks."""

    def __init__(self, config: FilterConfig | None = None) -> None:
        self.config = config or FilterConfig()
        cfg = self.config
        for script in (cfg.src_script, cfg.tgt_script):
            if script is not None:
                script_table(script)  # fail now on an unknown script or a missing package
        if cfg.rules:
            try:
                regex_module()
            except ModuleNotFoundError as error:
                raise ConfigError(f"filter settings: {error}") from None
        self._langs = (base_lang(cfg.rule_src_lang), base_lang(cfg.rule_tgt_lang))
        self._langid = None
        if cfg.src_lang is not None or cfg.tgt_lang is not None:
            self._langid = LanguageIdentifier(cfg.langid_candidates)
            for lang in (cfg.src_lang, cfg.tgt_lang):
                if lang is not None and lang not in self._langid.labels:
                    raise ConfigError(f"filter settings: language-ID does not know {lang!r}")

    @property
    def steps(self) -> tuple[str, ...]:
        """The enabled steps, in the order they run."""
        cfg = self.config
        on = {
            "empty": cfg.drop_empty,
            "chars": cfg.min_chars > 0 or cfg.max_chars is not None,
            "tokens": cfg.min_tokens > 0 or cfg.max_tokens is not None,
            "ratio": cfg.max_ratio is not None,
            "identical": cfg.drop_identical,
            "nonletter": cfg.max_nonletter is not None,
            "script": cfg.src_script is not None or cfg.tgt_script is not None,
            "langid": self._langid is not None,
            **dict.fromkeys(cfg.rules, True),
        }
        return tuple(s for s in FILTER_STEPS if on.get(s))

    def __call__(
        self,
        src: Sequence[str],
        tgt: Sequence[str] | None = None,
        *,
        src_tokens: np.ndarray | None = None,
        tgt_tokens: np.ndarray | None = None,
        stats: StepStats | None = None,
        collapsed: bool = False,
    ) -> FilterResult:
        """Filter one chunk. ``src_tokens``/``tgt_tokens``: token lengths to use instead of whitespace
        tokens (e.g. subword counts from the tokenizer). ``collapsed``: the text went through
        whitespace collapsing (faster token counts). With ``stats``, adds ``pairs``, ``kept`` and
        ``dropped_<step>`` counters."""
        n = len(src)
        if tgt is not None and len(tgt) != n:
            raise ValueError(f"source has {n} items but target has {len(tgt)}")
        sides = [src] if tgt is None else [src, tgt]
        keep = np.ones(n, dtype=bool)
        counts: dict[str, int] = {}
        dropped: dict[str, np.ndarray] = {}
        lengths = _Lengths(sides, [src_tokens, tgt_tokens][: len(sides)], collapsed)
        for step in self.steps:
            bad = self._bad(step, sides, keep, lengths)
            hit = keep if bad is None else bad & keep
            counts[step] = 0 if bad is None else int(hit.sum())
            if counts[step]:
                dropped[step] = np.flatnonzero(hit)
                keep[hit] = False
        result = FilterResult(keep, counts, dropped)
        if stats is not None:
            stats.add("pairs", n)
            for step in self.steps:
                stats.add(f"dropped_{step}", counts[step])
            stats.add("kept", result.kept)
        return result

    def _bad(self, step: str, sides: list[Sequence[str]], keep: np.ndarray, lengths: _Lengths) -> np.ndarray | None:
        """The bad mask of one step over the chunk (None: the step does not apply to this chunk)."""
        cfg, paired = self.config, len(sides) == 2
        if step == "empty":
            return np.logical_or.reduce([c == 0 for c in lengths.chars])
        if step == "chars":
            return np.logical_or.reduce([_outside(c, cfg.min_chars, cfg.max_chars) for c in lengths.chars])
        if step == "tokens":
            return np.logical_or.reduce([_outside(t, cfg.min_tokens, cfg.max_tokens) for t in lengths.tokens])
        if step in ("ratio", "identical") and not paired:
            return None
        if step == "ratio":
            a, b = lengths.chars if cfg.ratio_unit == "chars" else lengths.tokens
            return np.maximum(a, b) > cfg.max_ratio * np.maximum(np.minimum(a, b), 1)  # type: ignore[operator]
        if step == "identical":
            return np.fromiter(map(str.__eq__, *sides), dtype=bool, count=len(keep))
        if step in ("nonletter", "script", "langid"):
            return self._costly(step, sides, keep)
        rule = RULES[step]
        runs = rule.per_side and not (paired and rule.documents) if rule.per_side else paired
        return self._rule(step, keep, lengths) if runs else None

    def _rule(self, name: str, keep: np.ndarray, lengths: _Lengths) -> np.ndarray:
        """Bad mask of a bitext rule, computed on the pairs still kept only."""
        rule = RULES[name]
        value = {option: getattr(self.config, option) for option in rule.options} if rule.options else getattr(
            self.config, name)
        idx = np.flatnonzero(keep)
        bad = np.zeros(len(keep), dtype=bool)
        if not len(idx):
            return bad
        picked = lengths.picked(keep, len(idx))
        if rule.per_side:
            for lines, lang in zip(picked, self._langs, strict=False):
                bad[idx] |= rule.test(lines, value, lang)
        else:
            bad[idx] = rule.test(picked[0], picked[1], value, self._langs)
        return bad

    def _costly(self, step: str, sides: list[Sequence[str]], keep: np.ndarray) -> np.ndarray:
        """Bad mask for a step that inspects characters: computed on the surviving pairs only."""
        cfg = self.config
        idx = np.flatnonzero(keep)
        bad = np.zeros(len(keep), dtype=bool)
        if not len(idx):
            return bad
        survivors = keep.tolist()
        for i, side in enumerate(sides):
            lines = list(compress(side, survivors)) if len(idx) < len(keep) else list(side)
            if step == "nonletter":
                bad[idx] |= nonletter_fraction(lines) > cfg.max_nonletter  # type: ignore[operator]
            elif step == "script":
                script = (cfg.src_script, cfg.tgt_script)[i]
                if script is not None:
                    bad[idx] |= script_fraction(lines, script) < cfg.min_script_fraction
            else:
                lang = (cfg.src_lang, cfg.tgt_lang)[i]
                if lang is not None:
                    assert self._langid is not None
                    bad[idx] |= self._langid.classify(lines) != lang
        return bad


def piece_filters(config: FilterConfig) -> FilterConfig | None:
    """The filters of ``config`` that count tokens (min/max tokens; the ratio when it compares tokens), for
    running on a subword tokenizer's piece counts after encoding; None when there are none."""
    ratio = config.max_ratio if config.ratio_unit == "tokens" else None
    if config.min_tokens == 0 and config.max_tokens is None and ratio is None:
        return None
    return FilterConfig(drop_empty=False, min_tokens=config.min_tokens, max_tokens=config.max_tokens,
                        max_ratio=ratio, ratio_unit="tokens")


def without_piece_filters(config: FilterConfig) -> FilterConfig:
    """``config`` less the filters :func:`piece_filters` takes over (the text-level part of cleaning)."""
    ratio = None if config.ratio_unit == "tokens" else config.max_ratio
    return replace(config, min_tokens=0, max_tokens=None, max_ratio=ratio)


def with_rule_langs(config: FilterConfig, source: str | None, target: str | None) -> FilterConfig:
    """``config`` with the run's languages as the rules' languages where none were given (only when a rule is
    on, so a run without rules keeps its settings and stage keys)."""
    if not config.rules:
        return config
    return replace(config, rule_src_lang=config.rule_src_lang or source, rule_tgt_lang=config.rule_tgt_lang or target)


def _outside(lengths: np.ndarray, low: int, high: int | None) -> np.ndarray:
    out = lengths < low
    if high is not None:
        out |= lengths > high
    return out


def _checked_lengths(lengths: np.ndarray, n: int) -> np.ndarray:
    arr = np.asarray(lengths)
    if arr.shape != (n,) or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"token lengths must be a 1-D integer array of {n} items, got {arr.dtype} {arr.shape}")
    return arr.astype(np.int64, copy=False)


__all__ = [
    "BASE_STEPS",
    "FILTER_STEPS",
    "FilterConfig",
    "FilterResult",
    "PairFilter",
    "char_lengths",
    "piece_filters",
    "whitespace_token_lengths",
    "with_rule_langs",
    "without_piece_filters",
]
