"""How many items each dataset gives to an epoch and to each slice of a virtual epoch: fairseq's
default virtual size, the apportioning of a virtual epoch's items to datasets, and the random
partition of a virtual epoch into slices (see :mod:`tokenmill.data.sampling` for the rules).
"""

from __future__ import annotations

import numpy as np

from tokenmill.data.sampling_draw import BLOCK


def default_virtual_size(sizes: np.ndarray, ratios: np.ndarray, max_ratio: float = 1.5) -> int:
    """fairseq's ``default_virtual_size_func``: the datasets scaled like the largest one, capped.

    ``int(min(sum_i (r_i / r_L) * n_L, max_ratio * N))``, summed left to right as fairseq does. A
    largest dataset with ratio 0 makes the sum infinite in fairseq, so the cap applies.
    """
    largest = int(np.argmax(sizes))
    cap = int(sizes.sum()) * max_ratio
    if ratios[largest] == 0:
        return int(cap)
    scaled = (ratios / ratios[largest]) * float(sizes[largest])
    virtual = float(np.cumsum(scaled)[-1])
    return int(virtual if virtual < cap else cap)


def apportion(expected: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """Integers summing to ``total``, each ``floor(e_i)`` or ``floor(e_i) + 1``, with mean ``e_i``.

    The ``total - sum(floor)`` extra units go by systematic sampling over a random order of the
    entries: one uniform offset, then entry i is picked when a point ``u + k`` falls in its share
    ``frac(e_i)`` of the line, which happens with probability exactly ``frac(e_i)``.
    """
    floors = np.floor(expected)
    counts = floors.astype(np.int64)
    extra = total - int(counts.sum())
    fractions = expected - floors
    order = rng.permutation(len(expected))
    u = rng.random()
    if extra > 0:
        edges = np.concatenate(([0.0], np.cumsum(fractions[order])))
        edges *= extra / edges[-1]  # the fractions sum to `extra` up to rounding: make it exact
        picked = np.diff(np.floor(edges + u)).astype(np.int64).clip(0, 1)
        counts[order] += picked
    # rounding can only leave a unit or so off; settle it on the largest fractions (or smallest)
    left = total - int(counts.sum())
    if left:
        rank = np.argsort(-fractions if left > 0 else fractions, kind="stable")
        if left < 0:
            rank = rank[counts[rank] > 0]
        counts[rank[: abs(left)]] += 1 if left > 0 else -1
    return counts


def slice_labels(total: int, slice_size: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random assignment of ``total`` positions to slices of ``slice_size`` (the last
    one shorter): labels (uint8/uint16/int32) with exactly the slice sizes as counts.

    Labels are drawn independently with the slice sizes as weights; then the excess of each
    over-full slice (a few standard deviations, O(sqrt(total))) is chosen among its positions by
    rejection sampling and dealt at random to the short slices. No step tells positions apart, so
    every labelling with those counts is equally likely.
    """
    k = -(-total // slice_size)
    last = total - (k - 1) * slice_size
    dtype = np.uint8 if k <= 2**8 else np.uint16 if k <= 2**16 else np.int32
    labels = np.empty(total, dtype=dtype)
    have = np.zeros(k, dtype=np.int64)
    for start in range(0, total, BLOCK):
        block = labels[start : start + BLOCK]
        block[:] = rng.integers(0, k, len(block), dtype=dtype)
        if last < slice_size:  # the last slice is lighter: redraw its labels with probability 1 - last/size
            redo = np.flatnonzero(block == k - 1)
            while len(redo):
                redo = redo[rng.random(len(redo)) * slice_size >= last]
                block[redo] = rng.integers(0, k, len(redo), dtype=dtype)
                redo = redo[block[redo] == k - 1]
        if k <= 32:  # a few compares are cheaper than bincount's cast to intp
            have += [np.count_nonzero(block == j) for j in range(k)]
        else:
            have += np.bincount(block, minlength=k)
    want = np.full(k, slice_size, dtype=np.int64)
    want[-1] = last
    moved = [_members(labels, j, int(have[j] - want[j]), int(have[j]), rng) for j in np.flatnonzero(have > want)]
    if moved:
        positions = np.concatenate(moved)
        rng.shuffle(positions)
        short = np.flatnonzero(have < want)
        labels[positions] = np.repeat(short, (want - have)[short]).astype(dtype)
    return labels


def _members(labels: np.ndarray, label: int, count: int, population: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` distinct uniformly random positions whose label is ``label`` (``population`` of them),
    by drawing positions uniformly and keeping the first new ones that carry the label."""
    chosen = np.empty(0, dtype=np.int64)
    while len(chosen) < count:
        need = count - len(chosen)
        draws = rng.integers(0, len(labels), need * (len(labels) // population + 1) + 16, dtype=np.int64)
        draws = draws[labels[draws] == label]
        draws = draws[~np.isin(draws, chosen)]
        _, first = np.unique(draws, return_index=True)
        chosen = np.concatenate((chosen, draws[np.sort(first)][:need]))
    return chosen


def segment_counts(mask: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Number of True values of ``mask`` in each range ``bounds[i] .. bounds[i + 1]``."""
    cumulative = np.zeros(len(mask) + 1, dtype=np.int64) if len(mask) < BLOCK else None
    if cumulative is not None:
        np.cumsum(mask, out=cumulative[1:])
        return cumulative[bounds[1:]] - cumulative[bounds[:-1]]
    return np.array(
        [np.count_nonzero(mask[a:b]) for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)],
        dtype=np.int64,
    )


__all__ = ["apportion", "default_virtual_size", "segment_counts", "slice_labels"]
