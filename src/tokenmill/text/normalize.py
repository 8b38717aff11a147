"""Unicode clean-up of text lines, applied to whole chunks at C speed.

Steps run in this fixed order; each is optional (:class:`Normalizer` fields):

1. ``nfkc``: Unicode NFKC (compatibility forms to plain ones: ligatures, full-width forms, ``①``...).
2. ``fullwidth``: the full-width to half-width folding of the common cleaning scripts: U+FF01-U+FF5E
   to U+0021-U+007E and the ideographic space U+3000 to a space. A subset of NFKC, for when NFKC
   is too much (it also rewrites ``…``, ``™``, superscripts...).
3. ``remove_control``: control characters (Unicode category Cc) and the stray byte-order mark U+FEFF
   are removed. The whitespace-like controls (``\\x0b \\x0c \\r \\x1c-\\x1f \\x85``) become a space
   instead, so words they separated stay separate. TAB is kept (it is whitespace, and step 4 turns
   it into a space when enabled).
4. ``collapse_whitespace``: every run of Unicode whitespace (``str.split()``'s definition: spaces,
   tabs, U+00A0, U+2028, U+3000...) becomes one space; leading and trailing whitespace is removed.

NFKC first, so what it produces (e.g. U+2003 EM SPACE from compatibility forms) is seen by the later
steps; control removal before the collapse, so a deleted control never leaves two spaces behind.

Speed: a chunk is joined with ``\\n`` (lines never contain it when read by tokenmill.text.readers),
turned into one numpy array of code points and steps 2-4 become table look-ups and masks over it
(whitespace of any kind to U+0020); ASCII chunks do the same with ``bytes.translate``. Masks over
the same array find the few lines that collapsing changes (two spaces in a row, a space at either end),
and only those are collapsed, line by line, after the split. NFKC runs only on the lines that are not already
NFKC (``unicodedata.is_normalized``), after the full-width folding, which gives the same result (the
folding replaces characters by their own compatibility decompositions) and leaves far fewer lines
to normalize in CJK text. A chunk whose items contain ``\\n`` (possible from JSONL) is processed item
by item, with the same result.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, fields
from itertools import repeat
from operator import ne

import numpy as np

from tokenmill.settings import check_settings
from tokenmill.text.stats import StepStats

STEPS = ("nfkc", "fullwidth", "remove_control", "collapse_whitespace")

FULLWIDTH_TABLE: dict[int, int] = {0x3000: 0x20, **{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}}
# whitespace-like control characters: replaced by a space (never glue two words together)
SPACE_CONTROLS = "\x0b\x0c\r\x1c\x1d\x1e\x1f\x85"
# category Cc is exactly U+0000-U+001F and U+007F-U+009F; TAB and LF survive control removal
DELETED = (
    "".join(chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in SPACE_CONTROLS + "\t\n") + "\ufeff"
)
# str.isspace() characters (checked against unicodedata in the tests)
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)

_KEEP, _DROP, _SPACE = 0, 1, 2
_CTRL = np.zeros(0xFF01, dtype=np.uint8)  # control-step action per code point; the last entry (keep) covers the rest
_CTRL[[ord(c) for c in DELETED]] = _DROP
_CTRL[[ord(c) for c in SPACE_CONTROLS]] = _SPACE
_WS_LIMIT = 0x3001
_WS = np.zeros(_WS_LIMIT + 1, dtype=bool)  # whitespace other than "\n" per code point (past the end: no)
_WS[[ord(c) for c in WHITESPACE if c != "\n"]] = True
_NL = 10
_ASCII_DELETE = bytes(ord(c) for c in DELETED if ord(c) < 0x80)
_ASCII_CONTROL_MAP = bytes.maketrans(SPACE_CONTROLS[:-1].encode(), b" " * (len(SPACE_CONTROLS) - 1))
_ASCII_SPACE_MAP = bytes.maketrans(b"\t\x0b\x0c\r\x1c\x1d\x1e\x1f", b" " * 8)
_ASCII_BOTH_MAP = _ASCII_CONTROL_MAP.translate(_ASCII_SPACE_MAP)  # both mappings in one table: one pass

# What a code point asks of the fast check (Normalizer._suspects): nothing, a step's work, a space, LF
_C_NONE, _C_FLAG, _C_SPACE, _C_LF = 0, 1, 2, 3
_CLASS = np.zeros(0xFF60 + 1, dtype=np.uint8)  # code points past the end (clipped to the last entry): nothing
_CLASS[[ord(c) for c in DELETED + SPACE_CONTROLS + WHITESPACE]] = _C_FLAG
_CLASS[0x20], _CLASS[_NL] = _C_SPACE, _C_LF
_CLASS_FOLD = _CLASS.copy()  # with the full-width forms that folding (or NFKC) changes
_CLASS_FOLD[[*FULLWIDTH_TABLE]] = _C_FLAG
_ASCII_CLASS = _CLASS[:256].tobytes()  # the same for ASCII text, as a bytes.translate table


@dataclass(frozen=True)
class Normalizer:
    """Which clean-up steps to run (order fixed, see module doc). Call it on a list of strings."""

    nfkc: bool = False  # Unicode NFKC; SentencePiece's nmt_nfkc rule does this too
    fullwidth: bool = False  # full-width ASCII forms and U+3000 to half-width (seed script's q2b)
    remove_control: bool = True  # delete control chars and U+FEFF; whitespace-like controls -> space
    collapse_whitespace: bool = True  # whitespace runs -> one space, strip both ends

    def __post_init__(self) -> None:
        check_settings(Normalizer, self, lambda name: f"normalize settings: {name}")

    @property
    def enabled(self) -> tuple[str, ...]:
        """Names of the steps that will run, in order."""
        return tuple(f.name for f in fields(self) if getattr(self, f.name))

    def __call__(self, lines: list[str], stats: StepStats | None = None, per_step: bool = False) -> list[str]:
        """Normalized copy of ``lines`` (same length and order).

        With ``stats``: adds ``lines`` and ``changed`` (lines that differ from the input); with
        ``per_step=True`` also ``changed_<step>`` per step, at the cost of one pass per step.
        """
        if not lines or not self.enabled:
            if stats is not None:
                stats.add("lines", len(lines))
                stats.ensure("changed")
            return list(lines)
        if stats is not None and per_step:
            return self._counted(lines, stats)
        out, changed = self._apply(lines)
        if stats is not None:
            stats.add("lines", len(lines))
            stats.add("changed", changed)
        return out

    def _counted(self, lines: list[str], stats: StepStats) -> list[str]:
        """Step by step with a changed-line count after each (costs one comparison pass per step)."""
        stats.add("lines", len(lines))
        cur = list(lines)
        for step in self.enabled:
            one = Normalizer(**{name: name == step for name in STEPS})
            nxt = one._apply_list(cur)
            stats.add(f"changed_{step}", sum(map(ne, cur, nxt)))
            cur = nxt
        stats.add("changed", sum(map(ne, lines, cur)))
        return cur

    def _apply_list(self, lines: list[str]) -> list[str]:
        return self._apply(lines)[0]

    def _apply(self, lines: list[str]) -> tuple[list[str], int]:
        """(normalized copy of ``lines``, lines changed). Only the lines some step may change are
        normalized (see :meth:`_suspects`); the others are the input's own ``str`` objects."""
        if not lines:
            return [], 0
        text = "\n".join(lines)
        todo = self._suspects(text, len(lines))
        if todo is None:  # an item holds "\n" (no step adds or removes one): item by item
            out = [self._one(x) for x in lines]
            return out, sum(map(ne, lines, out))
        out = list(lines)
        if not len(todo):
            return out, 0
        picked = todo.tolist()
        before = [lines[i] for i in picked]
        after = self._lines("\n".join(before))
        for i, line in zip(picked, after, strict=True):
            out[i] = line
        return out, sum(map(ne, before, after))

    def _suspects(self, text: str, n: int) -> np.ndarray | None:
        """Indices of the lines of ``text`` (``n`` lines joined by ``\n``) that an enabled step may change:
        a control character, whitespace other than U+0020, a full-width form (when folding), two spaces in
        a row or a space at either end (when collapsing), or not NFKC (when normalizing). A line with none
        of these is left as it is by every step. None when ``text`` has more than ``n`` lines."""
        fold = self.nfkc or self.fullwidth
        if text.isascii():
            cls = np.frombuffer(text.encode("ascii").translate(_ASCII_CLASS), dtype=np.uint8)
        else:
            cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
            cls = np.take(_CLASS_FOLD if fold else _CLASS, cps, mode="clip")  # past the table: nothing to do
        newline = cls == _C_LF
        ends = np.flatnonzero(newline)
        if len(ends) != n - 1:
            return None
        bad = cls == _C_FLAG
        if self.collapse_whitespace and len(cls):
            space = cls == _C_SPACE
            bad[1:] |= space[1:] & (cls[:-1] >= _C_SPACE)  # a space after a space or LF
            bad[:-1] |= space[:-1] & newline[1:]  # ... before LF
            bad[0] |= space[0]  # ... first or last
            bad[-1] |= space[-1]
        todo = np.unique(np.searchsorted(ends, np.flatnonzero(bad)))
        if self.nfkc and not text.isascii() and not unicodedata.is_normalized("NFKC", text):
            lines = text.split("\n")
            ok = np.fromiter(map(unicodedata.is_normalized, repeat("NFKC"), lines), dtype=bool, count=n)
            todo = np.union1d(todo, np.flatnonzero(~ok))
        return todo

    def _one(self, item: str) -> str:
        """One item that may contain ``\\n`` (JSONL): whitespace like any other when collapsing."""
        return "\n".join(self._lines(item.replace("\n", " ") if self.collapse_whitespace else item))

    def _lines(self, text: str) -> list[str]:
        """All enabled steps on a ``\\n``-joined chunk; its lines."""
        if not text.isascii():
            if self.nfkc or self.fullwidth:
                cps = _codepoints(text)
                _fold_fullwidth(cps)
                text = cps.tobytes().decode("utf-32-le", "surrogatepass")
            if self.nfkc and not unicodedata.is_normalized("NFKC", text):
                text = _nfkc_lines(text)
        if not (self.remove_control or self.collapse_whitespace):
            return text.split("\n")
        if text.isascii():
            data = self._ascii(text.encode("ascii"))
            cps = np.frombuffer(data, dtype=np.uint8)
            text = data.decode("ascii")
        else:
            cps = _codepoints(text)
            changed = False
            if self.remove_control:
                cps, changed = _remove_control(cps)
            if self.collapse_whitespace:
                changed = _whitespace_to_space(cps) or changed
            if changed:
                text = cps.tobytes().decode("utf-32-le", "surrogatepass")
        lines = text.split("\n")
        if self.collapse_whitespace:
            for i in _unsqueezed_lines(cps).tolist():
                lines[i] = " ".join(lines[i].split())
        return lines

    def _ascii(self, data: bytes) -> bytes:
        """Step 3 and the space mapping of step 4 on ASCII bytes (``bytes.translate``); runs of spaces are
        left to :func:`_unsqueezed_lines`."""
        if self.remove_control:
            return data.translate(_ASCII_BOTH_MAP if self.collapse_whitespace else _ASCII_CONTROL_MAP, _ASCII_DELETE)
        return data.translate(_ASCII_SPACE_MAP) if self.collapse_whitespace else data


def _codepoints(text: str) -> np.ndarray:
    """Writable uint32 array of the code points of ``text`` (lone surrogates kept as they are)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).copy()


def _fold_fullwidth(cps: np.ndarray) -> None:
    """In place: U+FF01-U+FF5E to U+0021-U+007E, U+3000 to U+0020."""
    wide = (cps >= 0xFF01) & (cps <= 0xFF5E)
    cps[wide] -= 0xFEE0
    cps[cps == 0x3000] = 0x20


def _nfkc_lines(text: str) -> str:
    """NFKC of every line that is not NFKC already (most lines are, so most are left alone)."""
    lines = text.split("\n")
    ok = np.fromiter(map(unicodedata.is_normalized, repeat("NFKC"), lines), dtype=bool, count=len(lines))
    nfc, nfkd = unicodedata.normalize, unicodedata.normalize
    for i in np.flatnonzero(~ok).tolist():  # NFKC == NFC(NFKD(x)); CPython's NFKC is ~8x slower on CJK
        lines[i] = nfc("NFC", nfkd("NFKD", lines[i]))
    return "\n".join(lines)


def _remove_control(cps: np.ndarray) -> tuple[np.ndarray, bool]:
    """Drop Cc (but TAB, LF) and U+FEFF; whitespace-like controls become a space. (array, changed)."""
    action = np.take(_CTRL, cps, mode="clip")  # code points past the table clip to its last entry: keep
    if not action.any():
        return cps, False
    cps[action == _SPACE] = 0x20
    drop = action == _DROP
    return (cps[~drop] if drop.any() else cps), True


def _whitespace_to_space(cps: np.ndarray) -> bool:
    """In place: every whitespace code point but LF becomes U+0020; True if any changed."""
    other = np.take(_WS, cps, mode="clip")  # past the table: not whitespace
    other &= cps != 0x20
    if not other.any():
        return False
    cps[other] = 0x20
    return True


def _unsqueezed_lines(cps: np.ndarray) -> np.ndarray:
    """Indices of the LF-separated lines of ``cps`` (whitespace already mapped to U+0020) that collapsing
    changes: two spaces in a row, or a space at either end. Found with a few masks over the whole chunk;
    these lines are few, so only they are collapsed one by one (``str.replace`` loops over a whole chunk
    cost more: a two-space pattern is searched slowly in text full of single spaces)."""
    space = cps == 0x20
    if not len(cps) or not space.any():
        return np.empty(0, dtype=np.int64)
    newline = cps == _NL
    bad = np.empty(len(cps), dtype=bool)
    bad[0] = True  # a space first
    np.logical_or(space[:-1], newline[:-1], out=bad[1:])  # ... or after a space or LF
    bad[:-1] |= newline[1:]  # ... or before LF
    bad[-1] = True  # ... or last
    bad &= space
    where = np.flatnonzero(bad)
    if not len(where):
        return where
    return np.unique(np.searchsorted(np.flatnonzero(newline), where))


def normalize_lines(lines: list[str], normalizer: Normalizer | None = None) -> list[str]:
    """Convenience: ``Normalizer()(lines)`` with the default steps (control removal + whitespace)."""
    return (normalizer or Normalizer())(lines)


__all__ = [
    "DELETED",
    "FULLWIDTH_TABLE",
    "SPACE_CONTROLS",
    "STEPS",
    "WHITESPACE",
    "Normalizer",
    "normalize_lines",
]
