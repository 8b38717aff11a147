"""The :class:`Source` every input format is: aligned items (lines or rows) over files, counted, cut, read.

A source knows its files and how one file's items parse. The base class does the rest the same way for
every format: ``scan()`` counts items per file once (and checks alignment), ``ranges(k)`` cuts
``[0, len)`` into ``k`` contiguous ranges for tasks, ``chunks(start, stop)`` yields :class:`Chunk` of
``chunk_lines`` items for one range, in input order, whatever the format's own blocks are. Because a
range is a pure item range, the output of a run is the same whatever the task count.

A format subclasses it with :meth:`Source._count` (items per file, keeping whatever lets it seek),
:meth:`Source._file_blocks` (aligned lists of one file's items ``[start, stop)``), and the two methods
that carry the counting pass to another process (:meth:`index_state`, :meth:`restore_index`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from tokenmill.errors import ConfigError
from tokenmill.text.chunks import Block, Chunk, ReadOptions, rechunk, to_chunk
from tokenmill.text.io import PathLike
from tokenmill.text.stats import StepStats


class Source:
    """A sequence of aligned items spread over one or more files; subclasses say how a file parses.

    ``scan()`` counts items (checking alignment) before anything is read; ``len(source)`` scans if
    needed. ``chunks(start, stop)`` yields :class:`Chunk` for items ``[start, stop)``; ``ranges(k)``
    cuts the items into ``k`` contiguous ranges for parallel workers. ``stats`` accumulates counters
    of every read made through this object (pass ``stats=`` to collect them elsewhere).
    """

    parallel: bool = False
    unit: str = "line"
    """What one item is in the files: ``"line"`` (text, TSV, JSONL) or ``"row"`` (Parquet, Arrow)."""
    line_indexed: bool = True
    """Whether the counting pass is a line index over the files' bytes (what cluster engines make with tasks
    over byte ranges); a table format counts from its metadata instead."""

    def __init__(self, files: Sequence[PathLike], options: ReadOptions | None = None) -> None:
        if not files:
            raise ConfigError(f"{type(self).__name__}: no input files given")
        self.files = [str(p) for p in files]
        self.options = options or ReadOptions()
        self.stats = StepStats("read")
        self._bounds: np.ndarray | None = None  # cumulative item counts per file, starting at 0

    # counting ------------------------------------------------------------------------------------
    def _count(self) -> list[int]:
        """Items per file (per file pair for two-file parallel sources); keeps what reading a range needs."""
        raise NotImplementedError

    def _set_counts(self, counts: Sequence[int]) -> None:
        self._bounds = np.concatenate([[0], np.cumsum(np.asarray(counts, dtype=np.int64), dtype=np.int64)])

    def scan(self) -> int:
        """Count items in every file (once; cached) and check alignment; returns the total."""
        if self._bounds is None:
            self._set_counts(self._count())
        assert self._bounds is not None
        return int(self._bounds[-1])

    def __len__(self) -> int:
        return self.scan()

    def index_state(self) -> list[dict[str, Any]]:
        """The counting pass as JSON-able data (one dict per file with at least ``path`` and ``compression``),
        so a process on another machine reads a range after :meth:`restore_index` without counting again."""
        raise NotImplementedError

    def restore_index(self, state: Sequence[dict[str, Any]]) -> None:
        """Take a counting pass saved by :meth:`index_state` (for the same files, in the same order)."""
        raise NotImplementedError

    @property
    def seeks_ranges(self) -> bool:
        """Whether reading a short item range costs about its own size (worker processes may then read
        many small ranges each); False where a range is read from the start of a file or a whole block."""
        return False

    def text_bytes(self) -> int:
        """About how many bytes of text the items hold, for sizing chunks by bytes (never for output): here
        the local files' sizes as stored (0 for a file not on local disk); a format whose files are compressed
        in a way it can see through (Parquet's column chunks) says more truly."""
        return sum(os.path.getsize(f) for f in self.files if os.path.isfile(f))

    @property
    def file_counts(self) -> list[int]:
        """Items per file (per file pair for two-file parallel sources), after ``scan()``."""
        self.scan()
        assert self._bounds is not None
        return np.diff(self._bounds).tolist()

    def ranges(self, k: int) -> list[tuple[int, int]]:
        """``k`` contiguous ``(start, stop)`` item ranges of near-equal size covering the source."""
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        cuts = (np.arange(k + 1, dtype=np.int64) * self.scan()) // k
        return [(int(cuts[i]), int(cuts[i + 1])) for i in range(k)]

    # reading -------------------------------------------------------------------------------------
    def _file_blocks(self, i: int, start: int, stop: int, stats: StepStats) -> Iterator[Block]:
        """Aligned lists (source, target or None) of file ``i``'s items ``[start, stop)``, in order."""
        raise NotImplementedError

    def chunks(
        self,
        start: int = 0,
        stop: int | None = None,
        *,
        chunk_lines: int | None = None,
        stats: StepStats | None = None,
    ) -> Iterator[Chunk]:
        """Yield chunks of aligned items ``[start, stop)`` (all by default), in input order.

        Counting (and the alignment check) happens on the first ``next()``, before any item is
        yielded; call :meth:`scan` yourself to fail even earlier.
        """
        total = self.scan()
        stop = total if stop is None else stop
        if not 0 <= start <= stop <= total:
            raise ConfigError(f"item range [{start}, {stop}) is outside [0, {total}) of {self.files[0]}")
        stats = stats if stats is not None else self.stats
        n = chunk_lines or self.options.chunk_lines
        pos = start
        may_skip = "skip" in (self.options.on_invalid_utf8, self.options.on_malformed)
        for s, t in rechunk(self._blocks(start, stop, stats), n):
            yield to_chunk(pos, s, t, stats, may_skip)
            pos += len(s)

    def _blocks(self, start: int, stop: int, stats: StepStats) -> Iterator[Block]:
        assert self._bounds is not None
        for i in range(len(self._bounds) - 1):
            lo, hi = int(self._bounds[i]), int(self._bounds[i + 1])
            a, b = max(start, lo), min(stop, hi)
            if a < b:
                yield from self._file_blocks(i, a - lo, b - lo, stats)


__all__ = ["Source"]
