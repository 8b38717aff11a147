"""Run the chunk-local part of cleaning on worker processes, results back in input order (the
encode stage's threads are :func:`tokenmill._core.ordered.ordered_map`).

:meth:`tokenmill.text.Cleaner.local` depends on its chunk only, so it can run anywhere; the
pipeline feeds chunks to a process pool with a bounded number in flight (memory stays flat),
takes results in submission order, and does the order-dependent dedup itself. Each result
carries the counters of that chunk, so the merged statistics equal a single-process run's.

:func:`clean_blocks` goes further for a plain, seekable input: the workers read and decode their own
item ranges (the parent only counts the lines) and send back each side's kept lines as one UTF-8
block (:class:`~tokenmill.text.line_block.LineBlock`) with the dedup keys, so the parent neither
decodes the input nor rebuilds lists of strings: it drops duplicates by a mask over the block's
lines and writes the bytes.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from tokenmill.text import CleanConfig, Cleaner, LeakageFilter
from tokenmill.text.cleaner import CleanChunk
from tokenmill.text.dedup import first_occurrences
from tokenmill.text.drop_sample import DropSample
from tokenmill.text.line_block import LineBlock
from tokenmill.text.readers import Chunk, Source
from tokenmill.text.stats import StepStats

Item = TypeVar("Item")
Result = TypeVar("Result")

_worker_cleaner: Cleaner | None = None
_worker_source: Source | None = None
_worker_quoted = False


def _init(config: CleanConfig, leakage: LeakageFilter | None) -> None:
    global _worker_cleaner
    _worker_cleaner = Cleaner(config, leakage)


def _init_reader(config: CleanConfig, leakage: LeakageFilter | None, source: Source, quoted: bool) -> None:
    global _worker_source, _worker_quoted
    _init(config, leakage)
    _worker_source, _worker_quoted = source, quoted


def _local(chunk: Chunk) -> tuple[CleanChunk, np.ndarray, dict[str, dict[str, int]], DropSample]:
    cleaner = _worker_cleaner
    assert cleaner is not None, "worker not initialized"
    cleaner.stats = {name: StepStats(name) for name in cleaner.stats}
    cleaner.dropped = cleaner.new_drop_sample()  # this chunk's drops; the parent merges them like the stats
    cleaned, keys = cleaner.local(chunk)
    return cleaned, keys, {name: dict(s.counts) for name, s in cleaner.stats.items()}, cleaner.dropped


def clean_chunks(
    chunks: Iterable[Chunk], cleaner: Cleaner, workers: int, *, in_flight: int = 2
) -> Iterator[tuple[int, Chunk]]:
    """Yield (items read, cleaned chunk) in input order; ``cleaner`` does dedup and collects all stats.

    At most ``workers * in_flight`` chunks are on their way at once, so memory does not grow.
    """
    for n_read, cleaned, keys in local_chunks(chunks, cleaner, workers, in_flight=in_flight):
        yield n_read, cleaner.dedup(cleaned, keys)


def local_chunks(
    chunks: Iterable[Chunk], cleaner: Cleaner, workers: int, *, in_flight: int = 2
) -> Iterator[tuple[int, CleanChunk, np.ndarray]]:
    """Yield (items read, chunk after :meth:`Cleaner.local`, its dedup keys) in input order, without dedup
    (a task leaves that to the partitioned dedup across tasks); stats and drops merge into ``cleaner``."""
    if workers <= 1:
        for chunk in chunks:
            yield (chunk.n_read, *cleaner.local(chunk))
        return
    initargs = (cleaner.config, cleaner.leakage)
    for cleaned, keys, counts, dropped in pooled(_local, chunks, workers, in_flight, _init, initargs):
        _merge_counts(cleaner, counts, dropped)
        yield cleaned.n_read, cleaned, keys


@dataclass
class CleanedBlock:
    """What a reading worker sends back for one item range: items read, the kept lines of each side as one
    block, their dedup keys, where each distinct key first occurs and the line numbers, and the range's
    counters (read, clean steps) and drops."""

    n_read: int
    n_kept: int
    src: LineBlock
    tgt: LineBlock | None
    keys: np.ndarray
    numbers: np.ndarray | None
    counts: dict[str, dict[str, int]]
    dropped: DropSample
    read: dict[str, int]
    firsts: np.ndarray | None = None  # where each distinct key first occurs in the range (dedup's sort, done here)


def _read_and_clean(bounds: tuple[int, int]) -> CleanedBlock:
    source = _worker_source
    assert source is not None, "worker not initialized"
    start, stop = bounds
    read = StepStats("read")
    chunk = next(source.chunks(start, stop, chunk_lines=stop - start, stats=read))
    cleaned, keys, counts, dropped = _local(chunk)
    tgt = None if cleaned.tgt is None else LineBlock.from_lines(cleaned.tgt, _worker_quoted)
    dedups = _worker_cleaner is not None and _worker_cleaner.deduplicator is not None
    firsts = first_occurrences(keys) if dedups else None
    return CleanedBlock(chunk.n_read, len(cleaned), LineBlock.from_lines(cleaned.src, _worker_quoted), tgt, keys,
                        cleaned.numbers, counts, dropped, dict(read.counts), firsts)


def reads_in_workers(source: Source) -> bool:
    """Whether workers may read ``source`` by item ranges themselves: a short range costs its own size
    (plain files seek; a compressed one cannot, a table is read by whole row groups), and bad input stops
    the run (a policy that replaces or skips lines keeps its counters' order by reading in one process)."""
    options = source.options
    if options.on_invalid_utf8 != "error" or options.on_malformed != "error":
        return False
    return source.seeks_ranges


def clean_blocks(
    source: Source, cleaner: Cleaner, workers: int, chunk_lines: int, quoted: bool, *, in_flight: int = 2
) -> Iterator[tuple[int, bytes, bytes | None, int, np.ndarray | None]]:
    """Yield (items read, kept source bytes, kept target bytes or None, pairs kept, their 1-based item numbers)
    per ``chunk_lines`` items,
    in input order: workers read, clean and hash their ranges (see :func:`reads_in_workers`), this process
    drops duplicates and merges every counter (the read counts into ``source.stats``), as
    :func:`clean_chunks` over ``source.chunks(chunk_lines=chunk_lines)`` would."""
    total = source.scan()
    ranges = [(start, min(start + chunk_lines, total)) for start in range(0, total, chunk_lines)]
    cleaner.reserve(total)  # the dedup table sized once for the split's items (an upper bound; capped, see reserve)
    initargs = (cleaner.config, cleaner.leakage, source, quoted)
    for block in pooled(_read_and_clean, ranges, workers, in_flight, _init_reader, initargs):
        source.stats.merge(StepStats("read", block.read))
        _merge_counts(cleaner, block.counts, block.dropped)
        keep = cleaner.dedup_keep(block.keys, block.numbers, block.src, block.tgt, block.firsts)
        if keep is None:
            tgt_data = None if block.tgt is None else block.tgt.data
            yield block.n_read, block.src.data, tgt_data, block.n_kept, block.numbers
            continue
        tgt = None if block.tgt is None else block.tgt.kept(keep)
        numbers = None if block.numbers is None else block.numbers[keep]
        yield block.n_read, block.src.kept(keep), tgt, int(np.count_nonzero(keep)), numbers


def _merge_counts(cleaner: Cleaner, counts: dict[str, dict[str, int]], dropped: DropSample) -> None:
    for name, values in counts.items():
        cleaner.stats[name].merge(StepStats(name, values))
    cleaner.dropped.merge(dropped)


def pooled(
    function: Callable[[Item], Result], items: Iterable[Item], workers: int, in_flight: int,
    initializer: Callable[..., None], initargs: tuple[Any, ...],
) -> Iterator[Result]:
    """``function(item)`` of every item on ``workers`` processes, in input order, at most ``workers * in_flight``
    items on their way at once (memory stays flat)."""
    # fork where available: workers need no re-import of __main__ (which breaks for stdin/notebooks)
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker,
                             initargs=(os.getpid(), initializer, initargs)) as pool:
        pending: deque[Future] = deque()
        iterator = iter(items)
        exhausted = False
        while pending or not exhausted:
            while not exhausted and len(pending) < workers * in_flight:
                item = next(iterator, _END)
                if item is _END:
                    exhausted = True
                    break
                pending.append(pool.submit(function, item))
            if not pending:
                break
            yield pending.popleft().result()


_END: Any = object()


def _start_worker(parent: int, initializer: Callable[..., None], initargs: tuple[Any, ...]) -> None:
    """Make the worker die with its parent, then run ``initializer``: a parent killed mid-stage (SIGKILL, OOM)
    must not leave workers blocked on the pool's queue forever, holding its pipes and memory."""
    _die_with_parent(parent)
    initializer(*initargs)


def _die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent exits (``prctl(PR_SET_PDEATHSIG)``); elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


_PR_SET_PDEATHSIG = 1


