"""The report's token counts: the dense count equals numpy's sort-based ``unique`` for every kind of store."""

from __future__ import annotations

import numpy as np
import pytest

from tokenmill.report.corpus import DENSE_COUNT_IDS, count_ids


@pytest.mark.parametrize(
    "tokens",
    [
        np.random.default_rng(1).integers(0, 65535, 100_000).astype(np.uint16),  # a 16-bit store: dense
        np.random.default_rng(2).integers(0, 300, 50).astype(np.uint32),
        np.random.default_rng(3).integers(0, 200_000, 1_000, dtype=np.int64),  # a large id in a small sample: sort
        np.random.default_rng(4).integers(-5, 100, 1_000).astype(np.int32),  # a damaged store's negative id: sort
        np.array([2**40, 7, 7], dtype=np.uint64),
        np.zeros(0, dtype=np.int32),
    ],
)
def test_count_ids_equals_unique(tokens: np.ndarray) -> None:
    seen, counts = count_ids(tokens)
    expected_seen, expected_counts = np.unique(tokens, return_counts=True)
    assert seen.tolist() == expected_seen.tolist()
    assert counts.tolist() == expected_counts.tolist()
    assert seen.dtype == np.int64 and counts.dtype == np.int64


def test_dense_count_is_bounded_by_the_sample() -> None:
    """One huge id in a few tokens is counted by the sort (no array of 2**40 counts)."""
    tokens = np.array([DENSE_COUNT_IDS * 1000, 1], dtype=np.int64)
    seen, counts = count_ids(tokens)
    assert seen.tolist() == [1, DENSE_COUNT_IDS * 1000] and counts.tolist() == [1, 1]
