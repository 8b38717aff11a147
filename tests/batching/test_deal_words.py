"""The deal's two orders (``tokenmill.batching.copies``) against plain ``np.lexsort`` definitions.

:func:`~tokenmill.batching.copies.class_slots` sorts each class's run of positions on its own on 32-bit
words, or all positions at once on 64-bit words; :func:`~tokenmill.batching.copies.items_dealt` reads the
sample ids back from the sorted words. Both must give exactly the orders their docstrings define, on
random cuts with short and long classes, one class, and batches that straddle classes.
"""

from __future__ import annotations

import numpy as np
import pytest

from tokenmill.batching import copies


def slots_by_definition(ends: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions by (class, round inside its (class, batch) segment, position), the dense class of each
    position and the segments (batches) of each class: a lexsort over every position."""
    n = len(classes)
    starts = sorted({0, *ends[:-1].tolist(), *(np.flatnonzero(np.diff(classes)) + 1).tolist()} - {n})
    segment = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
    rounds = np.arange(n) - np.asarray(starts)[segment]
    dense = np.unique(classes, return_inverse=True)[1]
    room = np.bincount(dense[starts])
    return np.lexsort((np.arange(n), rounds, dense)), dense, room


def random_cut(rng: np.random.Generator, n: int, kinds: int) -> tuple[np.ndarray, np.ndarray]:
    """Batch ends and non-decreasing classes (with gaps between the class numbers) of ``n`` positions."""
    classes = np.sort(rng.choice(np.arange(0, 4 * kinds, 4) + 1, n)).astype(np.int64)
    ends = np.unique(np.append(rng.choice(np.arange(1, n), min(n - 1, rng.integers(1, n // 2 + 2))), n))
    return ends.astype(np.int64), classes


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("words", ["32-bit per class", "64-bit"])
def test_class_slots_are_the_lexsort_order(seed: int, words: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if words == "64-bit":  # the path for rounds and places over 32 bits, forced on small cuts
        monkeypatch.setattr(copies, "_slots_per_class", lambda *args: None)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 3000))
    ends, classes = random_cut(rng, n, kinds=int(rng.integers(1, 40)))
    slots, dense, room = copies.class_slots(ends, classes)
    want_slots, want_dense, want_room = slots_by_definition(ends, classes)
    np.testing.assert_array_equal(slots, want_slots)
    np.testing.assert_array_equal(dense, want_dense)
    np.testing.assert_array_equal(room, want_room)
    assert slots.dtype == np.int64


def test_class_slots_of_one_long_batch() -> None:
    classes = np.zeros(5000, dtype=np.int64)
    slots, _, room = copies.class_slots(np.array([5000]), classes)
    np.testing.assert_array_equal(slots, np.arange(5000))
    np.testing.assert_array_equal(room, [1])


@pytest.mark.parametrize("seed", range(12))
def test_items_dealt_are_the_lexsort_order_with_their_samples(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 4000))
    kinds = int(rng.integers(1, 30))
    samples = rng.integers(0, int(rng.integers(1, 2 * n + 1)), n)
    item_class = rng.integers(0, kinds, max(int(samples.max()) + 1, 1))[samples]  # copies share a class
    counts = np.bincount(samples)[samples]
    room = rng.integers(1, 6, kinds)
    positions, ids = copies.items_dealt(samples, counts, item_class, room)
    # (class, copies over the class's batches, most copies first, sample, position)
    want = np.lexsort((np.arange(n), samples, -counts, counts > room[item_class], item_class))
    np.testing.assert_array_equal(positions, want)
    np.testing.assert_array_equal(ids, samples[want])
    np.testing.assert_array_equal(copies.items_order(samples, counts, item_class, room), want)
    assert ids.dtype == np.int64
