"""Language labels as users write them: ISO 639-1 (``en``), ISO 639-3 (``eng``) or NLLB's ``eng_Latn``.

Every label is brought to ISO 639-3 through :mod:`tokenmill.text.lid.table` (generated from SIL's published
tables). A backend label counts as the wanted language when it is that language (or its macrolanguage, for a
backend that gives that label when undecided), or, where the backend has no label of exactly that language,
when one is the macrolanguage of the other: ``zh``/``zho`` (Chinese) matches
heliport's ``cmn`` (Mandarin, a member of ``zho``), NLLB's ``arb_Arab`` (Standard Arabic) matches heliport's
``ara``, ``no`` matches both ``nob`` and ``nno``, and ``nob`` does not match ``nno``. The script part of an
NLLB label (ISO 15924) is checked against the text's letters (the backends name languages, not scripts):
:func:`script_spec` turns it into the Unicode scripts :func:`tokenmill.text.charclass.script_fraction` counts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from tokenmill.errors import ConfigError
from tokenmill.text.lid.table import ISO639_1, MACROLANGUAGES

NO_LANGUAGE = frozenset({"und", "zxx"})
"""Labels that name no language (undetermined; no linguistic content): they never match a wanted language."""
_FORM = re.compile(r"(?P<lang>[a-z]{2,3})(?:_(?P<script>[A-Z][a-z]{3}))?")
_SCRIPT_GROUPS = {"Hans": "Hani", "Hant": "Hani", "Jpan": "Hani+Hira+Kana", "Kore": "Hang+Hani"}
"""ISO 15924 codes that stand for more than one Unicode script, or a variant Unicode does not tell apart
(simplified and traditional Chinese are both Han)."""


@dataclass(frozen=True)
class WantedLanguage:
    """A language a side must be in, as given and as ISO 639-3 (+ ISO 15924 script when given)."""

    given: str
    language: str  # ISO 639-3
    script: str | None = None  # ISO 15924, e.g. "Latn"


def parse_language(code: str, what: str = "language") -> WantedLanguage:
    """``en``, ``eng`` or ``eng_Latn`` as a :class:`WantedLanguage`; anything else is a ConfigError."""
    found = _FORM.fullmatch(code.strip()) if isinstance(code, str) else None
    if found is None:
        raise ConfigError(f"{what} {code!r} is not a language code: give ISO 639-1 (en), ISO 639-3 (eng) or "
                          "NLLB's language_Script (eng_Latn)")
    lang = found["lang"]
    if len(lang) == 2:
        if lang not in ISO639_1:
            raise ConfigError(f"{what} {code!r}: {lang!r} is not an ISO 639-1 code (e.g. en, de, zh)")
        lang = ISO639_1[lang]
    return WantedLanguage(code, lang, found["script"])


def to_iso639_3(code: str) -> str:
    """A two-letter code as its ISO 639-3 code; any other code as it is."""
    return ISO639_1.get(code, code)


@lru_cache(maxsize=1)
def _macro_of() -> dict[str, str]:
    return {member: macro for macro, members in MACROLANGUAGES.items() for member in members.split()}


def macrolanguage(code: str) -> str | None:
    """The macrolanguage an ISO 639-3 individual language belongs to (``cmn`` -> ``zho``), else None."""
    return _macro_of().get(code)


def same_language(wanted: str, found: str) -> bool:
    """True when ISO 639-3 ``wanted`` and ``found`` are equal or one is the other's macrolanguage."""
    if found in NO_LANGUAGE or wanted in NO_LANGUAGE:
        return False
    macro = _macro_of()
    return wanted == found or macro.get(wanted) == found or macro.get(found) == wanted


def accepted_labels(languages: Mapping[str, str], wanted: str, coarse_macrolanguages: bool = False) -> frozenset[str]:
    """The labels of a backend (``languages``: label -> its ISO 639-3 code) that count as ``wanted`` (ISO
    639-3). Where the backend has a label of exactly that language: that label, and, for a backend whose
    macrolanguage labels mean "one of its members, undecided" (``coarse_macrolanguages``: heliport's ``hbs``
    for Croatian it cannot tell from Serbian), the label of its macrolanguage too; a backend that tells
    ``ind`` from ``msa`` otherwise keeps them apart. Else the labels :func:`same_language` relates to it
    (``zho`` -> ``cmn``, ``nor`` -> ``nob`` and ``nno``)."""
    exact = {label for label, lang in languages.items() if lang == wanted and lang not in NO_LANGUAGE}
    macro = macrolanguage(wanted)
    if exact and coarse_macrolanguages and macro is not None:
        exact |= {label for label, lang in languages.items() if lang == macro}
    return frozenset(exact) or frozenset(label for label, lang in languages.items() if same_language(wanted, lang))


def script_spec(script: str) -> str:
    """The Unicode scripts (``+``-separated, as :func:`~tokenmill.text.charclass.script_table` takes) of an
    ISO 15924 code: ``Latn`` -> ``Latn``, ``Jpan`` -> ``Hani+Hira+Kana``."""
    return _SCRIPT_GROUPS.get(script, script)


__all__ = [
    "NO_LANGUAGE",
    "WantedLanguage",
    "accepted_labels",
    "macrolanguage",
    "parse_language",
    "same_language",
    "script_spec",
    "to_iso639_3",
]
