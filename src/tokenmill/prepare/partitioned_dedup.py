"""Exact dedup across tasks without a corpus-sized table: hashes partitioned on disk.

Each task hashes the items it kept (the same uint64 keys as :class:`tokenmill.text.dedup.Deduplicator`)
and appends them to a raw file. :func:`partition_keys` then sorts them by ``key % partitions`` into one
file per task (keys, task-local positions and the partition bounds), block by block. Partition ``p``
of every task together holds every occurrence of its keys, so :func:`find_duplicates` can settle the
partitions one at a time: sort ``(key, global position)`` and every entry equal to the one before it
is a later occurrence, exactly what the one-process deduplicator drops (first occurrence wins); the
partitions' sorted duplicate positions go one after another into one file, which each task's part of
the merge reads with one open (:func:`duplicates_in`). A partition holds about :data:`PARTITION_ITEMS`
entries whatever the corpus size, so memory is flat.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from tokenmill.fsutil import atomic_path
from tokenmill.prepare.heap import release_heap

PARTITION_ITEMS = 1 << 20
"""Items per hash partition (16 bytes each: key and position); bounds the memory of one partition."""
_BLOCK = 1 << 20  # keys per pass when partitioning a task's keys
KEYS_RAW = "keys.raw"
KEYS = "keys.npy"
POSITIONS = "positions.npy"
BOUNDS = "bounds.npy"
DUPS = "dups.raw"
DUPS_BOUNDS = "dups.bounds.npy"


def partition_count(items: int) -> int:
    """How many partitions to cut ``items`` keys into (at least one)."""
    return max(1, -(-int(items) // PARTITION_ITEMS))


def _save(path: Path, array: np.ndarray) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.save(handle, array, allow_pickle=False)


def partition_keys(folder: Path, partitions: int, prefix: str = "") -> None:
    """Sort a task's ``keys.raw`` (uint64 in kept order) by partition into ``keys.npy`` and
    ``positions.npy`` (int64 positions in the task), with ``bounds.npy`` (partitions + 1 offsets); every
    name starts with ``prefix`` (near-dedup's band keys: ``near.``).

    A counting sort in blocks: one pass counts each partition, a second scatters every block to its
    place (stable: positions rise within a partition). Memory: one block, whatever the task size: blocks are
    read and each partition's run written with plain reads and positioned writes, not through maps (a map's
    touched pages stay resident in the process: near-dedup's 14 keys an item made that task-sized)."""
    raw = folder / f"{prefix}{KEYS_RAW}"
    n = os.path.getsize(raw) // 8
    divisor = np.uint64(partitions)
    counts = np.zeros(partitions, dtype=np.int64)
    for block in _raw_blocks(raw, n):
        counts += np.bincount((block % divisor).astype(np.int64), minlength=partitions)
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    if n == 0:
        _save(folder / f"{prefix}{KEYS}", np.zeros(0, np.uint64))
        _save(folder / f"{prefix}{POSITIONS}", np.zeros(0, np.int64))
        _save(folder / f"{prefix}{BOUNDS}", bounds)
        raw.unlink()
        return
    keys_path, positions_path = folder / f"{prefix}{KEYS}", folder / f"{prefix}{POSITIONS}"
    with atomic_path(keys_path) as keys_tmp, atomic_path(positions_path) as positions_tmp:
        keys_at = npy_for_writes(keys_tmp, np.dtype(np.uint64), n)
        positions_at = npy_for_writes(positions_tmp, np.dtype(np.int64), n)
        with open(keys_tmp, "r+b") as keys_out, open(positions_tmp, "r+b") as positions_out:
            cursor = bounds[:-1].copy()
            for start, block in zip(range(0, n, _BLOCK), _raw_blocks(raw, n), strict=True):
                part = (block % divisor).astype(np.int64)
                order = np.argsort(part, kind="stable")
                per_part = np.bincount(part, minlength=partitions)
                sorted_keys, sorted_positions = block[order], order.astype(np.int64) + start
                first = 0
                for q in np.flatnonzero(per_part).tolist():  # each partition's run: one contiguous write
                    stop = first + int(per_part[q])
                    os.pwrite(keys_out.fileno(), sorted_keys[first:stop].tobytes(), keys_at + int(cursor[q]) * 8)
                    os.pwrite(positions_out.fileno(), sorted_positions[first:stop].tobytes(),
                              positions_at + int(cursor[q]) * 8)
                    first = stop
                cursor += per_part
    _save(folder / f"{prefix}{BOUNDS}", bounds)
    raw.unlink()


def _raw_blocks(raw: Path, n: int) -> Iterator[np.ndarray]:
    """The uint64 keys of ``raw`` in blocks of :data:`_BLOCK`, read (not mapped)."""
    with open(raw, "rb") as handle:
        for start in range(0, n, _BLOCK):
            yield np.fromfile(handle, dtype=np.uint64, count=min(_BLOCK, n - start))


def npy_for_writes(path: Path, dtype: np.dtype, n: int) -> int:
    """Make ``path`` a ``.npy`` file of ``n`` items of ``dtype`` (its data not written yet); returns the
    offset of its data."""
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                      "fortran_order": False, "shape": (n,)})
        offset = handle.tell()
        handle.truncate(offset + n * dtype.itemsize)
    return offset


def find_duplicates(
    folders: Sequence[Path], bases: Sequence[int], partitions: int, out: Path, which: range | None = None
) -> int:
    """For each partition (of ``which``: all by default), the global positions (``bases[t]`` + task position)
    of every later occurrence of a key, sorted, one partition after another into ``out/dups.raw`` (int64),
    with ``out/dups.bounds.npy`` (one offset more than partitions); returns the number of duplicates. A
    task of its own may settle a range of partitions: :func:`join_duplicates` puts the ranges together."""
    out.mkdir(parents=True, exist_ok=True)
    which = range(partitions) if which is None else which
    bounds = [np.load(f / BOUNDS) for f in folders]
    where = np.zeros(len(which) + 1, dtype=np.int64)
    with atomic_path(out / DUPS) as tmp, open(tmp, "wb") as dups:
        for k, p in enumerate(which):
            # one partition's slice of each task, copied out of a map opened for it alone: the pages of the
            # other partitions are never touched, so resident memory stays one partition's
            keys = np.concatenate([npy_slice(f / KEYS, b[p], b[p + 1]) for f, b in zip(folders, bounds, strict=True)]
                                  or [np.zeros(0, np.uint64)])
            positions = np.concatenate(
                [npy_slice(f / POSITIONS, b[p], b[p + 1]) + base
                 for f, b, base in zip(folders, bounds, bases, strict=True)] or [np.zeros(0, np.int64)]
            )
            order = np.lexsort((positions, keys))
            sorted_keys = keys[order]
            later = np.concatenate([[False], sorted_keys[1:] == sorted_keys[:-1]]) if len(order) else np.zeros(0, bool)
            duplicates = np.sort(positions[order][later])
            dups.write(duplicates.astype(np.int64).tobytes())
            where[k + 1] = where[k] + len(duplicates)
            del keys, positions, order, sorted_keys, later, duplicates
            release_heap()  # the partition's arrays: glibc would keep up to 2x the largest in its heap
    _save(out / DUPS_BOUNDS, where)
    return int(where[-1])


def join_duplicates(parts: Sequence[Path], out: Path) -> int:
    """The outputs of :func:`find_duplicates` over consecutive partition ranges (``parts``, in order) as one
    ``out/dups.raw`` and bounds, what one call over every partition writes; returns the duplicates."""
    out.mkdir(parents=True, exist_ok=True)
    where = [np.zeros(1, dtype=np.int64)]
    with atomic_path(out / DUPS) as tmp, open(tmp, "wb") as dups:
        for part in parts:
            with open(part / DUPS, "rb") as source:
                shutil.copyfileobj(source, dups, 1 << 22)
            where.append(np.load(part / DUPS_BOUNDS)[1:] + where[-1][-1])
    joined = np.concatenate(where)
    _save(out / DUPS_BOUNDS, joined)
    return int(joined[-1])


def npy_slice(path: Path, start: int, stop: int) -> np.ndarray:
    """``array[start:stop]`` of a ``.npy`` file, copied; the map is closed when this returns."""
    return np.array(np.load(path, mmap_mode="r")[start:stop])


def duplicates_in(out: Path, partitions: int, base: int, count: int) -> np.ndarray:
    """Sorted positions (relative to ``base``) of the duplicates among items ``[base, base + count)``: one
    file opened per call (not one per partition), and from each partition's sorted run only the few pages
    a binary search touches and the task's own entries are read."""
    bounds = np.load(out / DUPS_BOUNDS)
    if len(bounds) != partitions + 1:
        raise ValueError(f"{out / DUPS_BOUNDS}: {len(bounds) - 1} partitions, {partitions} expected")
    if not bounds[-1]:
        return np.zeros(0, np.int64)
    table = np.memmap(out / DUPS, dtype=np.int64, mode="r")
    try:
        found = []
        for p in range(partitions):
            run = table[bounds[p] : bounds[p + 1]]
            lo, hi = np.searchsorted(run, [base, base + count])
            found.append(np.array(run[lo:hi]) - base)
        return np.sort(np.concatenate(found))
    finally:
        del table  # unmapped: nothing of the table stays resident


__all__ = [
    "BOUNDS", "KEYS", "KEYS_RAW", "PARTITION_ITEMS", "POSITIONS", "duplicates_in", "find_duplicates",
    "join_duplicates", "npy_for_writes", "npy_slice", "partition_count", "partition_keys",
]
