"""Per-side noise rules of bicleaner-hardrules (literals, symbols, numbers, URLs, breadcrumbs, glued or
repeated words, encoding noise, escapes). Each works on the chunk's shared intermediates
(:mod:`~tokenmill.text.filters.chunk`): class counts and runs of characters in numpy over the chunk's code
points, rare patterns in one pass over the joined chunk, and the exact pattern only on the lines a cheap
necessary condition leaves (no_urls, no_breadcrumbs, no_repeated_words).

The patterns follow bicleaner-hardrules' semantics with the ``regex`` package's POSIX classes
(``[[:alpha:]]`` is Unicode's Alphabetic property, ``[[:digit:]]`` is ``[0-9]``), so a line is bad here
exactly when it is bad there (see tests/text/test_rules_oracle.py for the checks against the peer).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from tokenmill.text.filters.chunk import any_match, char_class, class_count, codes_of, exact_where, rows_of, shared
from tokenmill.text.filters.prefilter import class_table, word_repeat_starts
from tokenmill.text.filters.registry import CJK, counts, flags, regex_module, register

LITERALS = ("Re:", "{{", "%s", "}}", "+++", "***", '="')
"""What no_literals looks for (bicleaner-hardrules' default list)."""
WORD_REPEAT_LANGS = frozenset({
    "en", "es", "fr", "pl", "de", "it", "pt", "nl", "cs", "ro", "fi", "lv", "et", "bg", "hr", "da", "hu", "ga",
    "eu", "gl", "sl", "sv", "mt", "sk", "is", "lt", "nb", "nn", "no", "ur", "sw", "my", "so", "bn", "fa", "gu",
})
"""Languages where no_repeated_words looks for repeated whole words (elsewhere: any repeated string)."""
RELAXED_NOISE_LANGS = frozenset({"is", "fi", "az"})
"""Languages whose words may hold several Latin-1 letters in a row (Icelandic 'þýðir'): 7 make noise, not 3."""
A_TILDE_LANGS = frozenset({"pt"})
A_CIRCUMFLEX_LANGS = frozenset({"cy", "fr", "fa", "it", "pt", "tr", "vi", "lij", "ro"})


@functools.cache
def _pattern(name: str) -> Any:
    """The compiled pattern of a rule (compiled once per process, on first use)."""
    sources = {
        "alpha": r"[[:alpha:]]",
        "digit": r"[[:digit:]]",
        "url": r"[-a-zA-Z0-9@:%._+~#=]{2,256}\.[a-z]{2,6}\b",  # a host-like name and a top-level domain
        "crumb_plain": r" [-/] |[<>*]| : ",
        "crumb_fancy": r" » |[|→←•·¬]",
        "repeat_words": r"(?i)(\b\S+(.+))\s+\b\1\b",
        "repeat_any": r"(.+)\1",
        "latin1_run": r"[\x80-\xff]{3,}",
        "latin1_run_relaxed": r"[\x80-\xff]{7,}",
        "escaped": r"\\[xu][0-9a-fA-F]{2,}",
    }
    return regex_module().compile(sources[name])


@register("no_literals", "holds a template literal ({{, %s, Re:, ...)", "bicleaner-hardrules no_literals")
def has_literal(lines: Sequence[str], on: bool, lang: str | None) -> np.ndarray:
    """A side holding any of :data:`LITERALS`: each literal's characters in a row, looked for in numpy at the
    chunk's positions holding a literal's first character (a literal holds no ``"\\n"``, so a hit never
    spans two lines)."""
    chunk, rows = shared(lines)
    firsts = np.flatnonzero(chunk.mask(char_class("".join({literal[0]: None for literal in LITERALS}))))
    found = []
    for literal in LITERALS:
        at = firsts[chunk.points[firsts] == ord(literal[0])]
        for k, char in enumerate(literal[1:], 1):
            at = at[at + k < len(chunk.points)]
            at = at[chunk.points[at + k] == ord(char)]
        found.append(at)
    return rows_of(chunk.per_line_at(np.concatenate(found)) > 0, rows)


def _share_bad(lines: Sequence[str], pattern: str, bad: Any) -> np.ndarray:
    chunk, rows = shared(lines)
    lengths = rows_of(chunk.lengths, rows)
    found = class_count(lines, {"alpha": "[[:alpha:]]", "digit": "[[:digit:]]"}[pattern])
    with np.errstate(divide="ignore", invalid="ignore"):
        share = found / lengths
    return (lengths > 0) & bad(share)


@register("no_only_symbols", "mostly symbols (bicleaner)", "bicleaner-hardrules no_only_symbols")
def only_symbols(lines: Sequence[str], share: float, lang: str | None) -> np.ndarray:
    """A non-empty side whose alphabetic characters are ``share`` of its characters or less (bicleaner: 0.1)."""
    return _share_bad(lines, "alpha", lambda s: ~(s > share))


@register("no_only_numbers", "mostly digits (bicleaner)", "bicleaner-hardrules no_only_numbers")
def only_numbers(lines: Sequence[str], share: float, lang: str | None) -> np.ndarray:
    """A non-empty side whose ASCII digits are ``share`` of its characters or more (bicleaner: 0.5; CJK
    sides get 0.2 more, bicleaner's 0.7)."""
    limit = min(share + 0.2, 1.0) if lang in CJK else share
    return _share_bad(lines, "digit", lambda s: ~(s < limit))


@register("no_urls", "holds a URL", "bicleaner-hardrules no_urls")
def has_url(lines: Sequence[str], on: bool, lang: str | None) -> np.ndarray:
    """A side holding something shaped like a host name with a top-level domain (``example.com``); the pattern
    runs only on lines holding two host-name characters, '.', and two lowercase ASCII letters in a row (every
    match holds them)."""
    chunk, rows = shared(lines)
    points, host, lower = chunk.points, class_table(r"[-a-zA-Z0-9@:%._+~#=]"), class_table("[a-z]")
    dots = np.flatnonzero(chunk.equals("."))
    dots = dots[(dots >= 2) & (dots + 2 < len(points))]  # the separators ("\n") pass neither table
    dots = dots[host[points[dots - 2]] & host[points[dots - 1]] & lower[points[dots + 1]] & lower[points[dots + 2]]]
    return exact_where(lines, rows_of(chunk.per_line_at(dots) > 0, rows), _pattern("url").search)


@register("no_breadcrumbs", "navigation breadcrumbs", "bicleaner-hardrules no_breadcrumbs")
def breadcrumbs(lines: Sequence[str], on: bool, lang: str | None) -> np.ndarray:
    """A side with at least 3 plain separators (`` - ``, `` / ``, ``<``, ``>``, ``*``, `` : ``) and at least
    2 typographic ones (`` » ``, ``|``, arrows, bullets, ``¬``)."""
    candidates = class_count(lines, "[»|→←•·¬]") >= 2  # each typographic separator holds one of these
    bad = np.zeros(len(lines), dtype=bool)
    where = np.flatnonzero(candidates)
    picked = [lines[i] for i in where.tolist()]
    plain = counts(picked, lambda line: len(_pattern("crumb_plain").findall(line)))
    fancy = counts(picked, lambda line: len(_pattern("crumb_fancy").findall(line)))
    bad[where] = (plain >= 3) & (fancy >= 2)
    return bad


@register("no_glued_words", "glued words (lowerUpper)", "bicleaner-hardrules no_glued_words")
def glued_words(lines: Sequence[str], on: bool, lang: str | None) -> np.ndarray:
    """A side with two capitalized runs glued together (``WordWord``, ``ABcDe``): bicleaner's pattern
    ``([[:alpha:]]*[[:upper:]][[:lower:]]+){2}`` matches exactly where one run of alphabetic characters holds
    two places of an uppercase letter followed by a lowercase one; decided in numpy over the chunk."""
    chunk, rows = shared(lines)
    pairs = np.flatnonzero(chunk.followed(chunk.mask("[[:upper:]]"), chunk.mask("[[:lower:]]")))
    run = np.searchsorted(np.flatnonzero(~chunk.mask("[[:alpha:]]")), pairs)  # the separators break runs too
    twice = pairs[1:][run[1:] == run[:-1]]
    return rows_of(np.bincount(chunk.line_of(twice), minlength=chunk.count) > 0, rows)


@register("no_repeated_words", "repeated words", "bicleaner-hardrules no_repeated_words")
def repeated_words(lines: Sequence[str], times: int, lang: str | None) -> np.ndarray:
    """A side with ``times`` or more repeats of more than 7 characters (4 for CJK) holding a letter:
    repeated whole words in :data:`WORD_REPEAT_LANGS`, any repeated string elsewhere."""
    least = 4 if lang in CJK else 7
    alpha = _pattern("alpha")

    def qualifies(text: str) -> bool:
        return len(text) > least and bool(alpha.search(text))

    if lang not in WORD_REPEAT_LANGS:
        pattern = _pattern("repeat_any")
        return flags(lines, lambda line: sum(map(qualifies, (m.group().strip() for m in pattern.finditer(line))))
                     >= times)
    return _repeated_words(lines, times, qualifies)


def _repeated_words(lines: Sequence[str], times: int, qualifies: Any) -> np.ndarray:
    """The pattern's ``finditer`` walk, tried only at the places a match can start (see
    :func:`~tokenmill.text.filters.prefilter.word_repeat_starts`): the leftmost match from the current
    position is the first of those places where the pattern matches, as a search would find it."""
    match = _pattern("repeat_words").match
    bad = np.zeros(len(lines), dtype=bool)
    current, position, found = -1, 0, 0
    for i, start in zip(*(part.tolist() for part in word_repeat_starts(codes_of(lines))), strict=True):
        if i != current:
            current, position, found = i, 0, 0
        if bad[i] or start < position:
            continue
        hit = match(lines[i], start)
        if hit is not None:
            position = hit.end()
            found += qualifies(hit.group().strip())
            bad[i] = found >= times
    return bad


@register("no_unicode_noise", "Latin-1 noise (mojibake)", "bicleaner-hardrules no_unicode_noise")
def unicode_noise(lines: Sequence[str], on: bool, lang: str | None) -> np.ndarray:
    """A side with 3 Latin-1 supplement characters (U+0080-U+00FF) in a row (7 for Icelandic, Finnish,
    Azerbaijani), the trace of UTF-8 read as Latin-1."""
    pattern = _pattern("latin1_run_relaxed" if lang in RELAXED_NOISE_LANGS else "latin1_run")
    return any_match(lines, pattern)  # one pass over the joined chunk: the pattern cannot match "\n"


@register("no_space_noise", "s p a c e d   o u t", "bicleaner-hardrules no_space_noise")
def space_noise(lines: Sequence[str], on: bool, lang: str | None) -> np.ndarray:
    """A side with 4 or more single non-digit characters each after a space (``a b c d ``): bicleaner's
    ``( \\D){4,} `` holds exactly where 4 of them are followed by a space, found in numpy."""
    chunk, rows = shared(lines)
    space = chunk.equals(" ")
    other = ~chunk.mask(r"\d")
    other[chunk.separators] = False
    return rows_of(chunk.per_line(chunk.followed(*(space, other) * 4, space)) > 0, rows)


@register("no_escaped_unicode", "escaped unicode (\\u00e9, \\xc3)", "bicleaner-hardrules no_escaped_unicode")
def escaped_unicode(lines: Sequence[str], on: bool, lang: str | None) -> np.ndarray:
    """A side holding a backslash escape such as ``\\u00e9`` or ``\\xc3``."""
    return any_match(lines, _pattern("escaped"))  # one pass over the joined chunk: the pattern cannot match "\n"


@register("no_bad_encoding", "bad encoding (Ã, Â)", "bicleaner-hardrules no_bad_encoding")
def bad_encoding(lines: Sequence[str], on: bool, lang: str | None) -> np.ndarray:
    """A side holding 'Ã' (except Portuguese) or 'Â' (except languages that write it), UTF-8 read as Latin-1."""
    marks = ("Ã" if lang not in A_TILDE_LANGS else "") + ("Â" if lang not in A_CIRCUMFLEX_LANGS else "")
    if not marks:
        return np.zeros(len(lines), dtype=bool)
    return class_count(lines, f"[{marks}]") > 0


__all__ = ["LITERALS"]
