"""Token-budget packing: the fast greedy packer equals the one-sample-at-a-time rule; lowpad's cut reaches the
brute-force least pad slots + price x batches under the same rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.batching import optimal_cut
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


def lowpad_value(src, tgt, ends, price, first=0) -> int:
    """pad-slot measure of the batches ending at ``ends`` (the first starting at ``first``): rows x (longest
    source + longest target) per batch, plus ``price`` per batch."""
    starts = [first, *ends[:-1]]
    return sum((b - a) * (max(src[a:b]) + max(tgt[a:b])) + price for a, b in zip(starts, ends, strict=True))


def lowpad_reference(src, tgt, costs, max_tokens, max_sentences, multiple, price) -> int:
    """The least value pack_lowpad must reach, by brute force over every cut it may make: on each stretch of
    samples of which ``multiple`` rows fit (a grid of 1 when max_sentences < multiple), batches of a multiple
    of ``multiple`` rows from the stretch's start, its leftover rows as one last batch; the samples between
    stretches cut greedily."""
    n = len(costs)
    cap = max_sentences if max_sentences is not None else n
    grid = multiple if cap >= multiple else 1
    total, lo = 0, 0
    while lo < n:
        oversize = grid * costs[lo] > max_tokens
        hi = lo
        while hi < n and (grid * costs[hi] > max_tokens) == oversize:
            hi += 1
        if oversize:
            ends = (lo + pack_reference(np.asarray(costs[lo:hi]), max_tokens, max_sentences, multiple)).tolist()
            total += lowpad_value(src, tgt, ends, price, first=lo)
        else:
            groups = (hi - lo) // grid
            best = [0] + [None] * groups  # best[g]: least value of the first g groups of the stretch
            for g in range(1, groups + 1):
                for k in range(1, g + 1):
                    a, b = lo + (g - k) * grid, lo + g * grid
                    rows = b - a
                    if rows > cap or rows * max(costs[a:b]) > max_tokens:
                        break
                    value = best[g - k] + rows * (max(src[a:b]) + max(tgt[a:b])) + price
                    best[g] = value if best[g] is None else min(best[g], value)
            total += best[groups]
            if (hi - lo) % grid:
                total += lowpad_value(src, tgt, [hi], price, first=lo + groups * grid)
        lo = hi
    return total


def check_rules(costs, ends, max_tokens, max_sentences, multiple) -> None:
    """Every batch fits the budget and the row cap; its rows are a multiple of ``multiple`` or fewer."""
    assert ends[-1] == len(costs) and np.all(np.diff(np.concatenate([[0], ends])) > 0)
    for start, stop in batches_of(ends):
        rows = stop - start
        assert rows * max(costs[start:stop]) <= max_tokens
        assert max_sentences is None or rows <= max_sentences
        assert rows % multiple == 0 or rows < multiple


def test_a_batch_stops_at_a_length_step_when_the_padding_is_worth_a_batch():
    # 16 rows of (10, 10), then 16 of (2, 2): a budget of 320 fits all 32 rows, padding 16 x 16 slots.
    src = tgt = np.array([10] * 16 + [2] * 16)
    costs = np.maximum(src, tgt)
    assert pack_greedy(costs, 320, None, 8).tolist() == [32]
    assert pack_lowpad(costs, src, tgt, 320, None, 8, penalty=0.1).tolist() == [16, 32]
    # When one more batch costs more than the padding it saves, the batch runs on.
    assert pack_lowpad(costs, src, tgt, 320, None, 8, penalty=1.0).tolist() == [32]


def test_a_batch_runs_on_when_the_extra_batch_costs_more_than_the_padding_it_saves():
    # 8 rows of (3, 3), then 4 of (4, 4); budget 85 fits all 12 rows (12 x 4 = 48), price round(0.25 x 85) = 21.
    # One batch: 12 x 8 = 96 slots (16 of them padding) + 21 = 117. Stopping at the step: 8 x 6 + 4 x 8 = 80
    # slots + 2 x 21 = 122. (The rule before, least (padding + price) per row of the first batch, stopped.)
    src = tgt = np.array([3] * 8 + [4] * 4)
    assert pack_lowpad(np.maximum(src, tgt), src, tgt, 85, None, 4, penalty=0.25).tolist() == [12]
    assert pack_lowpad(np.maximum(src, tgt), src, tgt, 85, None, 4, penalty=0.1).tolist() == [8, 12]


def test_samples_of_which_multiple_rows_do_not_fit_are_cut_greedily_on_their_own():
    src = np.array([3] * 10 + [30] * 5 + [3] * 9)
    tgt = src.copy()
    costs = np.maximum(src, tgt)
    ends = pack_lowpad(costs, src, tgt, 100, None, 8, penalty=0.2)
    # 10 short rows: one batch of 8 and the 2 left over; 30-token rows: 3 per batch (8 x 30 > 100);
    # then 9 short rows: 8 and 1.
    assert ends.tolist() == [8, 10, 13, 15, 23, 24]
    check_rules(costs, ends, 100, None, 8)


@pytest.mark.parametrize("scalar_work", [0, 10**9])
@settings(max_examples=150, deadline=None)
@given(
    lengths=st.lists(st.tuples(st.integers(1, 12), st.integers(1, 12)), min_size=1, max_size=200),
    max_tokens=st.integers(12, 200),
    max_sentences=st.one_of(st.none(), st.integers(1, 40)),
    multiple=st.sampled_from([1, 2, 8]),
    penalty=st.sampled_from([0.0, 0.05, 0.1, 0.5]),
    one_side=st.booleans(),
    pad_to=st.sampled_from([1, 4]),
)
def test_lowpad_cut_is_the_least_value(scalar_work, lengths, max_tokens, max_sentences, multiple, penalty, one_side,
                                       pad_to):
    """Both ways of solving a unit (every window / lines and prefix minima) and of retracing the walk back
    (plain loop / vectorized) reach the brute-force optimum; costs (the budget) padded to ``pad_to`` while
    the value counts the lengths, as lowpad's row costs with ``pad_to_multiple``."""
    lengths = sorted((s, 0 if one_side else t) for s, t in lengths)  # cells contiguous, as in a curve order
    src = np.array([s for s, _ in lengths])
    tgt = np.array([t for _, t in lengths])
    costs = -(-np.maximum(src, tgt) // pad_to) * pad_to
    kept = optimal_cut.SCALAR_WORK, optimal_cut.SCALAR_WINDOWS
    optimal_cut.SCALAR_WORK = optimal_cut.SCALAR_WINDOWS = scalar_work
    try:
        fast = pack_lowpad(costs, src, None if one_side else tgt, max_tokens, max_sentences, multiple, penalty)
    finally:
        optimal_cut.SCALAR_WORK, optimal_cut.SCALAR_WINDOWS = kept
    check_rules(costs, fast, max_tokens, max_sentences, multiple)
    if penalty == 0:
        assert fast.tolist() == pack_reference(costs, max_tokens, max_sentences, multiple).tolist()
        return
    price = max(1, round(penalty * max_tokens))
    lists = src.tolist(), tgt.tolist(), costs.tolist()
    assert lowpad_value(*lists[:2], fast.tolist(), price) == lowpad_reference(
        *lists, max_tokens, max_sentences, multiple, price)


def test_long_units_reach_the_optimum():
    """Cells of thousands of samples (the periodic part of a unit, and lines reaching into it) against
    the brute force over groups."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        cells = rng.integers(1, 30, size=(int(rng.integers(2, 8)), 2))
        counts = rng.integers(1, 400, size=len(cells))
        src, tgt = np.repeat(cells[:, 0], counts), np.repeat(cells[:, 1], counts)
        costs = np.maximum(src, tgt)
        max_tokens = int(rng.integers(8 * 30, 8 * 30 * 6))
        penalty = float(rng.choice([0.02, 0.2, 0.7]))
        fast = pack_lowpad(costs, src, tgt, max_tokens, None, 8, penalty)
        check_rules(costs, fast, max_tokens, None, 8)
        price = max(1, round(penalty * max_tokens))
        lists = src.tolist(), tgt.tolist(), costs.tolist()
        assert lowpad_value(*lists[:2], fast.tolist(), price) == lowpad_reference(*lists, max_tokens, None, 8, price)
