"""Compute-balanced dealing of packed rows (``PackConfig.compute_balance``): the same rows and batches, dealt
so that every step's batches cost about the same compute (real tokens + a x the pairs' squared lengths:
attention inside each packed segment); equal steps on every rank; exact and elastic resume as before."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tests.batching.corpus import make_pair_dir
from tokenmill.batching.packed_pairs import PackConfig, PackedPairPlanner
from tokenmill.data.pairs import PairDataset
from tokenmill.loader import BatchIterator

A = 0.05


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return PairDataset.from_dir(make_pair_dir(tmp_path_factory.mktemp("packbalance") / "data", 1500, seed=4))


def config(balance):
    return PackConfig(max_length=96, rows_per_batch=3, max_tokens=None, compute_balance=balance, seed=2)


def compute_table(dataset, plan) -> np.ndarray:
    """(steps, ranks) compute of each rank's batch, from its pairs' lengths."""
    src, tgt = dataset.src_sizes.astype(np.int64), dataset.tgt_sizes.astype(np.int64)
    cost = np.zeros((plan.num_steps, plan.world_size))
    for step in range(plan.num_steps):
        for rank in range(plan.world_size):
            ids = plan.indices(step, rank).ids
            cost[step, rank] = (src[ids] + tgt[ids]).sum() + A * (src[ids] ** 2 + tgt[ids] ** 2).sum()
    return cost


@pytest.mark.parametrize("world", [2, 4])
def test_the_same_batches_dealt_by_compute(dataset, world):
    by_slots = PackedPairPlanner(dataset, config(None), world_size=world, cache=False).plan(1)
    by_compute = PackedPairPlanner(dataset, config(A), world_size=world, cache=False).plan(1)
    assert np.array_equal(by_slots.order, by_compute.order) and np.array_equal(by_slots.row_ends, by_compute.row_ends)
    assert by_slots.schedule.shape == by_compute.schedule.shape  # equal steps on every rank
    wait = {}
    for name, plan in (("slots", by_slots), ("compute", by_compute)):
        cost = compute_table(dataset, plan)
        wait[name] = cost.max(axis=1).sum() / cost.mean(axis=1).sum() - 1  # the slowest rank of each step
    assert wait["compute"] < wait["slots"] / 2, wait
    assert np.allclose(by_compute.stats.extra["compute_per_rank"], compute_table(dataset, by_compute).sum(axis=0))


def test_the_default_keeps_the_plan_identity(dataset):
    assert "compute_balance" not in config(None).to_dict()
    assert PackedPairPlanner(dataset, config(None), cache=False).fingerprint != PackedPairPlanner(
        dataset, config(A), cache=False).fingerprint


def ranks(dataset, world):
    planner = PackedPairPlanner(dataset, config(A), world_size=world, cache=False)
    return [BatchIterator(dataset, planner=planner, rank=r, world_size=world, collate=None) for r in range(world)]


def test_exact_and_elastic_resume_with_compute_balance(dataset):
    first = ranks(dataset, 4)
    streams = [iter(it) for it in first]
    served: Counter = Counter()
    for _ in range(4):
        for stream in streams:
            served.update(next(stream).ids.tolist())
    state = first[0].state_dict()
    again = ranks(dataset, 4)[2]
    again.load_state_dict(state)
    assert [b.ids.tolist() for b in again] == [first[2].indices_at(1, t).ids.tolist()
                                               for t in range(4, first[2].num_steps())]
    resumed = ranks(dataset, 3)
    for it in resumed:
        it.load_state_dict(state)
    assert len({it.num_steps() for it in resumed}) == 1
    for it in resumed:
        for batch in it:
            served.update(batch.ids.tolist())
    everything = Counter(PackedPairPlanner(dataset, config(A), cache=False).plan(1).order.tolist())
    left_out = sum((everything - served).values())
    assert served <= everything and left_out == resumed[0].plan(1).stats.dropped.get("left_fewer_than_ranks", 0)
