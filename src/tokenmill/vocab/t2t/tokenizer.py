"""Tensor2Tensor's invertible word splitter, reproduced exactly and vectorized over many lines.

T2T splits text wherever an alphanumeric character (Unicode category L* or N*) meets a
non-alphanumeric one, then drops every token that is a single space unless it is the first or the
last token of the text.  Decoding puts one space back between two adjacent alphanumeric tokens.

The classification uses the running Python's ``unicodedata`` (as T2T does), so results match T2T
run on the same Python version.  ``str.isalnum`` is exactly "category L* or N*" there; the table
is built from it once per process.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

_SPACE = 32


@lru_cache(maxsize=1)
def alnum_table() -> np.ndarray:
    """int8 lookup table over all code points: 1 where T2T counts the character as alphanumeric.

    T2T builds its set from ``range(sys.maxunicode)`` (U+10FFFF itself is never alphanumeric)."""
    flags = bytes(chr(i).isalnum() for i in range(sys.maxunicode)) + b"\x00"
    return np.frombuffer(flags, dtype=np.int8)


def is_alnum_char(char: str) -> bool:
    """Whether T2T's tokenizer treats ``char`` as alphanumeric."""
    return bool(alnum_table()[ord(char)])


def _codepoints(text: str) -> np.ndarray:
    """The code points of ``text`` as uint32 (lone surrogates are kept, as Python strings allow)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def token_spans(lines: Sequence[str]) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """Split every line as T2T's ``tokenizer.encode`` would, without a per-character Python loop.

    Returns ``(joined, starts, ends, counts)``: ``joined`` is the lines joined by one separator
    character, ``joined[starts[k]:ends[k]]`` is the k-th kept token, and ``counts[i]`` is how many
    tokens line ``i`` produced (tokens of line i follow those of line i-1).
    """
    joined = "\n".join(lines)
    n_lines = len(lines)
    if not joined:
        return joined, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(n_lines, np.int64)
    cp = _codepoints(joined)
    cls = alnum_table()[cp]
    line_len = np.fromiter((len(s) for s in lines), dtype=np.int64, count=n_lines)
    line_start = np.zeros(n_lines, np.int64)
    np.cumsum(line_len[:-1] + 1, out=line_start[1:])
    line_end = line_start + line_len
    # The separators form their own class so that no token crosses a line boundary.
    cls[line_end[:-1]] = 2
    change = np.flatnonzero(cls[1:] != cls[:-1]) + 1
    starts = np.concatenate(([0], change))
    ends = np.concatenate((change, [len(joined)]))
    keep = cls[starts] != 2
    starts, ends = starts[keep], ends[keep]
    line_of = np.searchsorted(line_start, starts, side="right") - 1
    # A single space is dropped unless it is the first or the last token of its line.
    single_space = (ends - starts == 1) & (cp[starts] == _SPACE) if len(starts) else keep[:0]
    if single_space.any():
        first = starts == line_start[line_of]
        last = ends == line_end[line_of]
        keep2 = ~single_space | first | last
        starts, ends, line_of = starts[keep2], ends[keep2], line_of[keep2]
    counts = np.bincount(line_of, minlength=n_lines).astype(np.int64)
    return joined, starts, ends, counts


def tokenize_many(lines: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """All tokens of all lines (flat, in order) and the number of tokens per line."""
    joined, starts, ends, counts = token_spans(lines)
    return [joined[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=False)], counts


def tokenize(text: str) -> list[str]:
    """T2T's ``tokenizer.encode(text)``: the list of tokens of one string."""
    if not text:
        return []
    return tokenize_many([text])[0]


def detokenize(tokens: Sequence[str]) -> str:
    """T2T's ``tokenizer.decode``: join tokens, putting a space between two alphanumeric ones."""
    table = alnum_table()
    out: list[str] = []
    prev_alnum = False
    for i, token in enumerate(tokens):
        alnum = bool(table[ord(token[0])])
        if i > 0 and prev_alnum and alnum:
            out.append(" ")
        out.append(token)
        prev_alnum = alnum
    return "".join(out)


def count_tokens(lines: Iterable[str], chunk_chars: int = 1 << 22) -> Counter[str]:
    """Token counts over ``lines`` (T2T's ``corpus_token_counts`` / ``build_from_generator`` loop).

    Lines are processed in chunks of about ``chunk_chars`` characters to bound memory."""
    counts: Counter[str] = Counter()
    chunk: list[str] = []
    size = 0
    for line in lines:
        chunk.append(line)
        size += len(line) + 1
        if size >= chunk_chars:
            counts.update(tokenize_many(chunk)[0])
            chunk, size = [], 0
    if chunk:
        counts.update(tokenize_many(chunk)[0])
    return counts
