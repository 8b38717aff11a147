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

import numpy as np

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

    change = np.flatnonzero(costs[1:] != costs[:-1]) + 1
    run_ends = np.append(change, n).astype(np.int64)
    run_costs = costs[np.append(0, change)].astype(np.int64)
    pieces: list[np.ndarray] = []
    singles: list[int] = []
    pos = 0
    run = 0
    while pos < n:
        if run_ends[run] <= pos:
            run = int(np.searchsorted(run_ends, pos, side="right"))
        cost = int(run_costs[run])
        fit = min(max_tokens // cost, sentence_cap)  # rows that fit while the run lasts
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
        rows = round_rows(min(rows, sentence_cap), multiple)
        pos += rows
        singles.append(pos)
    if singles:
        pieces.append(np.asarray(singles, dtype=np.int64))
    return np.concatenate(pieces)


def pack_lowpad(
    costs: np.ndarray,
    src: np.ndarray,
    tgt: np.ndarray | None,
    max_tokens: int | None,
    max_sentences: int | None = None,
    multiple: int = 1,
    penalty: float = 0.0,
) -> np.ndarray:
    """Batch ends like :func:`pack_greedy`, but a batch may end early where that saves padding.

    Samples come in length-cell order (``src``/``tgt``: their lengths; equal lengths are neighbours).
    A batch that lies inside one cell has no padding and is cut as the greedy rule cuts it. A batch
    that reaches past its cell ends at the candidate (every ``multiple`` rows up to the greedy end)
    with the least ``(pad slots + penalty * max_tokens) / rows``, the longest of equals: a short batch
    that stops at a length step costs one more step (the penalty), not padding on every row. With
    ``penalty`` 0 (or no token budget) this is exactly :func:`pack_greedy`, the fewest batches.
    The loop runs over cells and the batches that straddle them, never over samples.
    """
    if max_tokens is None or penalty <= 0 or len(costs) == 0:
        return pack_greedy(costs, max_tokens, max_sentences, multiple)
    n = len(costs)
    costs = np.asarray(costs)
    _check_costs(costs, max_tokens)
    cap = max_sentences if max_sentences is not None else n
    charge = penalty * max_tokens
    src = np.asarray(src)
    tgt = None if tgt is None else np.asarray(tgt)
    differs = src[1:] != src[:-1]
    if tgt is not None:
        differs |= tgt[1:] != tgt[:-1]
    step = np.flatnonzero(differs) + 1
    del differs
    cell_ends = np.append(step, n).astype(np.int64)
    pieces: list[np.ndarray] = []
    singles: list[int] = []
    pos = 0
    cell = 0
    while pos < n:
        if cell_ends[cell] <= pos:
            cell = int(np.searchsorted(cell_ends, pos, side="right"))
        fit = min(max_tokens // int(costs[pos]), cap)
        size = round_rows(fit, multiple)
        available = int(cell_ends[cell]) - pos
        if available >= fit:  # whole batches of one cell: no padding to save
            count = (available - fit) // size + 1
            if singles:
                pieces.append(np.asarray(singles, dtype=np.int64))
                singles = []
            pieces.append(pos + size * np.arange(1, count + 1, dtype=np.int64))
            pos += count * size
            continue
        window = min(n - pos, fit + 1)
        running = np.maximum.accumulate(costs[pos : pos + window].astype(np.int64))
        rows = int(np.searchsorted(running * np.arange(1, window + 1, dtype=np.int64), max_tokens, side="right"))
        rows = round_rows(min(rows, cap), multiple)
        if rows > multiple:
            candidates = np.arange(multiple, rows + 1, multiple, dtype=np.int64)
            window_src = src[pos : pos + rows].astype(np.int64)
            longest = np.maximum.accumulate(window_src)
            real = np.cumsum(window_src)
            if tgt is not None:
                window_tgt = tgt[pos : pos + rows].astype(np.int64)
                longest += np.maximum.accumulate(window_tgt)
                real += np.cumsum(window_tgt)
            score = (candidates * longest[candidates - 1] - real[candidates - 1] + charge) / candidates
            rows = int(candidates[np.flatnonzero(score <= score.min())[-1]])
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
