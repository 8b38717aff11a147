"""What every source yields: :class:`Chunk` objects of aligned items, and the options shared by every read.

A source's parser marks an item it could not read as ``None`` (a line dropped for invalid UTF-8) or
:data:`MALFORMED` (a TSV/JSONL/table row without the expected fields, under ``on_malformed="skip"``);
:func:`to_chunk` drops and counts both, so every format counts skips the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import compress
from typing import Literal

import numpy as np

from tokenmill.errors import ConfigError
from tokenmill.text.stats import StepStats

OnInvalidUtf8 = Literal["error", "replace", "skip"]
OnMalformed = Literal["error", "skip"]

MALFORMED = object()
"""Placeholder for a row that is skipped under ``on_malformed="skip"``."""
MALFORMED_FIX = "Fix the row, or pass --on-malformed skip to drop such rows (they are counted)"

@dataclass(frozen=True)
class ReadOptions:
    """How sources are read; one object is shared by every source of a run."""

    on_invalid_utf8: OnInvalidUtf8 = "error"  # "error" | "replace" (U+FFFD, counted) | "skip" (counted)
    on_malformed: OnMalformed = "error"  # TSV/JSONL rows without the expected fields: "error" | "skip"
    chunk_lines: int = 8192  # items per yielded Chunk (the last one may be shorter)
    block_bytes: int = 1 << 20  # bytes read per system call; lines longer than this still work
    index_every: int = 1 << 14  # one byte offset kept per this many lines, for seeking to a range start (the
    # pipeline cleans ranges of 16,384 items: each starts at a kept offset, nothing is read twice)

    def __post_init__(self) -> None:
        if self.on_invalid_utf8 not in ("error", "replace", "skip"):
            raise ConfigError(f"on_invalid_utf8={self.on_invalid_utf8!r}: choose one of 'error', 'replace', 'skip'")
        if self.on_malformed not in ("error", "skip"):
            raise ConfigError(f"on_malformed={self.on_malformed!r}: choose one of 'error', 'skip'")
        for name in ("chunk_lines", "block_bytes", "index_every"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be a positive integer, got {getattr(self, name)!r}")



CHUNK_BYTES = 16 << 20
"""Input bytes a chunk holds (about) where items are long (LM documents): see :func:`byte_bounded_lines`."""


def byte_bounded_lines(chunk_lines: int, items: int, size: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """``chunk_lines``, or fewer items a chunk (at least 1,024) when ``items`` items fill ``size`` bytes so
    that a chunk would hold more than ``chunk_bytes`` of input: 65,536 documents of 2.3 kB are 150 MB of
    text (and ten times that as Python strings and words), a chunk of a corpus-sized part. Chunks change no
    output; this keeps the text a reader holds bounded by a setting, not by the corpus."""
    if items <= 0 or size <= 0:
        return chunk_lines
    return int(min(chunk_lines, max(1024, chunk_bytes * items // size)))


@dataclass
class Chunk:
    """Aligned items read from a source: ``src[i]`` pairs with ``tgt[i]`` (``tgt`` None if monolingual).

    ``start`` is the 0-based item number (over all files of the source, in order) of the first item
    consumed into this chunk; ``n_read`` counts consumed items, including any skipped under a policy,
    so consecutive chunks satisfy ``next.start == start + n_read``.
    """

    start: int
    n_read: int
    src: list[str]
    tgt: list[str] | None = None
    extra: list[str] | None = None
    """Lines carried along with the pairs (e.g. word alignments); cleaning keeps or drops them with their pair."""
    positions: np.ndarray | None = None
    """When items were skipped while reading: the position of each kept item among the ``n_read`` consumed
    (its item number is ``start + positions[i]``); None when nothing was skipped (``start + i``)."""

    @property
    def lines(self) -> list[str]:
        """The items of a monolingual chunk (alias of ``src``)."""
        return self.src

    def __len__(self) -> int:
        return len(self.src)


Block = tuple[list, "list | None"]


def rechunk(blocks: Iterator[Block], n: int) -> Iterator[Block]:
    """Re-cut blocks of aligned lists into blocks of exactly ``n`` items (the last may be shorter)."""
    src: list = []
    tgt: list | None = None
    for s, t in blocks:
        if not src and len(s) == n:  # already the right size: pass through without copying
            yield s, t
            continue
        src += s
        if t is not None:
            tgt = t if tgt is None else tgt + t
        while len(src) >= n:
            yield src[:n], (None if tgt is None else tgt[:n])
            src = src[n:]
            tgt = None if tgt is None else tgt[n:]
    if src:
        yield src, tgt


def to_chunk(start: int, src: list, tgt: list | None, stats: StepStats, may_skip: bool) -> Chunk:
    """Drop items marked skipped (None: invalid UTF-8; MALFORMED: bad row) from a block, counting them.

    ``may_skip`` is False when no policy is "skip": then no item can be marked and nothing is scanned.
    """
    n = len(src)
    stats.add("read", n)
    positions = None
    if may_skip:  # the skip counters always, in this order: the counts' order does not depend on chunking
        flagged = None in src or MALFORMED in src or (tgt is not None and None in tgt)
        bad_utf8 = bad_row = [False] * n
        if flagged:
            sides = (src,) if tgt is None else (src, tgt)
            bad_utf8 = [any(side[i] is None for side in sides) for i in range(n)]
            bad_row = [src[i] is MALFORMED and not bad_utf8[i] for i in range(n)]
        stats.add("invalid_utf8_skipped", sum(bad_utf8))
        stats.add("malformed_skipped", sum(bad_row))
        if flagged:
            keep = [not (u or b) for u, b in zip(bad_utf8, bad_row, strict=True)]
            positions = np.flatnonzero(keep)
            src = list(compress(src, keep))
            tgt = None if tgt is None else list(compress(tgt, keep))
    stats.add("yielded", len(src))
    return Chunk(start, n, src, tgt, positions=positions)



__all__ = [
    "MALFORMED",
    "MALFORMED_FIX",
    "Block",
    "Chunk",
    "OnInvalidUtf8",
    "OnMalformed",
    "ReadOptions",
    "rechunk",
    "to_chunk",
]
