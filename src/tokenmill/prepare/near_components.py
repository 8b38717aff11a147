"""The clusters of near-dedup's edges on disk, in hash partitions: memory of one partition's table and one
block of records, whatever the number of edges or items.

:func:`~tokenmill.prepare.near_dedup.find_edges` writes ``near.edges.raw``: int64 pairs of global positions,
an edge from each item of an LSH bucket to the bucket's first item (an item meeting another in several bands
gives the same edge once per partition it met it in). :func:`resolve_clusters` labels each node with the
smallest node of its connected component by min-label propagation:

- the edges become arcs both ways, sorted into hash partitions by their source node (a counting sort in
  blocks with positioned writes, :func:`scatter`); each partition's distinct sources are its table of
  nodes, each labelled with itself;
- a round reads each partition's arcs in blocks beside its table: every source whose label fell in the last
  round (all of them in the first) offers its label to the target when it is smaller than the target; the
  offers are sorted into the targets' partitions and each partition's labels take the smallest offer;
- it stops when a round lowers no label: one round more than the longest shortest path inside a cluster
  (a bucket's edges form a star, so a few rounds).

Every node then holds its component's smallest node whatever order the edges came in, so the clusters are the
same for any task count and engine. The nodes not labelled with themselves are dropped: they are written
sorted by position (``near.drops.npy``), with the kept item of each (``near.kept.npy``), range of positions
by range. A partition's table holds about :data:`NODES_PER_PARTITION` nodes (hash partitions spread distinct
nodes evenly) and records are read :data:`BLOCK` at a time, so one item with millions of near-duplicates
costs time, not memory.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from tokenmill.fsutil import atomic_path
from tokenmill.prepare.heap import release_heap
from tokenmill.prepare.partitioned_dedup import npy_for_writes

EDGES = "near.edges.raw"
DROPS = "near.drops.npy"
KEPT = "near.kept.npy"
SCRATCH = "near.components"
"""The folder of the resolution's scratch files (removed when it is done)."""
NODES_PER_PARTITION = 1 << 20
"""Nodes (at most) per hash partition of the table: 17 bytes each (node, label, fresh flag)."""
BLOCK = 1 << 19
"""Records (int64 pairs) read at once: 8 MiB, and a few times that in temporaries."""
_MIX = np.uint64(0x9E3779B97F4A7C15)
Partitioner = Callable[[np.ndarray], np.ndarray]
"""The partition (int64) of each record of a block (an (n, 2) int64 array)."""


def records(path: Path, start: int, stop: int, block: int) -> Iterator[np.ndarray]:
    """Records ``[start, stop)`` of a file of int64 pairs, ``block`` at a time, read (not mapped: a map's
    touched pages would stay resident)."""
    with open(path, "rb") as handle:
        for first in range(int(start), int(stop), block):
            count = min(block, int(stop) - first)
            data = os.pread(handle.fileno(), count * 16, first * 16)
            yield np.frombuffer(data, dtype=np.int64).reshape(-1, 2)


def scatter(raw: Path, parts: int, part_of: Partitioner, out: Path, block: int) -> np.ndarray:
    """The pairs of ``raw`` sorted by partition into ``out`` (stable within a partition), in two passes of
    blocks (count, then each block's runs written in place); returns the ``parts + 1`` record offsets of the
    partitions. ``raw`` is removed."""
    n = raw.stat().st_size // 16
    counts = np.zeros(parts, dtype=np.int64)
    for rows in records(raw, 0, n, block):
        counts += np.bincount(part_of(rows), minlength=parts)
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    cursor = bounds[:-1].copy()
    with open(out, "wb") as handle:
        handle.truncate(n * 16)
        for rows in records(raw, 0, n, block):
            part = part_of(rows)
            per_part = np.bincount(part, minlength=parts)
            ordered = rows[np.argsort(part, kind="stable")]
            first = 0
            for q in np.flatnonzero(per_part).tolist():  # each partition's run: one contiguous write
                stop = first + int(per_part[q])
                os.pwrite(handle.fileno(), ordered[first:stop].tobytes(), int(cursor[q]) * 16)
                first = stop
            cursor += per_part
    raw.unlink()
    return bounds


def by_first(parts: int) -> Partitioner:
    """Hash partitions by a record's first value (a multiplicative hash: positions close together spread)."""
    divisor, shift = np.uint64(parts), np.uint64(32)
    return lambda rows: (((rows[:, 0].astype(np.uint64) * _MIX) >> shift) % divisor).astype(np.int64)


class Table:
    """The nodes of each hash partition (sorted), their labels and whether a label fell in the last round:
    three files of one layout (``bounds``: each partition's offsets), read and written a partition at a time."""

    def __init__(self, folder: Path, bounds: np.ndarray) -> None:
        self.folder, self.bounds = folder, bounds

    def read(self, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Partition ``p``'s nodes, labels and fresh flags."""
        lo, hi = int(self.bounds[p]), int(self.bounds[p + 1])
        return (self._pread("nodes", np.int64, lo, hi), self._pread("labels", np.int64, lo, hi),
                self._pread("fresh", np.bool_, lo, hi))

    def write(self, p: int, labels: np.ndarray, fresh: np.ndarray) -> None:
        """Partition ``p``'s new labels and fresh flags, in place."""
        for name, values in (("labels", labels.astype(np.int64)), ("fresh", fresh.astype(np.bool_))):
            with open(self.folder / name, "r+b") as handle:
                os.pwrite(handle.fileno(), values.tobytes(), int(self.bounds[p]) * values.itemsize)

    def _pread(self, name: str, dtype: type, lo: int, hi: int) -> np.ndarray:
        size = np.dtype(dtype).itemsize
        with open(self.folder / name, "rb") as handle:
            return np.frombuffer(os.pread(handle.fileno(), (hi - lo) * size, lo * size), dtype=dtype).copy()


def _arcs(edges: Path, work: Path, parts: int, block: int) -> np.ndarray:
    """Each edge as arcs both ways, in hash partitions by source (``work/arcs``); their bounds."""
    raw = work / "arcs.raw"
    with open(raw, "wb") as handle:
        for pairs in records(edges, 0, edges.stat().st_size // 16, block):
            handle.write(np.concatenate([pairs, pairs[:, ::-1]]).tobytes())
    return scatter(raw, parts, by_first(parts), work / "arcs", block)


def _table(work: Path, arc_bounds: np.ndarray, block: int) -> Table:
    """Each partition's distinct sources, labelled with themselves, all fresh."""
    bounds = [0]
    with open(work / "nodes", "wb") as nodes_out:
        for p in range(len(arc_bounds) - 1):
            nodes = np.zeros(0, dtype=np.int64)
            for arcs in records(work / "arcs", arc_bounds[p], arc_bounds[p + 1], block):
                nodes = np.union1d(nodes, arcs[:, 0])
            nodes_out.write(nodes.tobytes())
            bounds.append(bounds[-1] + len(nodes))
    shutil.copyfile(work / "nodes", work / "labels")
    with open(work / "fresh", "wb") as handle:
        handle.write(np.ones(bounds[-1], dtype=np.bool_).tobytes())
    return Table(work, np.array(bounds, dtype=np.int64))


def _offer(work: Path, table: Table, arc_bounds: np.ndarray, block: int) -> int:
    """Write ``work/offers.raw``: (target, label) for each arc whose source's label is fresh and below the
    target; returns how many."""
    offered = 0
    with open(work / "offers.raw", "wb") as out:
        for p in range(len(arc_bounds) - 1):
            nodes, labels, fresh = table.read(p)
            if not fresh.any():
                continue
            for arcs in records(work / "arcs", arc_bounds[p], arc_bounds[p + 1], block):
                at = np.searchsorted(nodes, arcs[:, 0])
                label = labels[at]
                send = fresh[at] & (label < arcs[:, 1])
                out.write(np.stack([arcs[send, 1], label[send]], axis=1).tobytes())
                offered += int(send.sum())
    return offered


def _take_offers(work: Path, table: Table, parts: int, block: int) -> int:
    """Each node's label becomes the smallest of it and its offers; returns how many labels fell."""
    bounds = scatter(work / "offers.raw", parts, by_first(parts), work / "offers", block)
    fell = 0
    for p in range(parts):
        nodes, labels, _ = table.read(p)
        lowest = labels.copy()
        for offers in records(work / "offers", bounds[p], bounds[p + 1], block):
            np.minimum.at(lowest, np.searchsorted(nodes, offers[:, 0]), offers[:, 1])
        fresh = lowest < labels
        table.write(p, lowest, fresh)
        fell += int(fresh.sum())
    (work / "offers").unlink()
    return fell


def _write_drops(work: Path, table: Table, out: Path, span: int, block: int) -> int:
    """Every node not labelled with itself, sorted, into ``near.drops.npy`` with its label (the kept item)
    in ``near.kept.npy``: in ranges of ``span`` positions, each sorted in memory (so at most ``span`` drops
    at once); returns the number of drops."""
    top = 0
    with open(work / "dropped.raw", "wb") as handle:
        for p in range(len(table.bounds) - 1):
            nodes, labels, _ = table.read(p)
            dropped = labels < nodes
            handle.write(np.stack([nodes[dropped], labels[dropped]], axis=1).tobytes())
            top = max(top, int(nodes[-1]) if len(nodes) else 0)
    ranges = top // span + 1
    bounds = scatter(work / "dropped.raw", ranges, lambda rows: rows[:, 0] // span,
                     work / "dropped", block)
    total = int(bounds[-1])
    with atomic_path(out / DROPS) as drops_tmp, atomic_path(out / KEPT) as kept_tmp:
        drops_at = npy_for_writes(drops_tmp, np.dtype(np.int64), total)
        kept_at = npy_for_writes(kept_tmp, np.dtype(np.int64), total)
        with open(drops_tmp, "r+b") as drops_out, open(kept_tmp, "r+b") as kept_out:
            for q in range(ranges):
                rows = np.concatenate([*records(work / "dropped", bounds[q], bounds[q + 1], block),
                                       np.zeros((0, 2), dtype=np.int64)])
                rows = rows[np.argsort(rows[:, 0], kind="stable")]
                os.pwrite(drops_out.fileno(), np.ascontiguousarray(rows[:, 0]).tobytes(), drops_at + int(bounds[q]) * 8)
                os.pwrite(kept_out.fileno(), np.ascontiguousarray(rows[:, 1]).tobytes(), kept_at + int(bounds[q]) * 8)
    return total


def resolve_clusters(out: Path, block: int = BLOCK, nodes_per_partition: int = NODES_PER_PARTITION) -> int:
    """Connected components of ``out/near.edges.raw``: writes ``near.drops.npy`` (sorted global positions of
    the items dropped: every node but its component's smallest) and ``near.kept.npy`` (the kept item of
    each, aligned); returns the number of drops. ``block`` and ``nodes_per_partition`` bound the memory
    (smaller values: more passes, the same result)."""
    edges = out / EDGES
    work = out / SCRATCH
    shutil.rmtree(work, ignore_errors=True)  # a resolution cut short starts again
    work.mkdir(parents=True)
    parts = max(1, -(-2 * (edges.stat().st_size // 16) // nodes_per_partition))  # nodes <= 2 x edges
    arc_bounds = _arcs(edges, work, parts, block)
    table = _table(work, arc_bounds, block)
    while _offer(work, table, arc_bounds, block) and _take_offers(work, table, parts, block):
        release_heap()
    dropped = _write_drops(work, table, out, nodes_per_partition, block)
    shutil.rmtree(work)
    edges.unlink()
    release_heap()
    return dropped


__all__ = ["BLOCK", "DROPS", "EDGES", "KEPT", "NODES_PER_PARTITION", "resolve_clusters", "scatter"]
