"""Greedy token-budget packing: the fast run-walking packer equals the one-sample-at-a-time rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.batching.pack import pack_greedy, pack_lowpad, pack_reference, round_rows
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


def lowpad_reference(src, tgt, max_tokens, max_sentences, multiple, penalty):
    """pack_lowpad's rule one batch at a time: the greedy batch, then the end (every ``multiple`` rows)
    with the least (pad slots + penalty x max_tokens) per row, unless the batch lies in one length cell."""
    costs = [max(s, t) for s, t in zip(src, tgt, strict=True)]
    greedy = pack_reference(np.asarray(costs), max_tokens, max_sentences, multiple).tolist()
    ends, start = [], 0
    while start < len(src):
        rows = pack_reference(np.asarray(costs[start:]), max_tokens, max_sentences, multiple)[0]
        one_cell = len({(src[i], tgt[i]) for i in range(start, start + rows)}) == 1
        if rows > multiple and not one_cell:
            best, best_score = rows, None
            for r in range(multiple, rows + 1, multiple):
                rows_here = range(start, start + r)
                pad = r * (max(src[i] for i in rows_here) + max(tgt[i] for i in rows_here))
                pad -= sum(src[i] + tgt[i] for i in rows_here)
                score = (pad + penalty * max_tokens) / r
                if best_score is None or score <= best_score:
                    best, best_score = r, score
            rows = best
        start += rows
        ends.append(start)
    return ends, greedy


def test_a_batch_stops_at_a_length_step_when_the_padding_is_worth_a_batch():
    # 16 rows of (10, 10), then 16 of (2, 2): a budget of 320 fits all 32 rows, padding 16 x 16 slots.
    src = tgt = np.array([10] * 16 + [2] * 16)
    costs = np.maximum(src, tgt)
    assert pack_greedy(costs, 320, None, 8).tolist() == [32]
    assert pack_lowpad(costs, src, tgt, 320, None, 8, penalty=0.1).tolist() == [16, 32]
    # When one more batch costs more than the padding it saves, the batch runs on.
    assert pack_lowpad(costs, src, tgt, 320, None, 8, penalty=1.0).tolist() == [32]


@settings(max_examples=300, deadline=None)
@given(
    lengths=st.lists(st.tuples(st.integers(1, 12), st.integers(1, 12)), min_size=1, max_size=200),
    max_tokens=st.integers(12, 200),
    max_sentences=st.one_of(st.none(), st.integers(1, 40)),
    multiple=st.sampled_from([1, 2, 8]),
    penalty=st.sampled_from([0.0, 0.05, 0.1, 0.5]),
    one_side=st.booleans(),
)
def test_lowpad_packer_equals_its_reference(lengths, max_tokens, max_sentences, multiple, penalty, one_side):
    lengths = sorted((s, 0 if one_side else t) for s, t in lengths)  # cells contiguous, as in a curve order
    src = np.array([s for s, _ in lengths])
    tgt = np.array([t for _, t in lengths])
    costs = np.maximum(src, tgt)
    fast = pack_lowpad(costs, src, None if one_side else tgt, max_tokens, max_sentences, multiple, penalty)
    slow, greedy = lowpad_reference(src.tolist(), tgt.tolist(), max_tokens, max_sentences, multiple, penalty)
    assert fast.tolist() == (greedy if penalty == 0 else slow)
