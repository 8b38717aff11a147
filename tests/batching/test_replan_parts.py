"""The vectorized parts of a re-plan against plain definitions, on random inputs of every shape.

``deal`` of a cut grouped by class (packed sort words) against ``deal_by_batch`` (the general path, the
rule as first written); the copies counted in draw order against a count per item; the served / left
positions of a plan gathered range by range against marking every position; ``multiset_keep`` against
a counter; ``has_copies`` against a set.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tokenmill.batching.copies import _batch_of, deal, deal_by_batch, has_copies, samples_in_order
from tokenmill.batching.epochs import left_of_ranges
from tokenmill.batching.mixes import multiset_keep


def grouped_cut(rng: np.random.Generator, n: int, ids: int, classes: int) -> tuple[np.ndarray, ...]:
    """Items of a cut grouped by class: sample ids (copies share one and one class), batch ends, classes."""
    sample_class = rng.integers(0, classes, ids) * 3  # sparse class numbers, as row costs are
    samples = rng.integers(0, ids, n)
    order = np.argsort(sample_class[samples], kind="stable")
    samples = samples[order]
    cuts = np.unique(np.concatenate([rng.integers(1, max(n, 2), max(n // 7, 1)), [n]]))
    cuts = cuts[cuts <= n]
    return samples, cuts.astype(np.int64), sample_class[samples]


@pytest.mark.parametrize("n, ids, classes", [(1, 1, 1), (40, 6, 2), (500, 60, 5), (5000, 300, 40), (70_000, 9000, 30)])
def test_grouped_deal_is_the_general_deal(n, ids, classes):
    rng = np.random.default_rng(n)
    for _ in range(3):
        samples, ends, cls = grouped_cut(rng, n, ids, classes)
        expected = deal_by_batch(samples, _batch_of(ends, n), cls, ordered=True)
        assert np.array_equal(deal(samples, ends, cls), expected)
        counts = np.bincount(samples)[samples]
        assert np.array_equal(deal(samples, ends, cls, counts), expected)


def test_samples_in_order_counts_every_copy():
    rng = np.random.default_rng(5)
    draw = rng.integers(0, 300, 2000)
    order = rng.permutation(2000)
    ids, counts = samples_in_order(draw, order)
    tally = Counter(draw.tolist())
    assert np.array_equal(ids, draw[order])
    assert counts.tolist() == [tally[i] for i in draw[order].tolist()]
    ids, counts = samples_in_order(np.array([2**33, 5]), np.array([1, 0]))  # ids past 32 bits: not counted
    assert ids.tolist() == [5, 2**33] and counts is None


def marked(order: np.ndarray, starts: np.ndarray, stops: np.ndarray, inside: bool) -> np.ndarray:
    covered = np.zeros(len(order), dtype=bool)
    for a, b in zip(starts.tolist(), stops.tolist(), strict=True):
        covered[a:b] = True
    return order[covered if inside else ~covered]


@pytest.mark.parametrize("inside", [True, False])
def test_left_of_ranges_is_marking_each_position(inside):
    rng = np.random.default_rng(7)
    for n in (0, 1, 30, 1000):
        order = rng.permutation(n)
        edges = np.unique(np.concatenate([[0, n], rng.integers(0, n + 1, n // 3 + 1)]))
        starts, stops = edges[:-1], edges[1:]
        taken = rng.permutation(len(starts))[: len(starts) // 2]  # disjoint ranges, in any order
        assert np.array_equal(left_of_ranges(order, starts[taken], stops[taken], inside=inside),
                              marked(order, starts[taken], stops[taken], inside))
        if n:  # overlapping and empty ranges take the other path
            a = rng.integers(0, n, 5)
            b = np.minimum(a + rng.integers(0, 40, 5), n)
            assert np.array_equal(left_of_ranges(order, a, b, inside=inside), marked(order, a, b, inside))


def test_multiset_keep_is_counter_subtraction():
    rng = np.random.default_rng(11)
    for size in (0, 1, 50, 3000):
        items = rng.integers(0, max(size // 3, 1), size)
        served = rng.integers(0, max(size // 3, 1) + 5, size // 2)
        keep = multiset_keep(items, served)
        left = Counter(served.tolist())
        expected = []
        for i in items.tolist():  # the first copies of an id are the ones taken out
            expected.append(left[i] == 0)
            left[i] = max(left[i] - 1, 0)
        assert keep.tolist() == expected


def test_has_copies_is_a_set_check():
    rng = np.random.default_rng(3)
    for ids in (np.array([], dtype=np.int64), np.array([4]), rng.permutation(1000), rng.integers(0, 1000, 50),
                np.array([2**40, 7, 2**40]), np.array([-1, 3, 5])):
        assert has_copies(ids) == (len(set(ids.tolist())) < len(ids))
