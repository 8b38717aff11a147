"""Words and sentences of English text as the LM quality filters count them.

datatrove's Gopher, C4 and FineWeb filters count words with spaCy's blank English tokenizer. It is
emulated here with the same procedure and our own character classes: the text is cut at whitespace; each
piece loses punctuation from its front (quotes, brackets, ``_``, ``#``, currency signs ...) and back (the
same, ``'s``, a period after a lowercase letter, a digit or two capitals), one mark at a time from both
ends; what is left is kept whole when it is a URL, else cut at infixes (``...``, a hyphen or ``/ : = < >``
between a letter or digit and a letter, ``.`` between a lowercase and an uppercase letter, ``,`` between
letters, arithmetic between digits); contractions (``do`` + ``n't``, ``we`` + ``'re``) and ``cannot`` are
split. What still differs (spaCy's list of exceptions: ``Mr.``, emoticons, ``Id`` as ``I d`` ...) is listed
in docs/how-to/cleaning.md; the oracle test measures it on real documents.

A sentence, as spaCy's sentencizer cuts one, ends at a token that is one sentence-final mark (``.``, ``!``,
``?`` ...), and the next one starts at the next token that is not punctuation.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_QUOTES = "'\"”“`‘´’‚„»«「」『』（）〔〕【】《》〈〉⟦⟧"
_PUNCT = "…,:;!?¿؟¡()[]{}<>_#*&。？！，、；：～·।،۔؛٪"
_CURRENCY = "$£€¥฿₽₴₹₩₪₫₱₿"
_PREFIX = re.compile(rf"\.\.+|[§%=—–{re.escape(_PUNCT + _QUOTES + _CURRENCY)}]|\+(?![0-9])")
_SUFFIX = re.compile(
    rf"(?:\.\.+|['’][sS]|[—–{re.escape(_PUNCT + _QUOTES)}]|(?<=[0-9])[+{re.escape(_CURRENCY)}%]"
    rf"|(?<=[0-9a-z%'\"”’…{re.escape(_PUNCT + _QUOTES)}])\.|(?<=[A-Z][A-Z])\.)$")
_INFIX = re.compile(
    r"\.\.+|…|(?<=[0-9])[+\-*^](?=[0-9-])|(?<=[^\W\dA-Z_])\.(?=[^\W\da-z_])|(?<=[^\W\d_]),(?=[^\W\d_])"
    r"|(?<=[^\W_])(?:---|--|-|–|—|~)(?=[^\W\d_])|(?<=[^\W_])[:<>=/](?=[^\W\d_])")
_URL = re.compile(r"(?:[a-zA-Z][a-zA-Z0-9+.-]*://|www\.)\S+")
_CONTRACTION = re.compile(r"(?i)(\w+?)(n['’]t|['’](?:re|ll|ve|m|d))")
_SPECIAL: dict[str, tuple[str, ...]] = {
    "cannot": ("can", "not"), "Cannot": ("Can", "not"), "id": ("i", "d"), "Id": ("I", "d"), "and/or": ("and/or",),
    "''": ("''",), **{word: (word,) for word in (
        "e.g.", "i.e.", "E.g.", "I.e.", "Inc.", "Mr.", "Mrs.", "Ms.", "Dr.", "St.", "vs.", "Co.", "Corp.", "Ltd.",
        "Jr.", "Sr.", "a.m.", "p.m.")},
}


def _special(piece: str) -> tuple[str, ...] | None:
    if piece in _SPECIAL:
        return _SPECIAL[piece]
    found = _CONTRACTION.fullmatch(piece)
    return found.groups() if found else None


def _strip_affixes(piece: str, prefixes: list[str], suffixes: list[str]) -> str:
    """``piece`` less its punctuation at both ends (put in ``prefixes``/``suffixes``, suffixes last first)."""
    while piece and not _special(piece):
        start = _PREFIX.match(piece)
        pre = start.end() if start else 0
        end = _SUFFIX.search(piece, pre)
        suf = len(piece) - end.start() if end and end.start() < len(piece) else 0
        if not pre and not suf:
            break
        if pre:
            prefixes.append(piece[:pre])
        if suf and pre + suf <= len(piece):
            suffixes.append(piece[len(piece) - suf:])
            piece = piece[pre:len(piece) - suf]
        else:
            piece = piece[pre:]
    return piece


def _split_piece(piece: str, out: list[str]) -> None:
    prefixes: list[str] = []
    suffixes: list[str] = []
    core = _strip_affixes(piece, prefixes, suffixes)
    out += prefixes
    special = _special(core) if core else None
    if special:
        out += special
    elif core and _URL.fullmatch(core):
        out.append(core)
    elif core:
        at = 0
        for infix in _INFIX.finditer(core):
            if infix.start() == 0 or infix.end() == infix.start():
                continue
            out += [core[at:infix.start()], infix.group()]
            at = infix.end()
        if at < len(core):
            out.append(core[at:])
    out += reversed(suffixes)


_PIECES = re.compile(r"([A-Za-z]*[a-z]|[0-9]+)([,;:!?.]?)(?!\S)|(\S+)")
"""A whitespace-separated piece: a plain word (ASCII letters ending in a lowercase one, or digits) with at most
one mark after it, whose split is known without the affix loop (the mark is a suffix of its own) unless it
is one of the exceptions, or any other piece (groups 1-2, or group 3)."""


def split_words(text: str) -> list[str]:
    """The words (and punctuation tokens) of ``text``, as spaCy's English tokenizer splits them, nearly."""
    out: list[str] = []
    for word, mark, other in _PIECES.findall(text):
        if other or word in _SPECIAL or word + mark in _SPECIAL:
            _split_piece(other or word + mark, out)
        else:
            out.append(word)
            if mark:
                out.append(mark)
    return out


SENTENCE_MARKS = frozenset(".!?։؟۔܀܁܂߹।॥၊။።፧፨᙮᜵᜶᠃᠉᥄᥅᪨᪩᪪᪫᭚᭛᭞᭟᰻᰼᱾᱿‼‽⁇⁈⁉⸮⸼꓿꘎꘏꛳꛷꡶꡷꣎꣏꤯꧈꧉꩝꩞꩟꫰꫱꯫﹒﹖﹗！．？｡")
"""Marks that end a sentence where they stand alone as a token (the sentence-final marks of Unicode's
scripts, as spaCy's sentencizer lists them)."""


@functools.cache
def is_punctuation(token: str) -> bool:
    """Whether every character of ``token`` is Unicode punctuation (category P*), as spaCy's ``is_punct``."""
    return all(unicodedata.category(c).startswith("P") for c in token)


def count_sentences(text: str) -> int:
    """Sentences in ``text`` (one line): 1 + the places where a non-punctuation token follows a lone
    sentence-final mark; 0 for text without tokens."""
    tokens = split_words(text)
    if not tokens:
        return 0
    sentences, seen_mark = 1, False
    for token in tokens[1:]:
        if token in SENTENCE_MARKS:
            seen_mark = True
        elif seen_mark and not is_punctuation(token):
            sentences, seen_mark = sentences + 1, False
    return sentences


__all__ = ["SENTENCE_MARKS", "count_sentences", "is_punctuation", "split_words"]
