"""Run the chunk-local part of cleaning on worker processes, results back in input order (the
encode stage's threads are :func:`tokenmill._core.ordered.ordered_map`).

:meth:`tokenmill.text.Cleaner.local` depends on its chunk only, so it can run anywhere; the
pipeline feeds chunks to a process pool with a bounded number in flight (memory stays flat),
takes results in submission order, and does the order-dependent dedup itself. Each result
carries the counters of that chunk, so the merged statistics equal a single-process run's.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor

import numpy as np

from tokenmill.text import CleanConfig, Cleaner, LeakageFilter
from tokenmill.text.cleaner import CleanChunk
from tokenmill.text.drop_sample import DropSample
from tokenmill.text.readers import Chunk
from tokenmill.text.stats import StepStats

_worker_cleaner: Cleaner | None = None


def _init(config: CleanConfig, leakage: LeakageFilter | None) -> None:
    global _worker_cleaner
    _worker_cleaner = Cleaner(config, leakage)


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
    # fork where available: workers need no re-import of __main__ (which breaks for stdin/notebooks)
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_init,
                             initargs=(cleaner.config, cleaner.leakage)) as pool:
        pending: deque[tuple[int, Future]] = deque()
        iterator = iter(chunks)
        exhausted = False
        while pending or not exhausted:
            while not exhausted and len(pending) < workers * in_flight:
                chunk = next(iterator, None)
                if chunk is None:
                    exhausted = True
                    break
                pending.append((chunk.n_read, pool.submit(_local, chunk)))
            if not pending:
                break
            n_read, future = pending.popleft()
            cleaned, keys, counts, dropped = future.result()
            for name, values in counts.items():
                cleaner.stats[name].merge(StepStats(name, values))
            cleaner.dropped.merge(dropped)
            yield n_read, cleaned, keys


