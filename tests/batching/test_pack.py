"""Greedy token-budget packing: the fast run-walking packer equals the one-sample-at-a-time rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.batching.pack import pack_greedy, pack_reference, round_rows
from tokenmill.errors import ConfigError


def batches_of(ends: np.ndarray) -> list[tuple[int, int]]:
    starts = np.concatenate([[0], ends[:-1]])
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def test_round_rows_follows_fairseq_multiple_rule():
    assert [round_rows(r, 8) for r in (1, 7, 8, 9, 15, 16, 23)] == [1, 7, 8, 8, 8, 16, 16]
    assert round_rows(13, 1) == 13


def test_sorted_lengths_fill_the_budget_exactly():
    costs = np.array([10] * 25 + [20] * 7)
    ends = pack_greedy(costs, max_tokens=100)
    assert batches_of(ends) == [(0, 10), (10, 20), (20, 25), (25, 30), (30, 32)]
    # (20, 25): adding the first 20-token row would make 6 rows x 20 > 100, so it stops after 5 rows


@pytest.mark.parametrize("multiple", [1, 2, 8])
def test_every_batch_respects_budget_rows_and_multiple(multiple):
    rng = np.random.default_rng(multiple)
    costs = rng.integers(1, 60, 5000)
    ends = pack_greedy(costs, max_tokens=512, max_sentences=40, multiple=multiple)
    assert ends[-1] == len(costs)
    for start, stop in batches_of(ends):
        rows = stop - start
        assert rows * costs[start:stop].max() <= 512
        assert rows <= 40
    # fairseq's rule: a batch has fewer rows than `multiple`, or a multiple of it
    rows = np.diff(np.concatenate([[0], ends]))
    assert ((rows % multiple == 0) | (rows < multiple)).all()


def test_rows_only_budget():
    ends = pack_greedy(np.ones(23, dtype=np.int32), max_tokens=None, max_sentences=10, multiple=4)
    assert batches_of(ends) == [(0, 8), (8, 16), (16, 20), (20, 23)]


def test_sample_above_budget_is_an_error():
    with pytest.raises(ConfigError, match="more than max_tokens=50"):
        pack_greedy(np.array([10, 60, 10]), max_tokens=50)


def test_empty_input():
    assert len(pack_greedy(np.zeros(0, dtype=np.int32), max_tokens=10)) == 0


@settings(max_examples=300, deadline=None)
@given(
    costs=st.lists(st.integers(1, 40), min_size=1, max_size=300),
    sort=st.booleans(),
    max_tokens=st.one_of(st.none(), st.integers(40, 400)),
    max_sentences=st.one_of(st.none(), st.integers(1, 60)),
    multiple=st.sampled_from([1, 2, 3, 8]),
)
def test_fast_packer_equals_reference(costs, sort, max_tokens, max_sentences, multiple):
    if max_tokens is None and max_sentences is None:
        max_sentences = 7
    array = np.sort(costs) if sort else np.asarray(costs)
    fast = pack_greedy(array, max_tokens, max_sentences, multiple)
    slow = pack_reference(array, max_tokens, max_sentences, multiple)
    assert fast.tolist() == slow.tolist()
