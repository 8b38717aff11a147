"""Epoch plans over a sampled mix of translation directions (``SampledPlanner``, whose selection is
``SampledMix``): each direction's shard by epoch, temperature sampling proportions, the length
filter, virtual epochs, equal steps on every rank, batches cut by length across the mix, and plans
and fingerprints that are pure functions of seeds, epoch and data.

The ``multi_data_bin`` is the Open-NLLB-style one of ``tests/data/multi_corpus.py`` (a big direction in
three shards, a middle one in two, a small one in one).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tests.data.multi_corpus import SHARDS
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.sampled import SampledPlanner
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import PairOptions
from tokenmill.data.sampling import SamplingConfig, temperature_probabilities
from tokenmill.loader import multilingual_batches

BATCHES = BatchConfig(max_tokens=200, required_batch_size_multiple=2)
SAMPLING = SamplingConfig(temperature=5.0, seed=3)  # upsamples the 12-pair direction


def all_ids(plan, world_size: int) -> np.ndarray:
    return np.concatenate([plan.indices(t, r) for t in range(plan.num_steps) for r in range(world_size)])


def test_epoch_e_reads_shard_e_minus_1_mod_k_per_direction(multi_dataset):
    planner = SampledPlanner(multi_dataset, BATCHES, None)
    for epoch in range(1, 8):
        ids = planner.epoch_ids(epoch)
        part, _ = multi_dataset.locate(ids)
        for d, name in enumerate(multi_dataset.directions):
            expected = multi_dataset.part_index(name, (epoch - 1) % len(SHARDS[name]))
            assert set(part[multi_dataset.part_direction[part] == d].tolist()) == {expected}
        assert len(ids) == sum(SHARDS[name][(epoch - 1) % len(SHARDS[name])] for name in multi_dataset.directions)
        assert len(set(ids.tolist())) == len(ids)  # without sampling: every pair of the shards once


def test_sampled_counts_per_direction_follow_the_plan_and_the_formula(multi_dataset):
    planner = SampledPlanner(multi_dataset, BATCHES, SAMPLING, world_size=3)
    for epoch in (1, 2, 3, 4):
        mix = planner.mix(epoch)
        ids = all_ids(planner.plan(epoch), 3)
        counts = np.bincount(multi_dataset.direction_of(ids), minlength=len(multi_dataset.directions))
        assert counts.tolist() == mix.plan.counts(epoch).tolist()
        assert sorted(ids.tolist()) == sorted(planner.epoch_ids(epoch).tolist())  # batched = drawn, nothing lost
        assert set(multi_dataset.locate(ids)[0].tolist()) <= set(mix.parts.tolist())  # only this epoch's shards
        expected = temperature_probabilities(mix.kept, 5.0) * mix.plan.virtual_size  # p_i ~ n_i^(1/T)
        assert np.all(np.abs(counts - expected) <= 1)
    small = multi_dataset.directions.index("fra_Latn-eng_Latn")
    assert counts[small] > SHARDS["fra_Latn-eng_Latn"][0]  # upsampled past its size


def test_only_pairs_that_pass_the_length_filter_are_drawn(multi_data_bin):
    options = PairOptions(max_source_positions=12, max_target_positions=12)
    ds = MultiPairDataset.from_dir(multi_data_bin, options=options)
    planner = SampledPlanner(ds, BATCHES, SAMPLING)
    ids = planner.epoch_ids(2)
    assert len(ids) == planner.mix(2).plan.virtual_size
    assert int(ds.src_sizes[ids].max()) <= 12 and int(ds.tgt_sizes[ids].max()) <= 12
    assert planner.mix(2).kept.sum() < sum(len(ds.parts[p]) for p in planner.mix(2).parts)
    assert planner.plan(2).stats.dropped  # the filter is reported


@pytest.mark.parametrize("world_size", range(1, 9))
def test_every_rank_runs_the_same_number_of_steps(multi_dataset, world_size):
    planner = SampledPlanner(multi_dataset, BATCHES, SAMPLING, world_size=world_size)
    for epoch in (1, 2):
        plan = planner.plan(epoch)
        assert plan.schedule.shape == (plan.num_steps, world_size)
        assert all(len(plan.indices(t, r)) > 0 for t in range(plan.num_steps) for r in range(world_size))
        assert Counter(all_ids(plan, world_size).tolist()) == Counter(planner.epoch_ids(epoch).tolist())
        iterators = [
            multilingual_batches(multi_dataset, BATCHES, SAMPLING, rank=r, world_size=world_size, cache=False)
            for r in range(world_size)
        ]
        assert {it.num_steps(epoch) for it in iterators} == {plan.num_steps}


def test_batches_mix_directions_by_length(multi_dataset):
    plan = SampledPlanner(multi_dataset, BATCHES, SAMPLING).plan(1)
    mixed = [b for b in plan.rank_batches(0) if len(set(multi_dataset.direction_of(b).tolist())) > 1]
    assert len(mixed) > len(plan.rank_batches(0)) // 2  # batches are cut by length across the mix


def test_the_plan_is_a_pure_function_of_seeds_epoch_and_data(multi_dataset, multi_data_bin, tmp_path):
    first = SampledPlanner(multi_dataset, BATCHES, SAMPLING, world_size=2).plan(3)
    again = SampledPlanner(MultiPairDataset.from_dir(multi_data_bin), BATCHES, SAMPLING, world_size=2).plan(3)
    assert np.array_equal(first.order, again.order) and np.array_equal(first.schedule, again.schedule)
    other = SampledPlanner(multi_dataset, BATCHES, SamplingConfig(temperature=5.0, seed=4), world_size=2)
    assert other.fingerprint != SampledPlanner(multi_dataset, BATCHES, SAMPLING, world_size=2).fingerprint
    assert not np.array_equal(np.sort(other.epoch_ids(3)), np.sort(first.order))


def test_virtual_epoch_slices_move_to_the_next_shard_after_a_whole_pass(multi_dataset):
    sliced = SampledPlanner(multi_dataset, BATCHES, SamplingConfig(temperature=5.0, seed=3, virtual_epoch_size=100))
    slices = sliced.mix(1).plan.num_slices
    assert slices > 1
    assert [sliced.position(e) for e in range(1, slices + 2)] == [(1, j) for j in range(slices)] + [(2, 0)]
    pass_ids = np.concatenate([sliced.epoch_ids(e) for e in range(1, slices + 1)])
    assert sorted(pass_ids.tolist()) == sorted(SampledPlanner(multi_dataset, BATCHES, SAMPLING).epoch_ids(1).tolist())
    tur = multi_dataset.directions.index("eng_Latn-tur_Latn")
    assert int(multi_dataset.part_shard[sliced.mix(slices).parts[tur]]) == 0
    assert int(multi_dataset.part_shard[sliced.mix(slices + 1).parts[tur]]) == 1
    for epoch in range(1, 80):  # slices per pass vary with the pass's shard sizes; positions stay consecutive
        (data_pass, j), following = sliced.position(epoch), sliced.position(epoch + 1)
        last = j + 1 == sliced.mix(epoch).plan.num_slices
        assert following == ((data_pass + 1, 0) if last else (data_pass, j + 1))


def test_epoch_table_names_shards_and_sampling(multi_dataset):
    planner = SampledPlanner(multi_dataset, BATCHES, SAMPLING)
    text = planner.describe_epoch(2)
    assert "shard001 (2/3)" in text and "shard001 (2/2)" in text and "shard000 (1/1)" in text
    assert "temperature 5" in text and "epochs over data" in text
    report = planner.report(2)
    assert [row["drawn"] for row in report["directions"]] == planner.counts(2).tolist()
