"""Block-wise plans: an epoch bigger than ``block_size`` is cut block by block, with the guarantees
of a whole-epoch plan (every kept item once, equal steps per rank, budget kept, exact resume)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tests.batching.corpus import pair_lengths
from tokenmill.batching.blocks import PIECES_PER_BLOCK, block_pieces
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Sizes
from tokenmill.batching.plan import Planner
from tokenmill.batching.select import EpochSample
from tokenmill.errors import ConfigError

N = 6000
BLOCKED = BatchConfig(max_tokens=600, required_batch_size_multiple=2, block_size=1000)


def corpus(n: int = N, seed: int = 3) -> Sizes:
    src, tgt = pair_lengths(n, seed)
    keep = np.random.default_rng(seed).random(n) > 0.1  # a length filter dropped about 10%
    return Sizes((src + 1).astype(np.int32), (tgt + 1).astype(np.int32), keep)


def served(plan) -> list[int]:
    return [i for t in range(plan.num_steps) for r in range(plan.world_size) for i in plan.indices(t, r).tolist()]


def cost(plan, sizes: Sizes, batch: np.ndarray) -> int:
    return len(batch) * max(int(sizes.src[batch].max()), int(sizes.tgt[batch].max()))


@pytest.mark.parametrize("world", [1, 2, 3, 8])
def test_every_kept_item_is_served_once_with_equal_steps_and_the_budget_kept(world):
    sizes = corpus()
    plan = Planner(sizes, BLOCKED, world_size=world, data_fingerprint="d", cache=False).plan(1)
    assert plan.stats.extra["blocks"] == 6 and len(plan.table) % world == 0
    assert sorted(served(plan)) == np.flatnonzero(sizes.keep).tolist()
    assert all(cost(plan, sizes, plan.batch(b)) <= BLOCKED.max_tokens for b in range(len(plan.table)))


def test_blocks_are_random_sets_of_pieces_new_every_epoch():
    piece, first = block_pieces(N, BLOCKED, epoch=1)
    _, second = block_pieces(N, BLOCKED, epoch=2)
    assert piece == -(-1000 // PIECES_PER_BLOCK)
    assert sorted(np.concatenate(first).tolist()) == list(range(-(-N // piece)))  # every piece in one block
    assert len(first) == 6 and max(len(b) for b in first) <= PIECES_PER_BLOCK
    assert [b.tolist() for b in first] != [b.tolist() for b in second]
    assert np.ptp(np.concatenate(first[:1])) > N // piece // 2  # a block spans the corpus, not a range of it


def test_an_epoch_within_one_block_is_the_whole_epoch_plan():
    sizes = corpus()
    whole = Planner(sizes, BLOCKED.replace(block_size=None), world_size=2, data_fingerprint="d", cache=False)
    one_block = Planner(sizes, BLOCKED.replace(block_size=N), world_size=2, data_fingerprint="d", cache=False)
    assert served(whole.plan(3)) == served(one_block.plan(3))


def test_cached_blocked_plan_is_written_block_by_block_and_mapped(tmp_path):
    sizes = corpus()
    built = Planner(sizes, BLOCKED, world_size=2, data_fingerprint="d", cache=tmp_path).plan(2)
    mapped = Planner(sizes, BLOCKED, world_size=2, data_fingerprint="d", cache=tmp_path).plan(2)
    in_memory = Planner(sizes, BLOCKED, world_size=2, data_fingerprint="d", cache=False).plan(2)
    assert not built.stats.cached and mapped.stats.cached
    assert isinstance(mapped.order.base, np.memmap)
    assert served(built) == served(mapped) == served(in_memory)
    assert not list(tmp_path.rglob("*.raw")) and not any(".tmp-" in p.name for p in tmp_path.iterdir())


@pytest.mark.parametrize("threads", [2, 4])
def test_blocks_cut_on_threads_make_the_same_plan_under_the_same_cache_entry(tmp_path, threads):
    sizes = corpus()
    one = Planner(sizes, BLOCKED, world_size=3, data_fingerprint="d", cache=False).plan(2)
    config = BLOCKED.replace(plan_threads=threads)
    many = Planner(sizes, config, world_size=3, data_fingerprint="d", cache=tmp_path).plan(2)
    assert served(many) == served(one)
    assert np.array_equal(np.asarray(many.table.starts), np.asarray(one.table.starts))
    # The thread count is not part of the plan's identity: one thread finds the entry many threads wrote.
    assert Planner(sizes, BLOCKED, world_size=3, data_fingerprint="d", cache=tmp_path).plan(2).stats.cached


def test_padding_stays_close_to_the_whole_epoch_with_big_enough_blocks():
    sizes = corpus(40_000)
    whole = Planner(sizes, BLOCKED.replace(block_size=None), data_fingerprint="d", cache=False).plan(1)
    blocked = Planner(sizes, BLOCKED.replace(block_size=10_000), data_fingerprint="d", cache=False).plan(1)
    assert blocked.stats.padding_fraction < whole.stats.padding_fraction + 0.03


@pytest.mark.parametrize(("before", "after"), [(3, 2), (2, 5), (1, 4)])
def test_elastic_resume_of_a_blocked_epoch_serves_the_rest_once(before, after):
    sizes = corpus()
    first = Planner(sizes, BLOCKED, world_size=before, data_fingerprint="d", cache=False)
    plan = first.plan(1)
    done = plan.num_steps // 3
    head = [i for t in range(done) for r in range(before) for i in plan.indices(t, r).tolist()]
    rest = first.for_world(after).plan_after(1, [(before, done)])
    assert len({len(rest.rank_batches(r)) for r in range(after)}) == 1
    assert Counter(head + served(rest)) == Counter(np.flatnonzero(sizes.keep).tolist())


def test_a_sampled_selection_is_blocked_over_its_draws():
    sizes = corpus()
    ids = np.random.default_rng(5).integers(0, N, 3000)  # draws with repeats, as a sampled mix makes
    src, tgt = sizes.src[ids], sizes.tgt[ids]

    class Drawn:
        varies_by_epoch = True

        def fingerprint(self) -> str:
            return "drawn"

        def sample(self, epoch: int) -> EpochSample:
            return EpochSample(ids, Sizes(src, tgt))

    plan = Planner(Drawn(), BLOCKED, world_size=2, cache=False).plan(1)
    assert Counter(served(plan)) == Counter(ids.tolist())


def test_block_size_is_checked():
    with pytest.raises(ConfigError, match="block_size"):
        BatchConfig(block_size=10)


def test_a_relative_cache_folder_works_and_too_small_blocks_are_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sizes = corpus()
    on_disk = Planner(sizes, BLOCKED, world_size=2, data_fingerprint="d", cache="relative-cache").plan(1)
    in_memory = Planner(sizes, BLOCKED, world_size=2, data_fingerprint="d", cache=False).plan(1)
    assert served(on_disk) == served(in_memory) and (tmp_path / "relative-cache").is_dir()
    with pytest.raises(ConfigError, match="raise block_size"):
        Planner(corpus(130), BatchConfig(max_tokens=600, block_size=64), world_size=64, data_fingerprint="d",
                cache=False).plan(1)
