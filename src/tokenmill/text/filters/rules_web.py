"""The C4 and FineWeb heuristics for LM documents, deciding as datatrove's ``C4QualityFilter`` and
``FineWebQualityFilter`` do with their defaults.

C4 (Raffel et al. 2020) looks at each line: a line is set aside when it has a word over
``c4_max_word_length`` characters, does not end in terminal punctuation (``. ? ! " '``, not ``...``), has
fewer than ``c4_min_words_per_line`` words, mentions javascript or a cookie/terms-of-use phrase; among the
lines it keeps, one holding "lorem ipsum" or a curly bracket drops the whole document, and so does having
fewer than ``c4_min_sentences`` sentences in them. Only the keep/drop decision is taken here: a kept
document keeps all its lines (datatrove also rewrites it to the kept lines).

FineWeb (Penedo et al. 2024) drops a document whose non-blank lines end in sentence-final punctuation too
rarely, are mostly short, repeat each other's characters, or whose newlines are too many for its words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tokenmill.text.filters.prefilter import class_table
from tokenmill.text.filters.registry import flags, register
from tokenmill.text.filters.rules_gopher import duplicates
from tokenmill.text.filters.words import count_sentences, split_words

C4 = ("c4_min_sentences", "c4_min_words_per_line", "c4_max_word_length", "c4_terminal_punctuation", "c4_citations",
      "c4_lorem_ipsum", "c4_javascript", "c4_curly_bracket", "c4_policy")
FINEWEB = ("fineweb_min_punct_lines", "fineweb_max_short_lines", "fineweb_short_line_length",
           "fineweb_max_dup_line_chars", "fineweb_max_list_ratio")
_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
_C4_ENDS = (".", "?", "!", '"', "'")
POLICY = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")
"""Phrases that mark a line as cookie or terms-of-use boilerplate (C4's list)."""


def _c4_line(line: str, o: Mapping[str, Any]) -> tuple[str, str]:
    """(verdict, line): verdict "drop" (the whole document), "skip" (this line), or "keep"."""
    line = line.strip()
    words = line.split()
    longest = o["c4_max_word_length"]
    if longest is not None and any(len(word) > longest for word in words):
        return "skip", line
    if o["c4_citations"]:
        line = _CITATION.sub("", line)
    if o["c4_terminal_punctuation"] and (not line.endswith(_C4_ENDS) or line.endswith("...")):
        return "skip", line
    if len(words) < (o["c4_min_words_per_line"] or 0):
        return "skip", line
    lower = line.lower()
    if o["c4_lorem_ipsum"] and "lorem ipsum" in lower:
        return "drop", line
    if o["c4_javascript"] and "javascript" in lower:
        return "skip", line
    if o["c4_curly_bracket"] and "{" in line:
        return "drop", line
    if o["c4_policy"] and any(phrase in lower for phrase in POLICY):
        return "skip", line
    return "keep", line


def c4_failure(text: str, o: Mapping[str, Any]) -> str | None:
    """Why C4 drops ``text`` ("lorem ipsum", "curly bracket", "too few sentences"), or None."""
    sentences = 0
    for line in text.splitlines():
        verdict, kept = _c4_line(line, o)
        if verdict == "drop":
            return "lorem ipsum" if o["c4_lorem_ipsum"] and "lorem ipsum" in kept.lower() else "curly bracket"
        if verdict == "keep" and o["c4_min_sentences"]:
            sentences += count_sentences(kept)
    if o["c4_min_sentences"] and sentences < o["c4_min_sentences"]:
        return "too few sentences"
    return None


@register("c4", "C4 (lines without punctuation, javascript, lorem ipsum, {, few sentences)",
          "datatrove C4QualityFilter", options=C4, documents=True)
def c4(lines: Sequence[str], options: Mapping[str, Any], lang: str | None) -> np.ndarray:
    """Documents C4 drops: lorem ipsum or a curly bracket in a kept line, or too few sentences in them."""
    return flags(lines, lambda text: c4_failure(text, options))


def fineweb_failure(text: str, o: Mapping[str, Any]) -> str | None:
    """The first FineWeb check ``text`` fails (its name), or None."""
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return "empty"
    final = class_table(r"\p{Sentence_Terminal}")
    ratio = sum(bool(final[ord(line[-1])]) for line in lines) / len(lines)
    if o["fineweb_min_punct_lines"] is not None and ratio < o["fineweb_min_punct_lines"]:
        return "lines without final punctuation"
    short = o["fineweb_short_line_length"]
    if o["fineweb_max_short_lines"] is not None and (
            sum(len(line) <= short for line in lines) / len(lines) > o["fineweb_max_short_lines"]):
        return "short lines"
    if o["fineweb_max_dup_line_chars"] is not None and (
            duplicates(lines)[1] / len(text.replace("\n", "")) > o["fineweb_max_dup_line_chars"]):
        return "duplicate line characters"
    if o["fineweb_max_list_ratio"] is not None and (
            text.count("\n") / len(split_words(text)) > o["fineweb_max_list_ratio"]):
        return "list-like (newlines per word)"
    return None


@register("fineweb", "FineWeb (line punctuation, short lines, duplicate lines, lists)",
          "datatrove FineWebQualityFilter", options=FINEWEB, documents=True)
def fineweb(lines: Sequence[str], options: Mapping[str, Any], lang: str | None) -> np.ndarray:
    """Documents FineWeb drops: too few lines ending in sentence-final punctuation, too many short lines,
    too many characters in repeated lines, too many newlines per word."""
    return flags(lines, lambda text: fineweb_failure(text, options))


__all__ = ["C4", "FINEWEB", "POLICY", "c4_failure", "fineweb_failure"]
