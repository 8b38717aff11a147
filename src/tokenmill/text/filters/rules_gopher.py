"""Gopher's quality and repetition heuristics for LM documents (Rae et al. 2021, table A1), deciding as
datatrove's ``GopherQualityFilter`` and ``GopherRepetitionFilter`` do with their defaults.

Words are those of :func:`~tokenmill.text.filters.words.split_words` (spaCy's English tokenizer, emulated).
Each test takes a document and the rule's settings (a mapping of its FilterConfig fields); a threshold that
is ``None`` or 0 turns that check off, as there. Per document the work is a few passes over its words in
C-level calls (``map``, :class:`collections.Counter`), no per-character Python.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tokenmill.text.filters.prefilter import window_hashes
from tokenmill.text.filters.registry import flags, regex_module, register
from tokenmill.text.filters.words import split_words

STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})
"""Gopher's stop words: a document needs ``gopher_min_stop_words`` of them (as written, lowercase)."""
_SYMBOLS = "$+<=>^`|~━►∶´～％"
"""Symbols that count as punctuation for "a word of symbols only" besides Unicode's P* and control characters."""
_PARAGRAPHS = re.compile(r"\n{2,}")
_LINES = re.compile(r"\n+")
QUALITY = ("gopher_min_words", "gopher_max_words", "gopher_min_mean_word_length", "gopher_max_mean_word_length",
           "gopher_max_symbol_ratio", "gopher_max_bullet_lines", "gopher_max_ellipsis_lines",
           "gopher_min_alpha_words", "gopher_min_stop_words")
TOP_NGRAMS = (2, 3, 4)
"""n of the top n-gram character fractions (thresholds ``gopher_top_<n>gram``)."""
DUP_NGRAMS = (5, 6, 7, 8, 9, 10)
"""n of the duplicated n-gram character fractions (thresholds ``gopher_dup_<n>grams``)."""
REPETITION = ("gopher_dup_lines", "gopher_dup_paragraphs", "gopher_dup_line_chars", "gopher_dup_paragraph_chars",
              *(f"gopher_top_{n}gram" for n in TOP_NGRAMS), *(f"gopher_dup_{n}grams" for n in DUP_NGRAMS))


@functools.cache
def _word_char() -> Any:
    """A character that is not punctuation (P*), not a control or other C* character, not one of _SYMBOLS."""
    return regex_module().compile("[^\\p{P}\\p{C}" + regex_module().escape(_SYMBOLS) + "]")


def _has_alpha(word: str) -> bool:
    return any(map(str.isalpha, word))


def _ratio_above(count: int, total: int, limit: float | None) -> bool:
    return bool(limit) and count / total > limit  # type: ignore[operator]


def quality_failure(text: str, o: Mapping[str, Any]) -> str | None:
    """The first Gopher quality check ``text`` fails (its name), or None."""
    words = split_words(text)
    return _word_failure(words, o) or _line_failure(text, words, o)


def _word_failure(words: list[str], o: Mapping[str, Any]) -> str | None:
    """Gopher's checks on the words alone: how many, how long on average."""
    real = list(filter(_word_char().search, words))
    if o["gopher_min_words"] and len(real) < o["gopher_min_words"]:
        return "short document"
    if o["gopher_max_words"] and len(real) > o["gopher_max_words"]:
        return "long document"
    mean = float(np.mean(list(map(len, real)))) if real else float("nan")
    if (o["gopher_min_mean_word_length"] and mean < o["gopher_min_mean_word_length"]) or (
            o["gopher_max_mean_word_length"] and mean > o["gopher_max_mean_word_length"]):
        return "mean word length"
    return None if words else "no words"


def _line_failure(text: str, words: list[str], o: Mapping[str, Any]) -> str | None:
    """Gopher's checks on symbols, bullet and ellipsis lines, alphabetic words and stop words."""
    if _ratio_above(text.count("#"), len(words), o["gopher_max_symbol_ratio"]) or _ratio_above(
            text.count("...") + text.count("…"), len(words), o["gopher_max_symbol_ratio"]):
        return "symbols per word"
    lines = text.splitlines()
    bullets = sum(line.lstrip().startswith(("•", "-")) for line in lines)
    ellipses = sum(line.rstrip().endswith(("...", "…")) for line in lines)
    if _ratio_above(bullets, len(lines), o["gopher_max_bullet_lines"]):
        return "bullet lines"
    if _ratio_above(ellipses, len(lines), o["gopher_max_ellipsis_lines"]):
        return "ellipsis lines"
    alpha = o["gopher_min_alpha_words"]
    if alpha and sum(map(_has_alpha, words)) / len(words) < alpha:
        return "alphabetic words"
    if o["gopher_min_stop_words"] and len(STOP_WORDS.intersection(words)) < o["gopher_min_stop_words"]:
        return "stop words"
    return None


@register("gopher_quality", "Gopher quality (words, symbols, lists, stop words)", "datatrove GopherQualityFilter",
          options=QUALITY, documents=True)
def gopher_quality(lines: Sequence[str], options: Mapping[str, Any], lang: str | None) -> np.ndarray:
    """Documents that fail one of Gopher's quality checks: word count, mean word length, ``#`` or ellipses
    per word, lines starting with a bullet or ending in an ellipsis, words with a letter, stop words."""
    return flags(lines, lambda text: quality_failure(text, options))


def duplicates(items: list[str]) -> tuple[int, int]:
    """(items seen before, their characters): every repeat after the first occurrence counts."""
    seen: set[str] = set()
    count = chars = 0
    for item in items:
        if item in seen:
            count += 1
            chars += len(item)
        else:
            seen.add(item)
    return count, chars


def _top_ngram_chars(words: list[str], n: int) -> int:
    """Characters of the most frequent word n-gram (joined by spaces) times its count; 0 without n-grams.
    Counted as tuples: words hold no spaces, so two n-grams join equal exactly when their words are equal (and
    the first-seen of the most frequent is the same either way)."""
    grams = Counter(zip(*(words[i:] for i in range(n)), strict=False))
    if not grams:
        return 0
    gram, count = grams.most_common(1)[0]
    return (sum(map(len, gram)) + n - 1) * count


def _gram_hashes(words: list[str], n: int) -> np.ndarray:
    """uint64 hash of each word n-gram joined without spaces (equal strings, equal hashes)."""
    text = "".join(words)
    ends = np.cumsum(np.fromiter(map(len, words), dtype=np.int64, count=len(words)))
    starts = np.concatenate([[0], ends[:-1]])
    values = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    first, last = starts[: len(words) - n + 1], ends[n - 1:]
    return window_hashes(values)(first, last - first) if len(values) else np.zeros(len(first), np.uint64)


def _dup_ngram_chars(words: list[str], n: int) -> int:
    """Characters of the word n-grams (joined without spaces) that repeat an earlier one, left to right,
    a repeat skipping its n words. 0 at once when no two n-grams hash alike (then none repeats)."""
    if len(words) < n + 1:
        return 0
    hashes = _gram_hashes(words, n)
    if len(np.unique(hashes)) == len(hashes):
        return 0
    seen: set[str] = set()
    chars, at, last = 0, 0, len(words) - n
    while at <= last:
        gram = "".join(words[at:at + n])
        if gram in seen:
            chars += len(gram)
            at += n
        else:
            seen.add(gram)
            at += 1
    return chars


def repetition_failure(text: str, o: Mapping[str, Any]) -> str | None:
    """The first Gopher repetition check ``text`` fails (its name), or None."""
    if not text:
        return "empty"
    paragraphs = _PARAGRAPHS.split(text.strip())
    count, chars = duplicates(paragraphs)
    if _ratio_above(count, len(paragraphs), o["gopher_dup_paragraphs"]) or _ratio_above(
            chars, len(text), o["gopher_dup_paragraph_chars"]):
        return "duplicate paragraphs"
    lines = _LINES.split(text)
    count, chars = duplicates(lines)
    if _ratio_above(count, len(lines), o["gopher_dup_lines"]) or _ratio_above(
            chars, len(text), o["gopher_dup_line_chars"]):
        return "duplicate lines"
    words = split_words(text)
    for n in TOP_NGRAMS:
        if o[f"gopher_top_{n}gram"] and _ratio_above(_top_ngram_chars(words, n), len(text), o[f"gopher_top_{n}gram"]):
            return f"top {n}-gram"
    for n in DUP_NGRAMS:
        if o[f"gopher_dup_{n}grams"] and _ratio_above(_dup_ngram_chars(words, n), len(text), o[f"gopher_dup_{n}grams"]):
            return f"duplicate {n}-grams"
    return None


@register("gopher_repetition", "Gopher repetition (lines, paragraphs, n-grams)", "datatrove GopherRepetitionFilter",
          options=REPETITION, documents=True)
def gopher_repetition(lines: Sequence[str], options: Mapping[str, Any], lang: str | None) -> np.ndarray:
    """Documents with too much repeated text: duplicate paragraphs or lines (as a share of them or of the
    characters), a word 2-4-gram covering too much, or too many characters in repeated 5-10-grams."""
    return flags(lines, lambda text: repetition_failure(text, options))


__all__ = ["DUP_NGRAMS", "QUALITY", "REPETITION", "STOP_WORDS", "TOP_NGRAMS", "duplicates", "quality_failure",
           "repetition_failure"]
