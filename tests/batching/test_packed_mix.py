"""Any selection with any cut: packed rows of a temperature-sampled mix of many directions.

The selection (:class:`SampledMix`: each direction's shard for the epoch, drawn by temperature) is
the one token-budget batches use; the cut packs the drawn items into rows of fixed width. Every
drawn item lands in exactly one row (an item drawn twice, twice), rows stay within their caps,
ranks run the same number of steps and a resumed run goes on with exactly the same batches.
"""

from __future__ import annotations

import itertools
import pickle
from collections import Counter

import numpy as np
import pytest

import tokenmill
from tokenmill.batching.packed_pairs import PackConfig, PackedBatch, PackedPairPlanner
from tokenmill.batching.plan import Planner
from tokenmill.batching.sampled import SampledMix, SampledPlanner
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.loader import BatchIterator

PACK = PackConfig(max_length=64, max_tokens=64 * 4)
SAMPLING = SamplingConfig(temperature=5.0, seed=3)  # upsamples the 12-pair direction past its size


def packed_items(plan) -> list[int]:
    """Every item id of every batch of every rank, in step order."""
    return [int(i) for rank in range(plan.world_size) for batch in plan.rank_batches(rank) for i in batch.ids]


def fits(multi_dataset: MultiPairDataset, batch: PackedBatch) -> bool:
    for row in batch.rows():
        if multi_dataset.src_sizes[row].sum() > PACK.src_length or multi_dataset.tgt_sizes[row].sum() > PACK.tgt_length:
            return False
    return True


@pytest.mark.parametrize("world", [1, 2, 3])
def test_every_drawn_item_is_packed_once_within_the_rows(multi_dataset, world):
    mix = SampledMix(multi_dataset, SAMPLING)
    for epoch in (1, 2, 3):  # shards rotate: shard000, shard001, shard002 of the big direction
        plan = PackedPairPlanner(multi_dataset, PACK, selection=mix, world_size=world, cache=False).plan(epoch)
        drawn = Counter(mix.epoch_ids(epoch).tolist())
        assert Counter(packed_items(plan)) == drawn  # an item drawn twice is packed twice
        assert plan.stats.num_samples == sum(drawn.values())
        assert len({len(plan.rank_batches(r)) for r in range(world)}) == 1
        assert all(fits(multi_dataset, plan.batch(b)) for b in range(len(plan.table)))


def test_the_packed_mix_has_the_sampled_proportions_of_the_token_budget_mix(multi_dataset):
    by_budget = SampledPlanner(multi_dataset, None, SAMPLING, cache=False).plan(1)
    packed = PackedPairPlanner(multi_dataset, PACK, selection=SampledMix(multi_dataset, SAMPLING), cache=False).plan(1)
    budget_items = np.concatenate([by_budget.batch(b) for b in range(len(by_budget.table))])
    assert Counter(packed_items(packed)) == Counter(budget_items.tolist())
    small = multi_dataset.direction_of(np.asarray(packed_items(packed)))
    assert np.bincount(small, minlength=3)[2] > 12  # the 12-pair direction, upsampled


def test_the_front_door_packs_a_sampled_mix_resumes_exactly_and_pickles(multi_data_bin, tmp_path):
    def run(**kwargs):
        return tokenmill.batches(multi_data_bin, sampling=SAMPLING, pack=PACK, rank=1, world_size=2, infinite=True,
                                 cache=tmp_path, **kwargs)

    straight = run()
    stream = iter(straight)
    first = [next(stream) for _ in range(5)]
    assert set(first[0]) >= {"inputs", "targets", "inputs_segmentation", "targets_position"}
    state = straight.state_dict()
    after = [next(stream) for _ in range(4)]
    resumed = run()
    resumed.load_state_dict(state)
    again = list(zip(range(4), resumed, strict=False))
    for (_, mine), theirs in zip(again, after, strict=True):
        assert all(np.array_equal(mine[k], theirs[k]) for k in theirs)
    copy = pickle.loads(pickle.dumps(straight))  # DataLoader workers: settings travel, plans are re-mapped
    assert isinstance(copy.planner.selection, SampledMix) and copy.planner.fingerprint == straight.planner.fingerprint


def test_packing_and_sampling_settings_are_checked(multi_data_bin, multi_dataset):
    other = PackedPairPlanner(multi_dataset, PACK, selection=SampledMix(multi_dataset, SamplingConfig(temperature=1.0)))
    same_pack = PackedPairPlanner(multi_dataset, PACK, selection=SampledMix(multi_dataset, SAMPLING))
    assert other.fingerprint != same_pack.fingerprint
    with pytest.raises(ConfigError, match="config= or pack="):
        tokenmill.batches(multi_data_bin, tokenmill.BatchConfig(), pack=PACK, cache=False)
    with pytest.raises(ConfigError, match="langtok applies when a path is opened"):
        tokenmill.batches(multi_dataset, langtok=tokenmill.LangTokConfig(), pack=PACK, cache=False)


@pytest.mark.parametrize("old", [1, 2, 3, 4])
def test_packed_rows_of_the_mix_resume_elastically_at_every_step(multi_dataset, old):
    """A packed plan is an epoch planner like any other: a state saved at W loads at W' and the rest of
    the epoch's drawn items is packed again for W' ranks, each served once, equal steps everywhere."""
    mix = SampledMix(multi_dataset, SAMPLING)
    drawn = Counter(mix.epoch_ids(1).tolist())

    def iterators(world):
        planner = PackedPairPlanner(multi_dataset, PACK, selection=mix, world_size=world, cache=False)
        return [tokenmill.batches(multi_dataset, pack=PACK, sampling=SAMPLING, rank=r, world_size=world, cache=False,
                                  collate=None) for r in range(world)], planner

    before_its, planner = iterators(old)
    steps = planner.plan(1).num_steps
    for step in [*range(0, steps, max(1, steps // 4)), steps - 1]:  # the last step leaves fewer rows than ranks
        before_its, _ = iterators(old)
        head = [int(i) for it in before_its for batch in itertools.islice(it, step) for i in batch.ids]
        state = before_its[0].state_dict()
        for new in (1, 2, 3, 5):
            after_its, _ = iterators(new)
            for it in after_its:
                it.load_state_dict(state)
            planned = after_its[0].planner.plan_after(1, [(old, step)]) if step and old != new else None
            left_out = planned.stats.dropped.get("left_fewer_than_ranks", 0) if planned is not None else 0
            if planned is not None and planned.num_steps == 0:  # fewer rows left than ranks: epoch 2 is next
                assert all((it.epoch, it.step) == (2, 0) for it in after_its) and left_out
                runs: list[list] = [[] for _ in after_its]
            else:
                runs = [list(it) for it in after_its]
            assert len({len(run) for run in runs}) == 1, f"{old}->{new} at {step}: unequal steps"
            rest = [int(i) for run in runs for batch in run for i in batch.ids]
            assert sum((Counter(head) + Counter(rest)).values()) + left_out == sum(drawn.values())
            assert Counter(head) + Counter(rest) <= drawn  # nothing served twice


def test_a_user_planner_travels_to_workers_and_a_changed_setting_is_named(multi_dataset, tmp_path):
    planner = Planner(
        SampledMix(multi_dataset, SAMPLING), tokenmill.BatchConfig(max_tokens=300), world_size=2, cache=False
    )
    batches = BatchIterator(multi_dataset, planner=planner, rank=1, world_size=2, collate=None, cache=False)
    copy = pickle.loads(pickle.dumps(batches))  # what a DataLoader worker gets
    assert copy.planner.fingerprint == planner.fingerprint
    assert [b.tolist() for b in copy] == [b.tolist() for b in batches]
    assert planner.plan_after(1, [(1, 3)]) is planner.plan_after(1, [(1, 3)])  # asked for on every batch
    state = tokenmill.batches(multi_dataset, sampling=SAMPLING, pack=PACK, cache=tmp_path).state_dict()
    wider = PackConfig(max_length=64, max_tokens=64 * 8)
    with pytest.raises(TokenmillError, match="max_tokens: 256 -> 512"):
        tokenmill.batches(multi_dataset, sampling=SAMPLING, pack=wider, cache=tmp_path).load_state_dict(state)
    with pytest.raises(TokenmillError, match=r"selection\.sampling\.temperature: 5\.0 -> 1\.0"):
        tokenmill.batches(multi_dataset, sampling=SamplingConfig(temperature=1.0, seed=3), pack=PACK,
                          cache=tmp_path).load_state_dict(state)
