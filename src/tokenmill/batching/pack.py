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

from collections.abc import Callable

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
    """Batch ends like :func:`pack_greedy`, but a batch may end early where that saves padding.

    Samples come in length-cell order (``src``/``tgt``: their lengths; equal lengths are neighbours).
    A batch that lies inside one cell has no padding and is cut as the greedy rule cuts it. A batch
    that reaches past its cell ends at the candidate (every ``multiple`` rows up to the greedy end)
    with the least ``(pad slots + penalty * max_tokens) / rows``, the longest of equals: a short batch
    that stops at a length step costs one more step (the penalty), not padding on every row. With
    ``penalty`` 0 (or no token budget) this is exactly :func:`pack_greedy`, the fewest batches.
    """
    if max_tokens is None or penalty <= 0 or len(costs) == 0:
        return pack_greedy(costs, max_tokens, max_sentences, multiple)
    costs = np.asarray(costs)
    _check_costs(costs, max_tokens)
    src = np.asarray(src)
    tgt = None if tgt is None else np.asarray(tgt)
    charge = penalty * max_tokens

    def shorten(pos: int, rows: int) -> int:
        candidates = np.arange(multiple, rows + 1, multiple, dtype=np.int64)
        longest = np.zeros(rows, dtype=np.int64)
        real = np.zeros(rows, dtype=np.int64)
        for side in (src, tgt):
            if side is not None:
                window = side[pos : pos + rows].astype(np.int64)
                longest += np.maximum.accumulate(window)
                real += np.cumsum(window)
        score = (candidates * longest[candidates - 1] - real[candidates - 1] + charge) / candidates
        return int(candidates[np.flatnonzero(score <= score.min())[-1]])

    cap = max_sentences if max_sentences is not None else len(costs)
    return _pack(costs, _run_ends(src, tgt), max_tokens, cap, multiple, shorten)


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
    shorten: Callable[[int, int], int] | None = None,
) -> np.ndarray:
    """The greedy walk over runs of samples of one cost (``run_ends``; a run may be finer).

    Inside a run every batch has the same size, so a whole stretch of batches is emitted with one
    numpy call; a batch that straddles runs is measured with a running maximum over its window, and
    ``shorten(start, rows)`` may then end it earlier (at least ``multiple`` rows are kept).
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
        if shorten is not None and rows > multiple:
            rows = shorten(pos, rows)
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
