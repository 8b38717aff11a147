"""lowpad's cut: the exact least ``pad slots + price x batches`` over the cuts of a length-cell order.

Samples come in groups of ``multiple`` consecutive rows (every batch but a short last one holds a
multiple of ``multiple`` rows, so every batch boundary falls between groups). ``q[b]``, the least
value of the first ``b`` groups, is ``price + min_a q[a] + multiple x (b - a) x (longest source +
longest target in groups a..b-1)`` over the windows that fit the budget. Solved group by group this
is a Python loop over millions of boundaries; solved here *unit by unit*, where a unit is a run of
groups with the same longest source, target and cost (a length cell, or one group that mixes cells):
a few thousand units for any corpus size.

For a boundary ``b`` in unit ``u`` (groups ``A..B-1``, ``w`` = its source + target, ``F`` groups fit a
batch) write ``P[b] = q[b] - multiple x w x b``. A window that starts inside the unit has no padding,
so ``P[b] = price + min(P[b-F..b-1])`` over starts ``>= A``; a window that starts at ``a < A`` costs a
line in ``b`` (its maxima do not change while ``b`` stays in the unit) that holds for ``b <= a + K_a``.
Both are at most ``F - 1`` groups from ``A`` (the window holds group ``b - 1``), so with ``x[h]`` the
value of entering the unit at ``h`` (``P[A]``, or ``price`` + the best line at ``h``), ``P[b] = min_h x[h]
+ price x ceil((b - h) / F)``: a prefix/suffix minimum of ``x`` per boundary up to ``A + D + F`` (``D``
the lines' reach), and ``P[b] = P[b - F] + price`` (a full batch) after it, written only for the last
boundaries of the unit that a later window can reach. Each unit costs a few dozen numpy calls; units
of a few groups with small ``F`` run a plain loop over their windows instead (fewer interpreter
calls). The cut is walked back from the end: a periodic stretch in one step, elsewhere the window
whose value matches. ``tests/batching/test_pack.py`` checks every path against a brute force.
"""

from __future__ import annotations

import numpy as np

INF = 1 << 62
SCALAR_WORK = 768
"""A unit whose groups x fit is at most this is solved by the plain loop (cheaper than ~40 numpy calls)."""
SCALAR_WINDOWS = 64
"""The walk back tries the windows ending at a boundary in a plain loop up to this many, else vectorized."""


def cut_groups(
    group_src: np.ndarray, group_tgt: np.ndarray, group_cost: np.ndarray, max_tokens: int, multiple: int,
    cap_groups: int, price: int,
) -> np.ndarray:
    """Boundaries (group counts, ascending, last == groups) of a least-value cut of the groups.

    ``group_*``: longest source, target and row cost in each group of ``multiple`` rows; a window of
    ``k`` groups fits when ``k x multiple x`` its costliest row ``<= max_tokens`` and ``k <= cap_groups``
    (every single group must fit). The value is ``multiple x k x (longest source + longest target)`` per
    batch plus ``price`` per batch (integers: the result is exact and the same on every machine).
    """
    groups = len(group_src)
    src, tgt = group_src, group_tgt  # their own dtype (no copy): units take int64 slices
    fit = groups_that_fit(group_cost, max_tokens, multiple, cap_groups)
    change = np.flatnonzero((src[1:] != src[:-1]) | (tgt[1:] != tgt[:-1]) | (fit[1:] != fit[:-1])) + 1
    starts = [0, *change.tolist()]
    stops = [*starts[1:], groups]
    q = np.zeros(groups + 1, dtype=np.int64)  # only boundaries near unit ends are ever written (pages stay unmapped)
    units = list(zip(starts, stops, fit[starts].tolist(), strict=True))
    tail = int(fit.max(initial=1))  # a later window reaches at most this far back
    periodic = []  # per unit: past this boundary every batch of the optimum is a full one inside the unit
    before = 0  # the previous unit's start
    for start, stop, f in units:
        if (stop - start) * f <= SCALAR_WORK:
            _unit_by_windows(q, src, tgt, fit, start, stop, f, multiple, price)
            periodic.append(stop)
        else:
            periodic.append(_unit_by_lines(q, src, tgt, fit, (before, start, stop), f, multiple, price, tail))
        before = start
    return _path(q, src, tgt, fit, units, periodic, multiple, price)


def groups_that_fit(group_cost: np.ndarray, max_tokens: int, multiple: int, cap_groups: int) -> np.ndarray:
    """Groups of ``multiple`` rows that fit a batch with each group's row cost: read from a table per cost
    (a division per group costs several times more on millions); 4 bytes a group (a plan holds ~48 an item)."""
    wide = np.int64 if max_tokens >= 2**31 else np.int32
    costs = np.arange(int(group_cost.max(initial=0)) + 1, dtype=np.int64)
    table = np.minimum(max_tokens // (multiple * np.maximum(costs, 1)), min(cap_groups, max_tokens)).astype(wide)
    return table[group_cost]


def _unit_by_windows(q: np.ndarray, src: np.ndarray, tgt: np.ndarray, fits: np.ndarray, start: int, stop: int,
                     fit: int, m: int, price: int) -> None:
    """``q`` on the unit's boundaries, every window tried (the unit is small)."""
    low = max(start - fit + 1, 0)  # a window holding group b - 1 of this unit starts at b - fit or later
    s, t, f = src[low:stop].tolist(), tgt[low:stop].tolist(), fits[low:stop].tolist()
    values = q[low : start + 1].tolist()  # values[i] == q[low + i]
    for b in range(start + 1, stop + 1):
        values.append(_best_window(values, s, t, f, b - 1 - low, fit, m)[0] + price)
    q[start + 1 : stop + 1] = values[start + 1 - low :]


def _best_window(values: list[int], s: list[int], t: list[int], f: list[int], last: int, room: int, m: int
                 ) -> tuple[int, int]:
    """(least ``values[i] + m x rows x (longest source + target)`` over the windows ``i..last`` that fit, that
    ``i``): windows grow one group at a time until one no longer fits (``room``: the groups that still may)."""
    best, arg = INF, last
    longest_src = longest_tgt = 0
    k = 1
    i = last
    while i >= 0:
        if s[i] > longest_src:
            longest_src = s[i]
        if t[i] > longest_tgt:
            longest_tgt = t[i]
        if f[i] < room:
            room = f[i]
        if k > room:
            break
        value = values[i] + m * k * (longest_src + longest_tgt)
        if value < best:
            best, arg = value, i
        i -= 1
        k += 1
    return best, arg


def _unit_by_lines(q: np.ndarray, src: np.ndarray, tgt: np.ndarray, fits: np.ndarray,
                   bounds: tuple[int, int, int], fit: int, m: int, price: int, tail: int) -> int:
    """``q`` on the unit's boundaries from its entry values (module doc), vectorized; returns the last
    boundary computed explicitly. Past it ``q[b] = q[b - fit]`` + a full batch, written only for the last
    ``tail`` boundaries (the only ones a later window or the walk back reads). ``bounds``: the previous
    unit's start, this unit's start and stop."""
    _, start, stop = bounds
    width = int(src[start]) + int(tgt[start])
    slope = m * width
    entries, reach = _entries(q, src, tgt, fits, bounds, fit, m, width)
    x = np.concatenate([q[start : start + 1] - slope * start, entries + price])
    end = min(stop, start + reach + fit)  # explicit boundaries; past them every batch is a full one
    count = end - start  # boundary start + 1 + k for k < count; every index below is a slice
    prefix = np.minimum.accumulate(x)
    value = np.full(count, INF, dtype=np.int64)
    value[:reach] = x[1 : reach + 1]  # a batch from before the unit ends here
    # one batch inside the unit from the best entry in [max(A, b - fit), b - 1]: a prefix of x while
    # b - fit < A (k <= fit - 2), then a suffix; two batches: the best entry before b - fit, then a full one
    inside = min(count, fit - 1)
    known = min(inside, reach + 1)
    np.minimum(value[:known], prefix[:known] + price, out=value[:known])
    np.minimum(value[known:inside], int(prefix[-1]) + price, out=value[known:inside])
    if count >= fit:
        suffix = np.minimum.accumulate(x[::-1])[::-1]
        np.minimum(value[fit - 1 :], suffix[: count - fit + 1] + price, out=value[fit - 1 :])
        np.minimum(value[fit:], prefix[: count - fit] + 2 * price, out=value[fit:])
    q[start + 1 : end + 1] = value + slope * np.arange(start + 1, end + 1)
    if stop > end:  # P[b] = P[b - fit] + price
        b = np.arange(max(end, stop - tail) + 1, stop + 1)
        offset = b - end - 1
        base = end - fit + 1 + offset % fit
        q[b[0] : stop + 1] = q[base] - slope * base + price * (1 + offset // fit) + slope * b
    return end


def _entries(q: np.ndarray, src: np.ndarray, tgt: np.ndarray, fits: np.ndarray, bounds: tuple[int, int, int],
             fit: int, m: int, width: int) -> tuple[np.ndarray, int]:
    """For ``h = A+1 .. A+D``: the least ``P[h]`` of a batch from some ``a < A`` to ``h`` (no price); and
    ``D``. Each ``a`` is a line in ``h`` (its window's maxima over ``a..A-1`` and the unit's) while
    ``h <= a + K_a``; ``K_a`` grows with ``a``, so the last ``a`` reaches furthest. The ``a`` come in a few
    runs of equal maxima and ``K_a`` (equal slopes): the best ``a`` of a run is a suffix minimum."""
    before, start, stop = bounds
    back = min(start, fit - 1)
    reach = min(stop - start, min(int(fits[start - 1]), fit) - 1) if back > 0 else 0  # the last a's reach
    if reach <= 0:
        return np.zeros(0, dtype=np.int64), 0
    low = start - back
    if low >= before:  # every a in the previous unit: one run (the common case in dense cells)
        longest = max(int(src[start - 1]), int(src[start])) + max(int(tgt[start - 1]), int(tgt[start]))
        k = min(int(fits[start - 1]), fit)
        lowest = np.minimum.accumulate((q[low:start] - m * longest * np.arange(low, start))[::-1])[::-1]
        j = np.arange(1, reach + 1)
        return lowest[np.maximum(back + j - k, 0)] + m * (longest - width) * (start + j), reach
    room = np.minimum.accumulate(fits[low:start][::-1])[::-1]  # K_a, before the unit's own fit caps it
    longest = (np.maximum(np.maximum.accumulate(src[low:start][::-1], dtype=np.int64)[::-1], int(src[start]))
               + np.maximum(np.maximum.accumulate(tgt[low:start][::-1], dtype=np.int64)[::-1], int(tgt[start])))
    c = q[low:start] - m * np.arange(low, start) * longest
    breaks = np.flatnonzero((longest[1:] != longest[:-1]) | (room[1:] != room[:-1])) + 1
    first = np.concatenate([[0], breaks])
    last = np.append(breaks, back) - 1
    run = np.zeros(back, dtype=np.int64)
    run[breaks] = 1
    run = np.cumsum(run)
    span = int(c.max()) - int(c.min()) + 1
    lowest = np.minimum.accumulate((c + run * span)[::-1])[::-1] - run * span  # per run: later runs sit above
    k = np.minimum(room[first], fit)
    top = np.minimum(last + k - back, reach)  # the run's last a reaches h = A + top
    j = np.arange(1, reach + 1)
    # per run and h: its first a with a + K_a >= h (a suffix minimum from there is the run's best line)
    at = np.minimum(np.maximum(first[:, None], back + j[None, :] - k[:, None]), last[:, None])
    lines = lowest[at] + (m * (longest[first] - width))[:, None] * (start + j)[None, :]
    lines[j[None, :] > top[:, None]] = INF
    return lines.min(axis=0), reach


def _path(q: np.ndarray, src: np.ndarray, tgt: np.ndarray, fits: np.ndarray, units: list[tuple[int, int, int]],
          periodic: list[int], m: int, price: int) -> np.ndarray:
    """Walk the optimum back from the last boundary: through a unit's periodic part in one step of full
    batches; elsewhere a full batch inside the unit when its value says so, else the best window."""
    pieces = []
    u = len(units) - 1
    at = len(src)
    while at > 0:
        while units[u][0] >= at:
            u -= 1
        start, _, fit = units[u]
        width = int(src[start]) + int(tgt[start])
        if at > periodic[u]:
            steps = -(-(at - periodic[u]) // fit)
            pieces.append(np.arange(at, at - steps * fit, -fit, dtype=np.int64))
            at -= steps * fit
            continue
        pieces.append(np.array([at], dtype=np.int64))
        if at - fit >= start and q[at] == q[at - fit] + m * fit * width + price:
            at -= fit
            continue
        low = max(at - fit, 0)
        if fit <= SCALAR_WINDOWS:
            best, arg = _best_window(q[low:at].tolist(), src[low:at].tolist(), tgt[low:at].tolist(),
                                     fits[low:at].tolist(), at - 1 - low, fit, m)
        else:  # the same windows, vectorized: window k (1-based) starts at at - k
            rows = m * np.arange(1, at - low + 1)
            longest = (np.maximum.accumulate(src[low:at][::-1], dtype=np.int64)
                       + np.maximum.accumulate(tgt[low:at][::-1], dtype=np.int64))
            value = q[low:at][::-1] + rows * longest
            value[rows // m > np.minimum.accumulate(fits[low:at][::-1])] = INF
            k = int(value.argmin())
            best, arg = int(value[k]), at - 1 - k - low
        if best + price != q[at]:
            raise RuntimeError("lowpad's cut: the walk back does not retrace the optimum (a bug)")
        at = low + arg
    return np.concatenate(pieces)[::-1]
