"""Per-line character statistics over whole chunks: letters, whitespace, letters of a given script.

A chunk of lines becomes one numpy array of code points (``"".join`` + UTF-32); per-code-point
classes come from tables indexed by code point (built once per process, lazily), and per-line
counts are differences of cumulative sums at line boundaries. No Python loop per line or per char.

"Letter" means Unicode categories L* and M* (marks count, so Devanagari vowel signs or combining
accents are letters, not noise). Scripts use the Unicode Script property through the ``regex``
package (``\\p{Script=Han}``); a script filter without ``regex`` installed is a ConfigError.
"""

from __future__ import annotations

import sys
import unicodedata
from functools import lru_cache
from itertools import repeat

import numpy as np

from tokenmill.errors import ConfigError

LETTER, SPACE = 1, 2  # bits of the class table


@lru_cache(maxsize=1)
def _all_chars() -> str:
    """Every code point except surrogates, in order (index = code point, surrogates replaced by NUL)."""
    cps = np.arange(sys.maxunicode + 1, dtype=np.uint32)
    cps[0xD800:0xE000] = 0
    return cps.tobytes().decode("utf-32-le")


@lru_cache(maxsize=1)
def class_table() -> np.ndarray:
    """uint8 per code point: LETTER for categories L*/M*, SPACE for ``str.isspace`` characters."""
    chars = _all_chars()
    cats = list(map(unicodedata.category, chars))
    letter = np.fromiter(map(str.startswith, cats, repeat(("L", "M"))), dtype=bool, count=len(cats))
    space = np.fromiter(map(str.isspace, chars), dtype=bool, count=len(chars))
    table = letter.astype(np.uint8) * LETTER | space.astype(np.uint8) * SPACE
    table[0xD800:0xE000] = 0
    return table


@lru_cache(maxsize=64)
def script_table(scripts: str) -> np.ndarray:
    """bool per code point: in any of the ``+``-separated Unicode scripts (e.g. ``"Han+Hiragana"``)."""
    try:
        import regex
    except ImportError:
        raise ConfigError(
            "script filters need the 'regex' package (Unicode Script property): pip install regex"
        ) from None
    names = [s.strip() for s in scripts.split("+") if s.strip()]
    if not names:
        raise ConfigError(f"empty script name {scripts!r}; use e.g. 'Latin', 'Han', 'Cyrillic', 'Han+Katakana'")
    try:
        pattern = regex.compile("[^" + "".join(rf"\p{{Script={n}}}" for n in names) + "]+")
    except regex.error:
        raise ConfigError(
            f"unknown script in {scripts!r}; use Unicode script names such as Latin, Han, Cyrillic, "
            "Arabic, Devanagari, Hiragana, Katakana, Hangul, Greek, Hebrew, Thai"
        ) from None
    members = pattern.sub("", _all_chars())
    table = np.zeros(sys.maxunicode + 1, dtype=bool)
    table[np.frombuffer(members.encode("utf-32-le"), dtype=np.uint32)] = True
    table[0] = False
    return table


class CharView:
    """Code points of a chunk of lines with their boundaries; computes per-line counts."""

    def __init__(self, lines: list[str]) -> None:
        lengths = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
        self.lengths = lengths  # characters (code points) per line
        self.bounds = np.zeros(len(lines) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.bounds[1:])
        text = "".join(lines)
        if text.isascii():  # one byte per code point: a quarter of the memory traffic
            self.codepoints = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
        else:
            self.codepoints = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        self._classes: np.ndarray | None = None

    def per_line(self, flags: np.ndarray) -> np.ndarray:
        """Per-line count of True in a per-code-point bool array."""
        out = np.zeros(len(self.lengths), dtype=np.int64)
        if len(flags):
            nonempty = self.lengths > 0
            out[nonempty] = np.add.reduceat(flags.view(np.uint8), self.bounds[:-1][nonempty], dtype=np.int64)
        return out

    def classes(self) -> np.ndarray:
        """Class bits (LETTER, SPACE) per code point; computed once."""
        if self._classes is None:
            self._classes = np.take(class_table(), self.codepoints)
        return self._classes

    def letters_and_spaces(self) -> tuple[np.ndarray, np.ndarray]:
        cls = self.classes()
        return self.per_line((cls & LETTER) != 0), self.per_line((cls & SPACE) != 0)

    def script_letters(self, scripts: str) -> tuple[np.ndarray, np.ndarray]:
        """(letters in ``scripts``, all letters) per line."""
        letter = (self.classes() & LETTER) != 0
        inside = letter & np.take(script_table(scripts), self.codepoints)
        return self.per_line(inside), self.per_line(letter)


def nonletter_fraction(lines: list[str]) -> np.ndarray:
    """Per line: share of non-whitespace characters that are not letters (0.0 for blank lines)."""
    view = CharView(lines)
    letters, spaces = view.letters_and_spaces()
    visible = view.lengths - spaces
    return np.divide(visible - letters, visible, out=np.zeros(len(lines)), where=visible > 0)


def script_fraction(lines: list[str], scripts: str) -> np.ndarray:
    """Per line: share of letters that belong to ``scripts`` (1.0 for lines without letters)."""
    inside, letters = CharView(lines).script_letters(scripts)
    return np.divide(inside, letters, out=np.ones(len(lines)), where=letters > 0)


__all__ = ["CharView", "class_table", "nonletter_fraction", "script_fraction", "script_table"]
