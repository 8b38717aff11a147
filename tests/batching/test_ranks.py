"""Dealing batches to ranks: equal counts, balanced tokens, every sample once, no empty batches."""

from __future__ import annotations

import numpy as np
import pytest

from tests.batching.corpus import pair_lengths
from tokenmill.batching.config import MODES, BatchConfig
from tokenmill.batching.costs import Sizes
from tokenmill.batching.plan import Planner
from tokenmill.batching.ranks import equalize
from tokenmill.errors import ConfigError


def sizes_of(n: int, seed: int = 0) -> Sizes:
    src, tgt = pair_lengths(n, seed)
    return Sizes((src + 1).astype(np.int32), (tgt + 1).astype(np.int32))


def plan(n: int, world: int, mode: str, **config) -> tuple[Sizes, object]:
    sizes = sizes_of(n, seed=n)
    settings = {"max_tokens": 256, "required_batch_size_multiple": 4, **config}
    return sizes, Planner(sizes, BatchConfig(mode=mode, **settings), world_size=world, data_fingerprint=f"n{n}").plan(1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("world", range(1, 9))
@pytest.mark.parametrize("n", [8, 9, 13, 37, 61, 1003])
def test_every_rank_same_count_every_sample_once_no_empty_batch(mode, world, n):
    if n < world:
        pytest.skip("covered by test_fewer_samples_than_ranks_is_an_error")
    sizes, p = plan(n, world, mode)
    assert p.schedule.shape == (p.num_steps, world)
    assert p.stats.num_batches_per_rank == [p.num_steps] * world
    assert p.num_steps >= 1
    seen = np.concatenate([p.indices(t, r) for t in range(p.num_steps) for r in range(world)])
    assert np.array_equal(np.sort(seen), np.arange(n))  # each sample exactly once
    rows = [len(p.indices(t, r)) for t in range(p.num_steps) for r in range(world)]
    assert min(rows) >= 1
    if p.stats.merges == 0:  # merging (tiny corpora only) is the one case that may exceed the budget
        for t in range(p.num_steps):
            for r in range(world):
                batch = p.indices(t, r)
                assert len(batch) * max(sizes.src[batch].max(), sizes.tgt[batch].max()) <= 256


def test_tiny_corpus_fewer_samples_than_a_batch_per_rank():
    # 5 short pairs fit one batch; 4 ranks need 4 non-empty batches: the batch is split, nothing is dropped
    sizes = Sizes(np.full(5, 3, dtype=np.int32), np.full(5, 3, dtype=np.int32))
    p = Planner(sizes, BatchConfig(max_tokens=4096), world_size=4, data_fingerprint="tiny").plan(1)
    assert p.num_steps == 1
    assert sorted(len(p.indices(0, r)) for r in range(4)) == [1, 1, 1, 2]
    assert p.stats.splits == 3 and p.stats.num_dropped == 0


def test_long_samples_one_per_batch_are_merged_when_splitting_cannot_help():
    # 9 samples that each fill the budget alone: 9 batches, 8 ranks, 16 batches impossible -> merge to 8
    sizes = Sizes(np.full(9, 100, dtype=np.int32), np.full(9, 100, dtype=np.int32))
    p = Planner(sizes, BatchConfig(max_tokens=100), world_size=8, data_fingerprint="long").plan(1)
    assert p.num_steps == 1 and p.stats.merges == 1
    assert sorted(len(p.indices(0, r)) for r in range(8)) == [1] * 7 + [2]


def test_fewer_samples_than_ranks_is_an_error():
    sizes = Sizes(np.full(3, 5, dtype=np.int32), np.full(3, 5, dtype=np.int32))
    with pytest.raises(ConfigError, match="only 3 samples for world_size=4"):
        Planner(sizes, BatchConfig(), world_size=4, data_fingerprint="x").plan(1)


def test_drop_last_drops_the_smallest_remainder_batches_and_reports_them():
    _, p = plan(1003, 8, "lowpad", drop_last=True)
    kept = p.stats.num_samples
    assert p.stats.dropped.get("drop_last_for_ranks", 0) == 1003 - kept
    assert p.stats.splits == 0
    assert len({p.num_steps}) == 1 and p.schedule.shape[1] == 8


def test_ranks_run_batches_of_similar_cost_side_by_side():
    _, p = plan(20000, 8, "lowpad", max_tokens=1024)
    cost = p.table.rows * (p.table.max_src + p.table.max_tgt)
    per_step = cost[p.schedule]
    spread = (per_step.max(axis=1) - per_step.min(axis=1)) / per_step.mean(axis=1)
    # dealing consecutive batches round-robin, as fairseq does, puts arbitrary batches side by side
    naive = cost[: (len(cost) // 8) * 8].reshape(-1, 8)
    naive_spread = (naive.max(axis=1) - naive.min(axis=1)) / naive.mean(axis=1)
    assert np.median(spread) < 0.5 * np.median(naive_spread)
    totals = np.array(p.stats.tokens_per_rank)
    assert totals.max() / totals.min() < 1.05


def test_equalize_splits_at_a_multiple_of_the_row_multiple():
    starts, stops = np.array([0, 32]), np.array([32, 40])
    out = equalize(starts, stops, 3, num_samples=40, drop_last=False, multiple=8, merge_costs=lambda a, b: a)
    assert list(zip(out.starts.tolist(), out.stops.tolist(), strict=True)) == [(0, 16), (16, 32), (32, 40)]
