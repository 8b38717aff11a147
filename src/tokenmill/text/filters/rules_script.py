"""no_script_inconsistencies: a side whose letters come from more than one family of scripts.

Families group related scripts as bicleaner-hardrules does (Devanagari, Tamil, Thai ... are all 'Brahmi';
Han, Hiragana, Katakana, Hangul ... are 'CJKV'); Common and Inherited characters (digits, punctuation,
combining marks) belong to none. One table maps every code point to its family (built once per process
from the Unicode Script property through ``regex``); per line, the smallest and largest family among its
letters (``str.isalpha``) are reduced in numpy over the chunk's non-ASCII code points, with Latin added for
a line holding an ASCII letter: they differ exactly when the line mixes families.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence

import numpy as np

from tokenmill.text.filters.chunk import rows_of, shared
from tokenmill.text.filters.registry import regex_module, register

FAMILIES: dict[str, tuple[str, ...]] = {
    "Aramaic": ("Imperial_Aramaic", "Syriac", "Mandaic"),
    "Brahmi": (
        "Avestan", "Balinese", "Batak", "Bengali", "Brahmi", "Buhid", "Buginese", "Chakma", "Cham", "Devanagari",
        "Gujarati", "Gurmukhi", "Hanunoo", "Javanese", "Kaithi", "Kannada", "Kayah_Li", "Khmer", "Lao", "Lepcha",
        "Limbu", "Malayalam", "Meetei_Mayek", "Mongolian", "New_Tai_Lue", "Oriya", "Rejang", "Saurashtra",
        "Sharada", "Sinhala", "Sundanese", "Syloti_Nagri", "Tagalog", "Tagbanwa", "Tai_Le", "Tai_Tham",
        "Tai_Viet", "Takri", "Tamil", "Telugu", "Thai", "Tibetan",
    ),
    "CJKV": ("Bopomofo", "Han", "Hangul", "Hiragana", "Katakana", "Yi"),
    "Cuneiform": ("Cuneiform", "Old_Persian"),
    "Ethiopic": ("Ethiopic", "Old_South_Arabian"),
    "Hebrew": ("Samaritan", "Hebrew"),
    "Meroitic": ("Meroitic_Cursive", "Meroitic_Hieroglyphs"),
    "Pahlavi": ("Inscriptional_Parthian", "Inscriptional_Pahlavi"),
    "Phoenician": ("Phoenician", "Lycian", "Lydian"),
}
"""Families of several scripts; every other script listed in :data:`SINGLE` is a family of its own."""
SINGLE = (
    "Latin", "Greek", "Cyrillic", "Armenian", "Arabic", "Thaana", "Myanmar", "Georgian", "Cherokee",
    "Canadian_Aboriginal", "Ogham", "Runic", "Old_Italic", "Gothic", "Deseret", "Linear_B", "Ugaritic",
    "Shavian", "Osmanya", "Cypriot", "Braille", "Coptic", "Glagolitic", "Tifinagh", "Kharoshthi", "Phags_Pa",
    "Nko", "Ol_Chiki", "Vai", "Carian", "Egyptian_Hieroglyphs", "Lisu", "Bamum", "Old_Turkic", "Miao",
    "Sora_Sompeng",
)
"""The scripts of Unicode 6.1 (bicleaner-hardrules' table) outside :data:`FAMILIES`; scripts added later have
no family here either, as there."""


@functools.cache
def family_table() -> np.ndarray:
    """uint8 per code point: 0 for no family (not a letter, Common, Inherited, a newer script), else the
    family's number."""
    cps = np.arange(sys.maxunicode + 1, dtype=np.uint32)
    cps[0xD800:0xE000] = 0
    alpha = "".join(filter(str.isalpha, cps.tobytes().decode("utf-32-le")))
    table = np.zeros(sys.maxunicode + 1, dtype=np.uint8)
    groups = [*FAMILIES.values(), *((name,) for name in SINGLE)]
    for number, scripts in enumerate(groups, 1):
        pattern = regex_module().compile("[" + "".join(rf"\p{{Script={s}}}" for s in scripts) + "]")
        members = "".join(pattern.findall(alpha))
        table[np.frombuffer(members.encode("utf-32-le"), dtype=np.uint32)] = number
    return table


@register("no_script_inconsistencies", "mixed writing systems", "bicleaner-hardrules no_script_inconsistencies")
def mixed_scripts(lines: Sequence[str], on: bool, lang: str | None) -> np.ndarray:
    """A side whose letters belong to two or more script families."""
    chunk, rows = shared(lines)
    if not chunk.count or chunk.points.dtype == np.uint8:  # ASCII: only Latin letters
        return np.zeros(len(lines), dtype=bool)
    beyond = np.flatnonzero(chunk.points > 127)  # ASCII letters are all Latin: only the others are looked up
    family = np.take(family_table(), chunk.points[beyond])
    lettered = family > 0
    at, family = beyond[lettered], family[lettered]
    high = np.zeros(chunk.count, dtype=np.uint8)
    low = np.full(chunk.count, 255, dtype=np.uint8)
    if len(at):
        line = chunk.line_of(at)
        first = np.flatnonzero(np.concatenate([[True], line[1:] != line[:-1]]))  # `at` ascends: lines in runs
        high[line[first]] = np.maximum.reduceat(family, first)
        low[line[first]] = np.minimum.reduceat(family, first)
    latin = family_table()[ord("a")]
    ascii_letters = chunk.class_count("[a-zA-Z]") > 0
    high[ascii_letters] = np.maximum(high[ascii_letters], latin)
    low[ascii_letters] = np.minimum(low[ascii_letters], latin)
    return rows_of((high > 0) & (low != high), rows)


__all__ = ["FAMILIES", "SINGLE", "family_table"]
