"""Packing (source, target) pairs into rows of at most ``cap_src`` source and ``cap_tgt`` target tokens.

Two strategies, both exact about the caps (a row never exceeds either side) and both keeping every
pair they are given exactly once:

* :func:`next_fit` — Tensor2Tensor's stream packing (``pack_dataset``; ``pack_examples`` with a
  queue of one open row and no spacing): pairs are taken in the given order and a row is closed as
  soon as the next pair does not fit on one of its sides. Vectorized: for every pair ``i`` the end
  of a row starting at ``i`` comes from two ``searchsorted`` calls over cumulative lengths, and the
  rows actually used (the path 0 -> next(0) -> ...) are found by pointer doubling, ``log2(rows)``
  numpy passes. No loop over pairs or rows.
* :func:`first_fit_decreasing` — two-sided first-fit decreasing: pairs sorted by ``src + tgt``
  (largest first), each placed in the first row where both sides fit. FFD fills rows bin by bin
  (row 1 takes, in order, every pair that still fits; then row 2 ...), and pairs with the same
  (source, target) length are interchangeable, so a row is filled by walking *length cells*: a
  prefix-minimum table answers "first cell in FFD order that fits the room left" in O(1), and a
  row pattern that repeats (the common case) is emitted for all its repeats at once. The Python
  loop runs once per distinct row pattern and cell, never once per pair.
"""

from __future__ import annotations

import numpy as np

from tokenmill.batching.order import radix_argsort

_NONE = np.iinfo(np.int32).max  # "no cell fits" in the first-fit table (int32: half the memory traffic)


def _exclusive_cumsum(values: np.ndarray) -> np.ndarray:
    out = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=out[1:])
    return out


def next_fit(
    src: np.ndarray, tgt: np.ndarray, cap_src: int, cap_tgt: int, max_segments: int | None = None
) -> np.ndarray:
    """Row ends (int64, ascending, last == len(src)) of greedy stream packing in the given order.

    Every pair must fit a row alone (``src <= cap_src`` and ``tgt <= cap_tgt``); ``max_segments``
    caps the pairs per row (None: no cap).
    """
    n = len(src)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    nxt = np.full(n, n, dtype=np.int64)
    for side, cap in ((src, cap_src), (tgt, cap_tgt)):
        cum = _exclusive_cumsum(side)
        # the largest j with cum[j] - cum[i] <= cap: the row starting at i holds pairs i..j-1
        np.minimum(nxt, np.searchsorted(cum, cum[:-1] + cap, side="right") - 1, out=nxt)
    if max_segments is not None:
        np.minimum(nxt, np.arange(max_segments, n + max_segments, dtype=np.int64), out=nxt)
    if int((nxt <= np.arange(n)).sum()):
        raise ValueError("a pair is longer than the row on one side; filter over-long pairs first")
    jump = np.append(nxt, n)  # jump[n] = n: the end is absorbing
    starts = np.zeros(1, dtype=np.int64)
    # starts holds the rows at distance < 2^k from row 0; jump is next applied 2^k times
    while starts[-1] != n:
        starts = np.union1d(starts, jump[starts])
        jump = jump[jump]
    return starts[1:]


def _prefix_min(grid: np.ndarray) -> np.ndarray:
    out = np.minimum.accumulate(grid, axis=0)
    return np.minimum.accumulate(out, axis=1, out=out)


class _FirstFitTable:
    """``first[rs, rt]``: the first cell (FFD rank) with pairs left that fits ``rs`` x ``rt`` tokens of room."""

    def __init__(self, cell_src: np.ndarray, cell_tgt: np.ndarray, cap_src: int, cap_tgt: int) -> None:
        self.cell_src = cell_src
        self.cell_tgt = cell_tgt
        self.grid = np.full((cap_src + 1, cap_tgt + 1), _NONE, dtype=np.int32)
        self.grid[cell_src, cell_tgt] = np.arange(len(cell_src), dtype=np.int32)
        self.first = _prefix_min(self.grid)

    def exhaust(self, rank: int) -> None:
        """Cell ``rank`` has no pairs left: recompute the part of the table that answered it.

        ``first`` does not increase with more room, and cell (s, t) is the first to fit room (s, t)
        exactly, so the entries answering ``rank`` form a staircase from (s, t) whose bounding box
        is read off row s and column t. Only that box is recomputed.
        """
        s, t = int(self.cell_src[rank]), int(self.cell_tgt[rank])
        self.grid[s, t] = _NONE
        first = self.first
        s_end = s + int(np.argmin(first[s:, t] == rank)) if first[-1, t] != rank else first.shape[0]
        t_end = t + int(np.argmin(first[s, t:] == rank)) if first[s, -1] != rank else first.shape[1]
        region = _prefix_min(self.grid[s:s_end, t:t_end])
        if s > 0:
            np.minimum(region, first[s - 1, t:t_end][None, :], out=region)
        if t > 0:
            np.minimum(region, first[s:s_end, t - 1][:, None], out=region)
        first[s:s_end, t:t_end] = region


def _ffd_patterns(
    cell_src: np.ndarray, cell_tgt: np.ndarray, counts: np.ndarray, cap_src: int, cap_tgt: int, max_segments: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """FFD over length cells (in FFD order). Returns records (first row, repeats, cell, pairs per row)."""
    table = _FirstFitTable(cell_src, cell_tgt, cap_src, cap_tgt)
    first = table.first
    left = counts.astype(np.int64).tolist()
    sizes_src = cell_src.tolist()
    sizes_tgt = cell_tgt.tolist()
    remaining = int(counts.sum())
    rec_row: list[int] = []
    rec_repeat: list[int] = []
    rec_cell: list[int] = []
    rec_take: list[int] = []
    row = 0
    while remaining:
        room_src, room_tgt, room_seg = cap_src, cap_tgt, max_segments
        pattern: list[tuple[int, int]] = []
        while room_seg:
            rank = int(first[room_src, room_tgt])
            if rank == _NONE:
                break
            have, s, t = left[rank], sizes_src[rank], sizes_tgt[rank]
            take = min(have, room_seg, room_src // s if s else have, room_tgt // t if t else have)
            pattern.append((rank, take))
            room_src -= take * s
            room_tgt -= take * t
            room_seg -= take
            left[rank] = have - take
            if have == take:
                table.exhaust(rank)
        # the same row repeats while every cell it used still has that many pairs (no cell ran out,
        # and cells it skipped are unchanged, so the walk would take the same steps again)
        repeats = min((left[rank] + take) // take for rank, take in pattern)
        for rank, take in pattern:
            if repeats > 1:
                left[rank] -= take * (repeats - 1)
                if left[rank] == 0:
                    table.exhaust(rank)
            rec_row.append(row)
            rec_repeat.append(repeats)
            rec_cell.append(rank)
            rec_take.append(take)
            remaining -= take * repeats
        row += repeats
    as_array = lambda values: np.asarray(values, dtype=np.int64)  # noqa: E731
    return as_array(rec_row), as_array(rec_repeat), as_array(rec_cell), as_array(rec_take)


def first_fit_decreasing(
    ids: np.ndarray,
    src: np.ndarray,
    tgt: np.ndarray,
    cap_src: int,
    cap_tgt: int,
    max_segments: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided FFD of pairs ``ids`` (with lengths ``src``/``tgt``, aligned with ``ids``).

    FFD order: by ``src + tgt`` descending, then ``max(src, tgt)`` descending, then ``src``
    descending; pairs of equal lengths in their order in ``ids`` (pass a shuffled ``ids`` for a
    random choice among them). Returns (pair ids row by row, int64 row ends); inside a row pairs
    come largest first.
    """
    n = len(ids)
    if n == 0:
        return ids[:0], np.zeros(0, dtype=np.int64)
    src64 = np.asarray(src, dtype=np.int64)
    tgt64 = np.asarray(tgt, dtype=np.int64)
    if int(src64.max()) > cap_src or int(tgt64.max()) > cap_tgt or int((src64 + tgt64).min()) < 1:
        raise ValueError("every pair must fit a row alone and have at least one token")
    width = cap_tgt + 1
    cell = src64 * width + tgt64
    counts = np.bincount(cell, minlength=(cap_src + 1) * width)
    occupied = np.flatnonzero(counts)
    occ_src, occ_tgt = occupied // width, occupied % width
    ffd = np.lexsort((-occ_src, -np.maximum(occ_src, occ_tgt), -(occ_src + occ_tgt)))
    occupied, occ_src, occ_tgt = occupied[ffd], occ_src[ffd], occ_tgt[ffd]
    rank_of_cell = np.zeros(len(counts), dtype=np.int64)
    rank_of_cell[occupied] = np.arange(len(occupied), dtype=np.int64)
    cap_segments = max_segments if max_segments is not None else n
    rec_row, rec_repeat, rec_cell, rec_take = _ffd_patterns(
        occ_src, occ_tgt, counts[occupied], cap_src, cap_tgt, cap_segments
    )
    # every (row, cell, take) a record stands for, then rows handed out to a cell's pairs in row order
    # (stable sorts of small non-negative integers: numpy's radix sort, the same order as any stable sort)
    entry_rec = np.repeat(np.arange(len(rec_row)), rec_repeat)
    entry_row = rec_row[entry_rec] + (
        np.arange(len(entry_rec)) - np.repeat(_exclusive_cumsum(rec_repeat)[:-1], rec_repeat)
    )
    by_cell = radix_argsort(rec_cell[entry_rec])
    row_in_cell_order = np.repeat(entry_row[by_cell], rec_take[entry_rec][by_cell])
    in_cell_order = radix_argsort(rank_of_cell[cell])
    # row by row; inside a row by FFD rank (pairs of one row are consecutive in cell order already)
    by_row = in_cell_order[radix_argsort(row_in_cell_order)]
    ends = np.cumsum(np.bincount(row_in_cell_order)).astype(np.int64)
    return ids[by_row], ends
