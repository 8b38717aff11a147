"""T2T's token escaping: how a token becomes a string of vocabulary characters ending in ``_``.

``\\`` becomes ``\\\\``, ``_`` becomes ``\\u``, a character outside the alphabet (and always a newline)
becomes ``\\NNN;`` with its decimal code point, and ``_`` is appended.  Because an escaped token has
no other ``_``, concatenated subtokens split back into tokens at the underscores.
"""

from __future__ import annotations

import re
from collections.abc import Set

ESCAPE_CHARS = frozenset("\\_u;0123456789")
_UNESCAPE = re.compile(r"\\u|\\\\|\\([0-9]+);")
_UNDEFINED = "\u3013"  # what T2T substitutes for a \NNN; that names no character


def escape_token(token: str, alphabet: Set[str]) -> str:
    """T2T's ``_escape_token``: escape ``token`` against ``alphabet`` and append ``_``."""
    token = token.replace("\\", "\\\\").replace("_", "\\u")
    if "\n" not in token and alphabet.issuperset(token):
        return token + "_"
    return "".join(c if c in alphabet and c != "\n" else f"\\{ord(c)};" for c in token) + "_"


def _unescape_match(match: re.Match[str]) -> str:
    digits = match.group(1)
    if digits is None:
        return "_" if match.group(0) == "\\u" else "\\"
    try:
        return chr(int(digits))
    except (ValueError, OverflowError):
        return _UNDEFINED


def unescape_token(escaped: str) -> str:
    """T2T's ``_unescape_token``: drop one trailing ``_`` and undo the escapes."""
    trimmed = escaped[:-1] if escaped.endswith("_") else escaped
    if "\\" not in trimmed:
        return trimmed
    return _UNESCAPE.sub(_unescape_match, trimmed)
