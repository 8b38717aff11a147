"""Which items of one dataset an epoch draws: a uniform subset, whole copies plus a subset, or
draws with replacement (see :mod:`tokenmill.data.sampling` for the rules).

Ids are produced and post-processed in blocks of ``BLOCK``, bounding temporary arrays; a byte mask
over a dataset's items is used when it holds at most ``MASK_DENSITY`` items per sampled one, and
sparser draws dedupe by sorting.
"""

from __future__ import annotations

import numpy as np

# ids are produced and post-processed in blocks of this many, bounding temporary arrays
BLOCK = 1 << 22
# a byte mask over a dataset's items is used when it has at most this many items per sampled one;
# sparser draws dedupe by sorting
MASK_DENSITY = 8


def fill_concat(out: np.ndarray, sizes: np.ndarray, offsets: np.ndarray, repeat: int) -> None:
    """fairseq's ConcatDataset order: dataset 0's ids ``repeat`` times, then every other once."""
    first = int(sizes[0])
    fill_arange(out[:first], 0)
    if repeat > 1 and first:
        out[: first * repeat].reshape(repeat, first)[1:] = out[:first]
    fill_arange(out[first * repeat :], int(offsets[1]))


def fill_arange(out: np.ndarray, start: int) -> None:
    for a in range(0, len(out), BLOCK):
        b = min(a + BLOCK, len(out))
        out[a:b] = np.arange(start + a, start + b, dtype=np.int64)


def fill_dataset(out: np.ndarray, size: int, rng: np.random.Generator, upsample: str) -> None:
    """Local ids of ``len(out)`` items of a dataset of ``size`` items (see the module doc)."""
    count = len(out)
    if count <= size:
        fill_without_replacement(out, size, rng)
    elif upsample == "replacement":
        for a in range(0, count, BLOCK):
            b = min(a + BLOCK, count)
            out[a:b] = rng.integers(0, size, b - a, dtype=np.int64)
    else:
        copies = count // size
        fill_arange(out[:size], 0)
        out[: copies * size].reshape(copies, size)[1:] = out[:size]
        fill_without_replacement(out[copies * size :], size, rng)


def fill_without_replacement(out: np.ndarray, size: int, rng: np.random.Generator) -> None:
    """A uniform random ``len(out)``-subset of ``range(size)`` written to ``out``.

    Dense draws (at most ``MASK_DENSITY`` items per sampled one) mark a byte mask, or the
    complement's when more than half is taken, and read it back in ascending order; sparse draws
    sort random integers in place and replace duplicates. Both add fresh uniform draws until the
    set is full, which treats every item alike, so every subset is equally likely.
    """
    count = len(out)
    if count == 0:
        return
    if count == size:
        fill_arange(out, 0)
    elif size <= MASK_DENSITY * count:
        if 2 * count <= size:
            mask = random_mask(size, count, rng)
        else:
            mask = random_mask(size, size - count, rng)
            np.logical_not(mask, out=mask)
        written = 0
        for a in range(0, size, BLOCK):
            hits = np.flatnonzero(mask[a : a + BLOCK])
            hits += a
            out[written : written + len(hits)] = hits
            written += len(hits)
    else:
        sparse_subset(out, size, rng)


def random_mask(size: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """A byte mask over ``range(size)`` with exactly ``count`` (at most half) random items set."""
    mask = np.zeros(size, dtype=np.bool_)
    have = 0
    while have < count:
        draws = rng.integers(0, size, min(count - have, BLOCK), dtype=np.int64)
        if len(draws) * 64 > size:
            mask[draws] = True
            have = int(np.count_nonzero(mask))
        else:
            fresh = np.unique(draws[~mask[draws]])
            mask[fresh] = True
            have += len(fresh)
    return mask


def sparse_subset(out: np.ndarray, size: int, rng: np.random.Generator) -> None:
    """Fill ``out`` with distinct random items of ``range(size)`` by sorting and topping up."""
    count = len(out)
    for a in range(0, count, BLOCK):
        b = min(a + BLOCK, count)
        out[a:b] = rng.integers(0, size, b - a, dtype=np.int64)
    out.sort()
    kept = 0  # compact the distinct values to the front, block by block (reads stay ahead of writes)
    for a in range(0, count, BLOCK):
        b = min(a + BLOCK, count)
        block = out[a:b]
        keep = np.ones(b - a, dtype=np.bool_)
        np.not_equal(block[1:], block[:-1], out=keep[1:])
        if a:
            keep[0] = block[0] != out[a - 1]
        distinct = block[keep]
        out[kept : kept + len(distinct)] = distinct
        kept += len(distinct)
    base = out[:kept]  # sorted, distinct
    extra = np.empty(0, dtype=np.int64)
    while kept + len(extra) < count:
        draws = np.unique(rng.integers(0, size, count - kept - len(extra), dtype=np.int64))
        draws = draws[~contains_sorted(base, draws)]
        draws = draws[~contains_sorted(extra, draws)]
        extra = np.sort(np.concatenate((extra, draws)))
    out[kept:] = extra


def contains_sorted(haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """For each needle, whether it occurs in the sorted array ``haystack``."""
    if not len(haystack):
        return np.zeros(len(needles), dtype=np.bool_)
    where = np.searchsorted(haystack, needles).clip(max=len(haystack) - 1)
    return haystack[where] == needles


__all__ = ["BLOCK", "MASK_DENSITY", "contains_sorted", "fill_arange", "fill_concat", "fill_dataset",
           "fill_without_replacement", "random_mask", "sparse_subset"]
