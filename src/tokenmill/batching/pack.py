"""Greedy token-budget packing of an ordered sample sequence into consecutive batches.

The rule is fairseq's ``batch_by_size``: starting where the previous batch ended, a batch takes
the longest run of samples whose cost (rows x the longest row in it) fits ``max_tokens`` and whose
row count fits ``max_sentences``; when that run has ``multiple`` or more rows it is cut down to a
multiple of ``multiple``. (fairseq's Cython loop walks sample by sample and reaches the same cuts.)

Packing here walks *runs of equal cost* instead of samples: inside a run of samples that all cost
``c`` tokens every batch has the same size, so a whole stretch of batches is emitted with one numpy
call, and only a batch that straddles two runs is measured with a cumulative maximum over its
window. Sorted corpora have a few thousand runs, so the Python loop is over runs, never samples.
"""

from __future__ import annotations

import itertools

import numpy as np

from tokenmill.batching.optimal_cut import cut_groups
from tokenmill.errors import ConfigError


def round_rows(rows: int, multiple: int) -> int:
    """fairseq's rule: keep ``rows`` below ``multiple``, else cut down to a multiple of it."""
    return rows if rows < multiple else rows - rows % multiple


def _check_costs(costs: np.ndarray, max_tokens: int) -> None:
    """Every sample must fit a batch on its own and cost at least one token."""
    largest = int(costs.max())
    if largest > max_tokens:
        raise ConfigError(f"a sample costs {largest} tokens, more than max_tokens={max_tokens}; filter it first")
    if int(costs.min()) < 1:
        raise ConfigError("every sample must cost at least one token (an empty sample on both sides?)")


def pack_greedy(
    costs: np.ndarray,
    max_tokens: int | None,
    max_sentences: int | None = None,
    multiple: int = 1,
) -> np.ndarray:
    """Batch ends (int64, ascending, last == len(costs)) for samples in the given order.

    ``costs[i]`` is what one row of sample ``i`` costs (its longest side, padded); a batch of rows
    ``R`` costs ``len(R) * max(costs[R])``. Every cost must be <= ``max_tokens``.
    """
    n = len(costs)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    sentence_cap = max_sentences if max_sentences is not None else n
    if max_tokens is None:  # rows only: every sample costs one "token" against a budget of the row cap
        costs, max_tokens = np.ones(n, dtype=np.int8), sentence_cap
    costs = np.asarray(costs)
    _check_costs(costs, max_tokens)
    return _pack(costs, _run_ends(costs), max_tokens, sentence_cap, multiple)


def pack_lowpad(
    costs: np.ndarray,
    src: np.ndarray,
    tgt: np.ndarray | None,
    max_tokens: int | None,
    max_sentences: int | None = None,
    multiple: int = 1,
    penalty: float = 0.0,
) -> np.ndarray:
    """Batch ends under the same rules as :func:`pack_greedy`, cut where they cost the least
    ``pad slots + price x batches`` with ``price = round(penalty x max_tokens)`` (at least 1).

    Samples come in length-cell order (``src``/``tgt``: their lengths). The cut is the exact optimum
    over cuts whose boundaries fall every ``multiple`` rows (:mod:`tokenmill.batching.optimal_cut`):
    each batch holds a multiple of ``multiple`` rows except the last one, and except next to samples
    of which ``multiple`` rows do not fit ``max_tokens``: those are cut greedily, each such run on its
    own, and the stretch before one may end with a batch of fewer rows. With ``penalty`` 0 (or no token
    budget) this is exactly :func:`pack_greedy`, the fewest batches.
    """
    if max_tokens is None or penalty <= 0 or len(costs) == 0:
        return pack_greedy(costs, max_tokens, max_sentences, multiple)
    costs = np.asarray(costs)
    _check_costs(costs, max_tokens)
    n = len(costs)
    cap = max_sentences if max_sentences is not None else n
    grid = multiple if cap >= multiple else 1  # fewer rows than `multiple` in every batch: no rounding
    price = max(1, round(penalty * max_tokens))
    sides = (np.asarray(src), None if tgt is None else np.asarray(tgt))
    if int(costs.max()) <= max_tokens // grid:
        return _cut_stretch(costs, sides, max_tokens, cap, grid, price)
    oversize = costs > max_tokens // grid
    edges = [0, *(np.flatnonzero(oversize[1:] != oversize[:-1]) + 1).tolist(), n]
    pieces = []
    for lo, hi in itertools.pairwise(edges):
        if oversize[lo]:
            ends = pack_greedy(costs[lo:hi], max_tokens, max_sentences, multiple)
        else:
            ends = _cut_stretch(costs[lo:hi], tuple(None if x is None else x[lo:hi] for x in sides),
                                max_tokens, cap, grid, price)
        pieces.append(lo + ends)
    return np.concatenate(pieces)


def _cut_stretch(costs: np.ndarray, sides: tuple[np.ndarray | None, ...], max_tokens: int, cap: int, grid: int,
                 price: int) -> np.ndarray:
    """pack_lowpad's cut of samples of which ``grid`` rows fit: the optimum on groups of ``grid`` rows,
    then the leftover rows (fewer than ``grid``) as one last batch."""
    n = len(costs)
    groups = n // grid
    ends = np.zeros(0, dtype=np.int64)
    if groups:
        def most(x: np.ndarray | None) -> np.ndarray:
            return np.zeros(groups, np.int64) if x is None else group_max(x[: groups * grid], grid)

        ends = grid * cut_groups(most(sides[0]), most(sides[1]), most(costs), max_tokens, grid, cap // grid, price)
    return np.append(ends, n) if n % grid else ends


def group_max(x: np.ndarray, size: int) -> np.ndarray:
    """The largest of each ``size`` consecutive elements (``len(x)`` a multiple of ``size``); halving an
    even size with pairwise maxima of strided views is several times faster than a reshaped ``max``."""
    while size > 1 and size % 2 == 0:
        x = np.maximum(x[0::2], x[1::2])
        size //= 2
    return x if size == 1 else x.reshape(-1, size).max(axis=1)


def _run_ends(*keys: np.ndarray | None) -> np.ndarray:
    """Ends of the runs of consecutive samples equal in every one of ``keys``."""
    first = next(k for k in keys if k is not None)
    differs = np.zeros(len(first) - 1, dtype=bool)
    for key in keys:
        if key is not None:
            differs |= key[1:] != key[:-1]
    return np.append(np.flatnonzero(differs) + 1, len(first)).astype(np.int64)


def _pack(
    costs: np.ndarray,
    run_ends: np.ndarray,
    max_tokens: int,
    cap: int,
    multiple: int,
) -> np.ndarray:
    """The greedy walk over runs of samples of one cost (``run_ends``; a run may be finer).

    Inside a run every batch has the same size, so a whole stretch of batches is emitted with one
    numpy call; a batch that straddles runs is measured with a running maximum over its window.
    """
    n = len(costs)
    pieces: list[np.ndarray] = []
    singles: list[int] = []
    pos = 0
    run = 0
    while pos < n:
        if run_ends[run] <= pos:
            run = int(np.searchsorted(run_ends, pos, side="right"))
        fit = min(max_tokens // int(costs[pos]), cap)  # rows that fit while the run lasts
        size = round_rows(fit, multiple)
        available = int(run_ends[run]) - pos
        if available >= fit:
            count = (available - fit) // size + 1
            if singles:
                pieces.append(np.asarray(singles, dtype=np.int64))
                singles = []
            pieces.append(pos + size * np.arange(1, count + 1, dtype=np.int64))
            pos += count * size
            continue
        # the batch reaches past this run: measure its window with a running maximum
        window = min(n - pos, fit + 1)
        running = np.maximum.accumulate(costs[pos : pos + window].astype(np.int64))
        total = running * np.arange(1, window + 1, dtype=np.int64)
        rows = int(np.searchsorted(total, max_tokens, side="right"))
        rows = round_rows(min(rows, cap), multiple)
        pos += rows
        singles.append(pos)
    if singles:
        pieces.append(np.asarray(singles, dtype=np.int64))
    return np.concatenate(pieces)


def pack_reference(costs: np.ndarray, max_tokens: int | None, max_sentences: int | None, multiple: int) -> np.ndarray:
    """The same cuts, one sample at a time (readable definition; used by the tests, never by plans)."""
    ends: list[int] = []
    start = 0
    n = len(costs)
    while start < n:
        rows = 0
        longest = 0
        while start + rows < n:
            candidate = max(longest, int(costs[start + rows]))
            if max_sentences is not None and rows + 1 > max_sentences:
                break
            if max_tokens is not None and (rows + 1) * candidate > max_tokens:
                break
            longest = candidate
            rows += 1
        rows = round_rows(rows, multiple)
        start += rows
        ends.append(start)
    return np.asarray(ends, dtype=np.int64)
