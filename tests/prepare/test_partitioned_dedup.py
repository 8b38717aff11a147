"""Dedup across tasks by hash partitions on disk: the same drops as the one-process deduplicator, with
memory bounded by a partition whatever the number of keys."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tokenmill.prepare import partitioned_dedup
from tokenmill.prepare.partitioned_dedup import (
    KEYS_RAW,
    duplicates_in,
    find_duplicates,
    join_duplicates,
    partition_keys,
)
from tokenmill.text.dedup import Deduplicator


def settle(tmp_path, keys: np.ndarray, cuts: list[int], partitions: int, ranges: list[int] | None = None) -> np.ndarray:
    """Keep mask over ``keys`` cut into tasks at ``cuts``, through the partitioned files (the partitions
    settled in one call, or by one call per range between the partition numbers ``ranges``, joined)."""
    folders = []
    for t in range(len(cuts) - 1):
        folder = tmp_path / f"task{t}"
        folder.mkdir()
        keys[cuts[t]:cuts[t + 1]].tofile(folder / KEYS_RAW)
        partition_keys(folder, partitions)
        folders.append(folder)
    if ranges is None:
        find_duplicates(folders, cuts[:-1], partitions, tmp_path / "dups")
    else:
        outs = [tmp_path / f"range{k}" for k in range(len(ranges) - 1)]
        for out, lo, hi in zip(outs, ranges[:-1], ranges[1:], strict=True):
            find_duplicates(folders, cuts[:-1], partitions, out, range(lo, hi))
        join_duplicates(outs, tmp_path / "dups")
    keep = np.ones(len(keys), dtype=bool)
    for t in range(len(cuts) - 1):
        keep[cuts[t] + duplicates_in(tmp_path / "dups", partitions, cuts[t], cuts[t + 1] - cuts[t])] = False
    return keep


@pytest.mark.parametrize("cuts", [[0, 20000], [0, 5000, 5000, 12000, 20000], [0, 1, 19999, 20000]])
def test_same_drops_as_one_process(tmp_path, monkeypatch, cuts):
    monkeypatch.setattr(partitioned_dedup, "_BLOCK", 999)  # many blocks per task
    keys = np.random.default_rng(0).integers(0, 3000, size=20000).astype(np.uint64)
    keys[::97] = 0  # the key 0 (the hash table's empty mark) is a key like any other
    assert (settle(tmp_path, keys, cuts, partitions=7) == Deduplicator().keep_first(keys)).all()


@pytest.mark.parametrize("ranges", [[0, 7], [0, 3, 4, 7], [0, 1, 2, 3, 4, 5, 6, 7]])
def test_partition_ranges_settled_apart_give_the_same_drops(tmp_path, ranges):
    keys = np.random.default_rng(1).integers(0, 2000, size=9000).astype(np.uint64)
    keep = settle(tmp_path, keys, [0, 4000, 9000], partitions=7, ranges=ranges)
    assert (keep == Deduplicator().keep_first(keys)).all() and not keep.all()


PEAK = r"""
import sys, tracemalloc
from pathlib import Path
import numpy as np
from tokenmill.prepare import partitioned_dedup
from tokenmill.prepare.partitioned_dedup import KEYS_RAW, duplicates_in, find_duplicates, partition_keys
root, n, tasks, items, block = Path(sys.argv[1]), *map(int, sys.argv[2:])
partitioned_dedup.PARTITION_ITEMS, partitioned_dedup._BLOCK = items, block
keys = np.random.default_rng(n).integers(0, n // 2, size=n).astype(np.uint64)
cuts = [n * t // tasks for t in range(tasks + 1)]
folders = [root / f"n{n}-task{t}" for t in range(tasks)]
for t, folder in enumerate(folders):  # the parts are written before measuring: the keys array does not count
    folder.mkdir()
    keys[cuts[t]:cuts[t + 1]].tofile(folder / KEYS_RAW)
del keys
partitions = partitioned_dedup.partition_count(n)
tracemalloc.start()
for folder in folders:
    partition_keys(folder, partitions)
find_duplicates(folders, cuts[:-1], partitions, root / f"n{n}-dups")
for t in range(tasks):
    duplicates_in(root / f"n{n}-dups", partitions, cuts[t], cuts[t + 1] - cuts[t])
print(tracemalloc.get_traced_memory()[1])
"""


def peak_bytes(tmp_path, n: int, tasks: int, items: int, block: int) -> int:
    """Traced peak of partitioning, settling and reading the duplicates of ``n`` keys in ``tasks`` parts,
    in a fresh interpreter (tracemalloc counts every thread's allocations: none of other tests' threads)."""
    done = subprocess.run([sys.executable, "-c", PEAK, str(tmp_path), str(n), str(tasks), str(items), str(block)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().splitlines()[-1])


def test_memory_is_bounded_by_a_partition_not_the_corpus(tmp_path):
    small = peak_bytes(tmp_path, 1 << 17, tasks=4, items=1 << 15, block=1 << 15)   # 4 partitions
    large = peak_bytes(tmp_path, 1 << 19, tasks=16, items=1 << 15, block=1 << 15)  # 16 partitions, 4x the keys
    assert large < 1.3 * small, (small, large)
    assert small < 64 * (1 << 15)  # a few arrays of one partition: 16 bytes per key, sort temporaries


def test_each_task_s_duplicates_are_read_with_a_fixed_number_of_opens(tmp_path, monkeypatch):
    """One file holds the duplicates of every partition: a task's part of the merge opens it (and its
    bounds) once, not once per partition (P x N opens over a run)."""
    keys = np.random.default_rng(2).integers(0, 500, size=5000).astype(np.uint64)
    opened = []
    for name in ("load", "memmap"):
        real = getattr(np, name)
        monkeypatch.setattr(partitioned_dedup.np, name,
                            lambda *args, real=real, name=name, **kw: opened.append(name) or real(*args, **kw))
    settle(tmp_path, keys, [0, 2000, 5000], partitions=13)
    opened.clear()
    found = duplicates_in(tmp_path / "dups", 13, 2000, 3000)
    assert sorted(opened) == ["load", "memmap"]
    assert sorted(path.name for path in (tmp_path / "dups").iterdir()) == ["dups.bounds.npy", "dups.raw"]
    assert np.array_equal(found, np.flatnonzero(~Deduplicator().keep_first(keys)[2000:]))
