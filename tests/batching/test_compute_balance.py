"""Compute-balanced dealing (``BatchConfig.compute_balance``): ranks get equal compute, equal steps, and
exact and elastic resume work as with the default dealing by padded tokens."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tests.batching.corpus import make_pair_dir, pair_lengths
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Sizes
from tokenmill.batching.plan import Planner
from tokenmill.data.pairs import PairDataset
from tokenmill.loader import BatchIterator

A = 0.05  # cost = tokens + A x sum of squared lengths
SRC, TGT = pair_lengths(6000, seed=11, spread=0.9, top=200)
SIZES = Sizes(src=SRC.astype(np.int32), tgt=TGT.astype(np.int32))


def planner(world: int, balance: float | None, **kwargs) -> Planner:
    config = BatchConfig(max_tokens=1024, compute_balance=balance, **kwargs)
    return Planner(SIZES, config, world_size=world, data_fingerprint="balance-test", cache=False)


def compute_table(plan, world: int) -> np.ndarray:
    """(steps, ranks) compute of each rank's batch at each step, from the batches' pairs."""
    cost = np.zeros((plan.num_steps, world))
    for step in range(plan.num_steps):
        for rank in range(world):
            ids = plan.indices(step, rank)
            cost[step, rank] = (SRC[ids] + TGT[ids]).sum() + A * (SRC[ids] ** 2 + TGT[ids] ** 2).sum()
    return cost


def test_ranks_get_equal_compute_from_the_same_batches():
    for world in (2, 4, 8):
        by_tokens = planner(world, None).plan(1)
        by_compute = planner(world, A).plan(1)
        assert np.array_equal(by_tokens.order, by_compute.order)  # same batches, dealt otherwise
        assert np.array_equal(by_tokens.table.starts, by_compute.table.starts)
        assert by_compute.schedule.shape == by_tokens.schedule.shape  # equal steps on every rank
        spread, wait = {}, {}
        for name, plan in (("tokens", by_tokens), ("compute", by_compute)):
            cost = compute_table(plan, world)
            totals = cost.sum(axis=0)
            spread[name] = (totals.max() - totals.min()) / totals.mean()  # ranks' total compute
            wait[name] = cost.max(axis=1).sum() / cost.mean(axis=1).sum() - 1  # the slowest rank of each step
        assert spread["compute"] < spread["tokens"]
        assert wait["compute"] < wait["tokens"] / 4
        expected = compute_table(by_compute, world).sum(axis=0)
        assert np.allclose(by_compute.stats.extra["compute_per_rank"], expected)


def test_default_keeps_the_plan_identity():
    assert "compute_balance" not in BatchConfig().plan_identity()
    assert BatchConfig(compute_balance=0.5).plan_identity()["compute_balance"] == 0.5


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return PairDataset.from_dir(make_pair_dir(tmp_path_factory.mktemp("balance") / "data", 700, seed=9))


def ranks(dataset, world: int) -> list[BatchIterator]:
    config = BatchConfig(max_tokens=200, compute_balance=A)
    return [BatchIterator(dataset, config, rank=r, world_size=world, collate=None, cache=False) for r in range(world)]


def test_exact_and_elastic_resume_with_compute_balance(dataset):
    first = ranks(dataset, 4)
    streams = [iter(it) for it in first]
    served: Counter = Counter()
    for _ in range(5):
        for stream in streams:
            served.update(next(stream).tolist())
    state = first[0].state_dict()
    again = ranks(dataset, 4)[1]
    again.load_state_dict(state)
    assert [b.tolist() for b in again] == [first[1].indices_at(1, t).tolist() for t in range(5, first[1].num_steps())]
    resumed = ranks(dataset, 3)
    for it in resumed:
        it.load_state_dict(state)
    assert len({it.num_steps() for it in resumed}) == 1
    for it in resumed:
        for batch in it:
            served.update(batch.tolist())
    everything = ranks(dataset, 1)[0].plan(1).order.tolist()
    assert served == Counter(everything)  # every sample once over the change
