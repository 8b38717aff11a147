"""The cleaning filters' settings (:class:`FilterConfig`: which steps of :mod:`tokenmill.text.filters.pairs` run
and their thresholds, with each setting's help text as field metadata) and the splits of a config prepare
makes: the filters that count tokenizer pieces, and the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Annotated, Literal

from tokenmill.errors import ConfigError
from tokenmill.settings import Range, check_settings
from tokenmill.text.filters.registry import RULE_ORDER
from tokenmill.text.lid import DEFAULT_BACKEND, parse_language, same_language

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
    src_lang: str | None = None  # expected language of the source: "en", "eng" or "eng_Latn"
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
    lid_backend: Literal["heliport", "py3langid"] = _rule(
        "language ID of --filter-src-lang/--filter-tgt-lang: heliport (220 languages; pip install "
        "'tokenmill[langid]') or py3langid (97 languages; the backend before heliport)", DEFAULT_BACKEND)
    lid_threshold: Annotated[float | None, Range(0)] = _rule(
        "drop a side whose language-ID confidence is below this: heliport's score (0 to about 7; heliport "
        "already labels a line und under its own per-language threshold) or py3langid's probability (0-1)")
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
        shown = [f"{name}={value!r}" for name, value in self.recorded().items()]
        return f"{type(self).__name__}({', '.join(shown)})"

    def recorded(self) -> dict[str, object]:
        """The settings as a manifest records them: those that existed before the bitext rules, then the rule
        settings that differ from their defaults (as :meth:`__repr__`), so a run without rules records what
        it recorded before the rules came."""
        return {f.name: getattr(self, f.name) for f in fields(self) if self._recorded(f.name, f.default)}

    def _recorded(self, name: str, default: object) -> bool:
        """Whether setting ``name`` is recorded. ``lid_backend`` is when a language is checked with heliport:
        py3langid was the only backend before, so the runs it made keep their stage keys, and a run of such
        a setting with heliport (now the default) is a new run."""
        if name == "lid_backend":
            return (self.src_lang is not None or self.tgt_lang is not None) and self.lid_backend != "py3langid"
        return name in _BEFORE_RULES or getattr(self, name) != default

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
        for name in ("src_lang", "tgt_lang"):  # the form, now; whether the backend knows it, when it loads
            if getattr(self, name) is not None:
                parse_language(getattr(self, name), f"filter settings: {name}")
        if self.langid_candidates is not None:
            among = [parse_language(code, "filter settings: langid_candidates entry").language
                     for code in self.langid_candidates]
            for lang in (self.src_lang, self.tgt_lang):
                if lang is not None and not any(same_language(parse_language(lang).language, c) for c in among):
                    raise bad(f"expected language {lang!r} is not among langid_candidates")


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


__all__ = [
    "BASE_STEPS",
    "FILTER_STEPS",
    "FilterConfig",
    "piece_filters",
    "with_rule_langs",
    "without_piece_filters",
]
