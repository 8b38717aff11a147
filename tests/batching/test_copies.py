"""Copies of an upsampled pair spread over batches (``tokenmill.batching.copies``), in every cut mode.

The mix of ``tests/data/multi_corpus.py`` at T = 5 draws the 12-pair direction many times over; the
old cuts put the copies of one pair side by side. Checked here: the batches hold exactly the drawn
items, every budget holds, no batch holds two copies of a pair unless the pair has more copies than
there are batches of its length class (row cost and longer side), and an epoch without copies is cut
as before.
"""

from __future__ import annotations

import numpy as np
import pytest

from tokenmill.batching.config import BatchConfig
from tokenmill.batching.copies import deal, has_copies, length_classes, repeats_per_batch
from tokenmill.batching.costs import Sizes, row_costs
from tokenmill.batching.plan import compute_sampled_batches
from tokenmill.batching.sampled import SampledMix, SampledPlanner
from tokenmill.batching.select import EpochSample
from tokenmill.data.sampling import SamplingConfig

SAMPLING = SamplingConfig(temperature=5.0, seed=3)
MODES = [
    BatchConfig(mode="lowpad", max_tokens=300),
    BatchConfig(mode="fairseq", max_tokens=300),
    BatchConfig(mode="opennmt", max_tokens=300),
    BatchConfig(mode="lowpad", max_tokens=300, required_batch_size_multiple=4, pad_to_multiple=8),
]


def batches_of(sample: EpochSample, config: BatchConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    arrays, _ = compute_sampled_batches(sample, config, 1, 1)
    return arrays["order"], arrays["stops"], arrays["max_src"], arrays["max_tgt"]


def separable(copies: list[int], slots: list[int]) -> bool:
    """Whether pairs with these copy counts fit batches with these free slots, no two copies in one batch
    (a 0/1 matrix with row sums ``copies`` and column sums at most ``slots``: for every t, the copies
    beyond t per pair must fit the slots of all batches but the t fullest)."""
    smallest_first = sorted(slots)
    return all(
        sum(max(0, c - t) for c in copies) <= sum(smallest_first[: len(slots) - t]) for t in range(len(slots) + 1)
    )


def violations(order: np.ndarray, stops: np.ndarray, cost_of: dict[int, int]) -> tuple[int, int]:
    """(batches holding two copies of a pair with no more copies than batches of its row cost, how many of
    them the batches of that cost could have avoided at all)."""
    batch = np.repeat(np.arange(len(stops)), np.diff(np.concatenate([[0], stops])))
    costs = np.array([cost_of[int(i)] for i in order])
    copies = dict(zip(*np.unique(order, return_counts=True), strict=True))
    bad = avoidable = 0
    for cost in sorted(set(costs.tolist())):
        where = costs == cost
        batches, slots = np.unique(batch[where], return_counts=True)
        ids = np.unique(order[where])
        must = [copies[i] for i in ids if copies[i] <= len(batches)]  # these must be in separate batches
        pairs, counts = np.unique(np.stack([batch[where], order[where]]), axis=1, return_counts=True)
        shared = int(sum(1 for (_, i), k in zip(pairs.T, counts, strict=True) if k > 1 and copies[i] <= len(batches)))
        bad += shared
        avoidable += shared if separable(must, slots.tolist()) else 0
    return bad, avoidable


@pytest.mark.parametrize("config", MODES, ids=lambda c: f"{c.mode}-{c.pad_to_multiple}")
def test_copies_of_one_pair_go_to_different_batches(multi_dataset, config):
    sample = SampledMix(multi_dataset, SAMPLING).sample(1)
    assert sample.sizes.copies is not None and has_copies(sample.ids)  # the small direction is upsampled
    together = EpochSample(sample.ids, Sizes(sample.sizes.src, sample.sizes.tgt), sample.dropped)
    src, tgt = np.asarray(sample.sizes.src), np.asarray(sample.sizes.tgt)
    cost = row_costs(src, tgt, config.pad_to_multiple)
    if config.mode == "opennmt":  # OpenNMT-tf's length buckets (width 1: the row cost) and the longer side
        cost = np.maximum(cost - 1, 0)
    cost_of = dict(zip(sample.ids.tolist(), length_classes(cost, src, tgt).tolist(), strict=False))
    before = batches_of(together, config)
    order, stops, max_src, max_tgt = batches_of(sample, config)
    assert sorted(order.tolist()) == sorted(sample.ids.tolist())  # every drawn item, nothing more
    rows = np.diff(np.concatenate([[0], stops]))
    width = np.maximum(max_src, max_tgt)
    width = -(-width // config.pad_to_multiple) * config.pad_to_multiple
    assert np.all(rows * width <= config.max_tokens)  # the budget holds
    repeats_before = int(repeats_per_batch(before[0], before[1]).sum())
    repeats_after = int(repeats_per_batch(order, stops).sum())
    if config.mode != "opennmt":  # OpenNMT-tf's random stream rarely met copies here (bench_copies.py: it does)
        assert repeats_after < repeats_before
        assert violations(before[0], before[1], cost_of)[1] > 0  # the old cut had copies side by side...
    assert repeats_after <= repeats_before
    assert violations(order, stops, cost_of)[1] == 0  # ...the new one only where its batches leave no choice


def test_planner_batches_spread_copies_and_stay_deterministic(multi_dataset):
    plans = [SampledPlanner(multi_dataset, MODES[0], SAMPLING, world_size=2, cache=False).plan(2) for _ in range(2)]
    assert np.array_equal(plans[0].order, plans[1].order)
    assert plans[0].schedule.tolist() == plans[1].schedule.tolist()


def test_an_epoch_without_copies_is_cut_as_before(multi_dataset):
    sample = SampledMix(multi_dataset, None).sample(1)  # every kept pair once
    assert sample.sizes.copies is None
    for config in MODES:
        plain = EpochSample(sample.ids, Sizes(sample.sizes.src, sample.sizes.tgt), sample.dropped)
        assert np.array_equal(batches_of(sample, config)[0], batches_of(plain, config)[0])


def test_deal_keeps_each_class_in_its_slots_and_separates_copies():
    samples = np.array([7, 7, 7, 1, 1, 2, 3, 4, 5, 8, 9, 9])
    classes = np.array([5, 5, 5, 5, 5, 5, 5, 5, 5, 9, 9, 9])  # cost 5 in batches 0-2, cost 9 in batch 3 only
    ends = np.array([3, 6, 9, 12])
    perm = deal(samples, ends, classes)
    assert sorted(perm.tolist()) == list(range(12))
    assert np.array_equal(classes[perm], classes)  # every position keeps its class
    assert repeats_per_batch(samples, ends).tolist() == [2, 1, 0, 1]
    assert repeats_per_batch(samples[perm], ends).tolist() == [0, 0, 0, 1]  # 9 has 2 copies, its cost 1 batch


def test_packed_rows_spread_copies_and_keep_every_row_length(multi_dataset):
    from tokenmill.batching.packed_pairs import PackConfig, compute_packed

    sample = SampledMix(multi_dataset, SAMPLING).sample(1)
    together = EpochSample(sample.ids, Sizes(sample.sizes.src, sample.sizes.tgt), sample.dropped)
    config = PackConfig(max_length=64, rows_per_batch=3)
    before, _ = compute_packed(together, config, 1, 2)
    after, _ = compute_packed(sample, config, 1, 2)
    assert sorted(after["order"].tolist()) == sorted(sample.ids.tolist())
    for name in ("row_ends", "row_src", "row_tgt", "starts", "stops"):
        assert np.array_equal(before[name], after[name])  # rows and batches keep their shape
    src_of = dict(zip(sample.ids.tolist(), np.asarray(sample.sizes.src).tolist(), strict=False))
    tgt_of = dict(zip(sample.ids.tolist(), np.asarray(sample.sizes.tgt).tolist(), strict=False))
    row_starts = np.concatenate([[0], after["row_ends"][:-1]])
    for arrays in (before, after):  # every row holds the same tokens per side as before
        src = np.add.reduceat([src_of[i] for i in arrays["order"].tolist()], row_starts)
        assert np.array_equal(src, before["row_src"])
    pair_stops = np.concatenate([[0], after["row_ends"]])[after["stops"]]
    cell_of = {i: src_of[i] * 1000 + tgt_of[i] for i in src_of}
    repeats_before = int(repeats_per_batch(before["order"], pair_stops).sum())
    assert int(repeats_per_batch(after["order"], pair_stops).sum()) < repeats_before
    assert violations(before["order"], pair_stops, cell_of)[1] > 0
    assert violations(after["order"], pair_stops, cell_of)[1] == 0
