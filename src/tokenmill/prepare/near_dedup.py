"""Near-duplicate clusters across the clean tasks without a corpus-sized table: LSH band keys on disk.

Each clean task writes the band keys of the items it kept (:func:`write_band_keys`: ``bands`` uint64 per
item, 0 for an item without words, which takes no part) and sorts them by hash partition
(:func:`~tokenmill.prepare.partitioned_dedup.partition_keys` with the prefix ``near.``). Partition ``p``
of every task holds every occurrence of its keys, so :func:`find_edges` settles the partitions one at a
time (memory: one partition, about :data:`~tokenmill.prepare.partitioned_dedup.PARTITION_ITEMS` keys):
sort ``(key, global position)``, and every item of a run of equal keys (a bucket) gets an edge to the
bucket's first item. :func:`~tokenmill.prepare.near_components.resolve_clusters` then finds the connected
components of those edges on disk, in hash partitions (min-label propagation, one partition's table and one
block of edges in memory, whatever the corpus size or the number of near-duplicates): each node ends
labelled with the smallest global position of its component, which is kept; the others are dropped.
Components do not depend on the order edges come in, so the result is the same for any number of tasks and
any engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np

from tokenmill.fsutil import atomic_path
from tokenmill.prepare.config import PrepareConfig
from tokenmill.prepare.heap import release_heap
from tokenmill.prepare.near_components import DROPS, EDGES, KEPT, resolve_clusters
from tokenmill.prepare.partitioned_dedup import BOUNDS, KEYS, POSITIONS, npy_slice, partition_count, partition_keys
from tokenmill.text.minhash import MinHashSettings, chunk_band_keys

NEAR = "near."
"""Prefix of a task's near-dedup files (``near.keys.raw``, then ``near.keys.npy`` ...)."""
BATCH_CHARS = 1 << 21
"""Characters of text hashed at once (memory: about 40 bytes per byte of text, so ~80 MiB)."""


def near_settings(config: PrepareConfig) -> MinHashSettings | None:
    """The MinHash settings of ``--near-dedup`` (None when it is off)."""
    cleaning = config.cleaning
    if not cleaning.near_dedup:
        return None
    return MinHashSettings(cleaning.near_dedup_ngram, cleaning.near_dedup_bands, cleaning.near_dedup_rows,
                           cleaning.near_dedup_seed)


def near_sides(config: PrepareConfig) -> str:
    """What an item is: ``both`` sides of a pair, or one side (monolingual data: always the document)."""
    return "src" if config.monolingual else config.cleaning.near_dedup_sides


def near_partition_count(items: int, settings: MinHashSettings) -> int:
    """Partitions for the band keys of ``items`` items (``bands`` keys each)."""
    return partition_count(items * settings.bands)


def write_band_keys(handle: BinaryIO, src: list[str], tgt: list[str] | None, sides: str,
                    settings: MinHashSettings) -> None:
    """Append the band keys of a chunk's kept items to ``handle`` (``near.keys.raw``), in item order, in
    batches of about :data:`BATCH_CHARS` characters (the hashing's arrays take ~40 bytes per byte of text)."""
    sizes = np.fromiter(map(len, src), dtype=np.int64, count=len(src))
    if tgt is not None:
        sizes += np.fromiter(map(len, tgt), dtype=np.int64, count=len(tgt))
    batch = np.cumsum(sizes) // BATCH_CHARS
    cuts = np.flatnonzero(np.diff(batch)) + 1
    for start, stop in zip(np.r_[0, cuts].tolist(), np.r_[cuts, len(src)].tolist(), strict=True):
        keys, has = chunk_band_keys(src[start:stop], None if tgt is None else tgt[start:stop], sides, settings)
        keys[~has] = 0
        handle.write(np.ascontiguousarray(keys, dtype=np.uint64).tobytes())


def partition_band_keys(folder: Path, partitions: int) -> None:
    """Sort a task's ``near.keys.raw`` by partition (see :func:`partition_keys`)."""
    partition_keys(folder, partitions, prefix=NEAR)


def _bucket_edges(keys: np.ndarray, items: np.ndarray) -> np.ndarray:
    """(n, 2) int64 edges (bucket's first item, item) of one partition, unique, sorted."""
    order = np.lexsort((items, keys))
    keys, items = keys[order], items[order]
    new_bucket = np.concatenate([[True], keys[1:] != keys[:-1]])
    head = items[new_bucket][np.cumsum(new_bucket) - 1]
    pairs = np.stack([head, items], axis=1)[items != head]
    if not len(pairs):
        return pairs
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    pairs = pairs[order]
    fresh = np.concatenate([[True], np.any(pairs[1:] != pairs[:-1], axis=1)])
    return pairs[fresh]


def find_edges(folders: Sequence[Path], bases: Sequence[int], partitions: int, bands: int, out: Path) -> int:
    """The edges of every bucket of every partition into ``out/near.edges.raw`` (int64 pairs of global
    positions: ``bases[t]`` + the item's place in task ``t``), partition after partition; their number."""
    out.mkdir(parents=True, exist_ok=True)
    bounds = [np.load(f / f"{NEAR}{BOUNDS}") for f in folders]
    found = 0
    with atomic_path(out / EDGES) as tmp, open(tmp, "wb") as edges:
        for p in range(partitions):
            keys = np.concatenate([npy_slice(f / f"{NEAR}{KEYS}", b[p], b[p + 1])
                                   for f, b in zip(folders, bounds, strict=True)] or [np.zeros(0, np.uint64)])
            items = np.concatenate(
                [npy_slice(f / f"{NEAR}{POSITIONS}", b[p], b[p + 1]) // bands + base
                 for f, b, base in zip(folders, bounds, bases, strict=True)] or [np.zeros(0, np.int64)])
            taking = keys != 0
            pairs = _bucket_edges(keys[taking], items[taking])
            edges.write(np.ascontiguousarray(pairs, dtype=np.int64).tobytes())
            found += len(pairs)
            del keys, items, taking, pairs
            release_heap()  # the partition's arrays: see partitioned_dedup.find_duplicates
    return found


def drops_in(out: Path, base: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(positions relative to ``base``, global position of the kept item of each) of the near-duplicates
    among items ``[base, base + count)``: only that slice of the drop list is read."""
    drops = np.load(out / DROPS, mmap_mode="r")
    lo, hi = np.searchsorted(drops, [base, base + count])
    return np.array(drops[lo:hi]) - base, npy_slice(out / KEPT, int(lo), int(hi))


__all__ = [
    "drops_in", "find_edges", "near_partition_count", "near_settings", "near_sides",
    "partition_band_keys", "resolve_clusters", "write_band_keys",
]
