"""Encode on worker processes that read their own line ranges of the cleaned text.

A tokenizer library that builds Python lists of ids holds the GIL while it does, so its own threads
are far from parallel (SentencePiece's ``encode(list, num_threads=2)`` runs at ~1.3 cores on two), and
pure-Python encoders (T2T subwords, whitespace words) use one core. Here each worker process reads an
item range of the cleaned file itself (the parent only counts the lines), encodes it on one thread,
flattens the ids to arrays and sends back (flat ids, lengths) with what the parent needs to finish the
range in input order: the unknown pieces' surfaces (SentencePiece fidelity, see
:class:`~tokenmill.prepare.tokenizing.UnknownSurfaces`) or the range's words in their own order of first
appearance (whitespace). The parent numbers those globally, writes, counts and reports progress, so the
store equals a one-process run's byte for byte.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain

import numpy as np

from tokenmill._core.forking import FORK_SHY
from tokenmill.prepare.parallel import pooled
from tokenmill.prepare.tokenizing import Found, UnknownSurfaces
from tokenmill.text.readers import Source
from tokenmill.vocab.tokenizer import Tokenizer

RANGE_LINES = 16384
"""Lines per worker range: small enough that the last range of a side leaves little idle time."""

PROCESS_BACKENDS = frozenset({"sentencepiece", "tiktoken", "t2t-subword", "whitespace"})
"""Backends encoded on worker processes. Hugging Face ``tokenizers`` stays on its own threads: its batch
encode already uses every core (and its Rust pool does not survive a fork)."""


class FirstSeen(dict):
    """word -> its number in the order of first appearance; looking up a new word numbers it."""

    def __missing__(self, word: str) -> int:
        number = self[word] = len(self)
        return number


def text_batches(lines: list[str], max_chars: int) -> Iterator[list[str]]:
    """``lines`` in consecutive runs of at most ``max_chars`` characters (at least one line each): a chunk
    of 65,536 long documents must not become one tokenizer call holding gigabytes of per-token objects."""
    if sum(map(len, lines)) <= max_chars:
        yield lines
        return
    ends = np.cumsum(np.fromiter(map(len, lines), dtype=np.int64, count=len(lines)))
    start = 0
    while start < len(lines):
        base = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + max_chars, side="right")))
        yield lines[start:stop]
        start = stop


def word_ids(lines: list[str], table: FirstSeen) -> tuple[np.ndarray, np.ndarray]:
    """Whitespace words of ``lines`` as (flat int32 ids numbered by ``table``, int64 lengths)."""
    rows = list(map(str.split, lines))
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    words = chain.from_iterable(rows)  # one lookup per word: a new word is numbered as it is met
    return np.fromiter(map(table.__getitem__, words), dtype=np.int32, count=int(lengths.sum())), lengths


@dataclass
class EncodedRange:
    """One range's ids as a worker sends them back (int32 work ids in the range's own numbering)."""

    lines: int
    flat: np.ndarray
    lengths: np.ndarray
    found: Found | None  # unknown pieces: (positions in flat, surfaces), when surfaces are kept
    words: list[str] | None  # whitespace: the range's words in its order of first appearance


@dataclass
class _WorkerState:
    source: Source
    tokenizer: Tokenizer | None  # None: whitespace words
    keep_surfaces: bool
    max_chars: int


_state: _WorkerState | None = None


def _init(state: _WorkerState) -> None:
    global _state
    _state = state


def _encode_range(bounds: tuple[int, int]) -> EncodedRange:
    state = _state
    assert state is not None, "worker not initialized"
    start, stop = bounds
    lines = next(state.source.chunks(start, stop, chunk_lines=stop - start)).src
    if state.tokenizer is None:
        table = FirstSeen()
        flat, lengths = word_ids(lines, table)
        return EncodedRange(len(lines), flat, lengths, None, list(table))
    tokenizer = state.tokenizer
    parts = [tokenizer.encode_batch(batch, num_threads=1) for batch in text_batches(lines, state.max_chars)]
    flat = np.concatenate([p[0] for p in parts]).astype(np.int32, copy=False)
    lengths = np.concatenate([p[1] for p in parts])
    found = UnknownSurfaces(tokenizer).find(lines, flat, lengths) if state.keep_surfaces else None
    return EncodedRange(len(lines), flat, lengths, found, None)


def forks() -> bool:
    """Whether workers can be forked (they inherit the loaded tokenizer: no model is pickled) and nothing
    loaded here minds a fork (:data:`FORK_SHY`)."""
    return "fork" in multiprocessing.get_all_start_methods() and not any(name in sys.modules for name in FORK_SHY)


def encoded_ranges(
    source: Source, tokenizer: Tokenizer | None, workers: int, *, keep_surfaces: bool, max_chars: int,
) -> Iterator[EncodedRange]:
    """Every range of ``source`` (:data:`RANGE_LINES` items each, read when called) encoded by
    ``tokenizer`` (None: whitespace words) on ``workers`` forked processes, in input order, at most two
    ranges per worker on their way at once."""
    total, step = source.scan(), RANGE_LINES
    ranges = [(start, min(start + step, total)) for start in range(0, total, step)]
    state = _WorkerState(source, tokenizer, keep_surfaces, max_chars)
    yield from pooled(_encode_range, ranges, workers, 2, _init, (state,))


def global_word_ids(encoded: EncodedRange, table: FirstSeen) -> np.ndarray:
    """A whitespace range's ids renumbered by the split's ``table`` (words in order of first appearance across
    ranges taken in input order: the numbering one process gives)."""
    assert encoded.words is not None
    mapping = np.fromiter(map(table.__getitem__, encoded.words), dtype=np.int32, count=len(encoded.words))
    return mapping[encoded.flat] if len(encoded.flat) else encoded.flat
