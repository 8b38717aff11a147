"""Mix weights as a function of the step (``SamplingConfig(weights_schedule=[...])``): a piecewise-linear
schedule planned as a chain of mix segments. A direction with weight 0 at the start is switched on as the
weights move, another is switched off; nothing is served more often than the largest draw of the mixes
in force asks; every rank runs the same steps; a state (position and the epoch's first step) resumes
exactly from every step of two epochs, and elastically at another world size."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pytest
import yaml

import tokenmill
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.sampled import SampledMix
from tokenmill.data.mix_schedule import WeightsSchedule
from tokenmill.data.sampling import SamplingConfig, SamplingPlan
from tokenmill.errors import ConfigError
from tokenmill.loader.multilingual import multilingual_batches

TUR, HIN, FRA = "eng_Latn-tur_Latn", "eng_Latn-hin_Deva", "fra_Latn-eng_Latn"
BATCHES = BatchConfig(max_tokens=240, required_batch_size_multiple=2, seed=2)
SCHEDULE = yaml.safe_load(f"""
weights_schedule:
  - {{step: 0, weights: {{{TUR}: 1, {HIN}: 0, {FRA}: 2}}}}
  - {{step: 8, weights: {{{TUR}: 1, {HIN}: 2, {FRA}: 0}}}}
schedule_every: 4
seed: 5
""")
SAMPLING = SamplingConfig.from_dict(SCHEDULE)


def iterators(dataset, world, sampling=SAMPLING):
    return [multilingual_batches(dataset, BATCHES, sampling, rank=r, world_size=world, collate=None, cache=False,
                                 infinite=True) for r in range(world)]


def take(its, steps) -> list[list[list[int]]]:
    """``steps`` steps of every rank: per step, each rank's ids."""
    streams = [iter(it) for it in its]
    return [[np.asarray(next(s)).tolist() for s in streams] for _ in range(steps)]


def direction(dataset, ids) -> set[str]:
    return {dataset.directions[d] for d in dataset.direction_of(np.asarray(ids, dtype=np.int64)).tolist()}


def test_the_schedule_is_linear_between_points_and_checked():
    schedule = SAMPLING.schedule
    assert schedule.weights_at(0) == {TUR: 1.0, HIN: 0.0, FRA: 2.0}
    assert schedule.weights_at(5) == {TUR: 1.0, HIN: 1.0, FRA: 1.0}  # in force from step 4: half way
    assert schedule.weights_at(100) == {TUR: 1.0, HIN: 2.0, FRA: 0.0}
    assert (schedule.next_change(0), schedule.next_change(4), schedule.next_change(8)) == (4, 8, None)
    assert SamplingConfig.from_dict(SAMPLING.to_dict()).to_dict() == SAMPLING.to_dict()
    with pytest.raises(ConfigError, match="start at 0 and increase"):
        WeightsSchedule.parse([{"step": 5, "weights": {TUR: 1}}], 1)
    with pytest.raises(ConfigError, match="same directions"):
        WeightsSchedule.parse([{"step": 0, "weights": {TUR: 1}}, {"step": 3, "weights": {HIN: 1}}], 1)
    with pytest.raises(ConfigError, match="schedule_every"):
        WeightsSchedule.parse([{"step": 0, "weights": {TUR: 1}}], 0)
    with pytest.raises(ConfigError, match="weights schedule"):  # one fixed mix cannot stand for a schedule
        SamplingPlan.build([TUR], [10], SAMPLING)


def test_directions_switch_on_and_off_with_equal_steps_and_no_extra_copies(multi_dataset):
    its = iterators(multi_dataset, 2)
    plan = its[0].plan()
    assert len(plan.parts) >= 3  # steps 0-3, 4-7, 8-: three mixes
    assert {it.num_steps() for it in its} == {plan.num_steps}
    steps = take(its, plan.num_steps)
    first = [i for step in steps[:4] for batch in step for i in batch]
    last = [i for step in steps[8:] for batch in step for i in batch]
    assert HIN not in direction(multi_dataset, first) and FRA in direction(multi_dataset, first)
    assert FRA not in direction(multi_dataset, last) and HIN in direction(multi_dataset, last)
    served = Counter(i for step in steps for batch in step for i in batch)
    draws = [Counter(SampledMix(multi_dataset, SAMPLING.at_step(t)).sample(1).ids.tolist()) for t in (0, 4, 8)]
    assert all(n <= max(d[i] for d in draws) for i, n in served.items()), "a pair served more than any mix drew it"
    state = its[0].state_dict()  # epoch 2 begins where epoch 1's steps end
    assert (state["epoch"], state["step"], state["step_base"]) == (2, 0, plan.num_steps)


def test_resume_from_every_step_of_two_epochs_is_exact(multi_dataset):
    straight = iterators(multi_dataset, 2)
    total = straight[0].num_steps(1) + straight[0].num_steps(2)
    stream = take(straight, total)
    for step in range(total):
        before = iterators(multi_dataset, 2)
        take(before, step)
        state = before[0].state_dict()
        after = iterators(multi_dataset, 2)
        for it in after:
            it.load_state_dict(state)
        assert take(after, min(3, total - step)) == stream[step : step + 3], f"resumed at step {step}"


@pytest.mark.parametrize(("old", "new"), [(2, 3), (3, 1)])
def test_an_elastic_resume_walks_the_schedule_at_both_world_sizes(multi_dataset, old, new):
    whole = iterators(multi_dataset, old)[0].num_steps()
    for step in (1, 5, 9, whole - 1):
        before = iterators(multi_dataset, old)
        head = take(before, step)
        state = before[0].state_dict()
        after = iterators(multi_dataset, new)
        for it in after:
            it.load_state_dict(state)
        assert len({it.num_steps() - it.step for it in after}) == 1
        rest = take(after, after[0].num_steps() - after[0].step) if after[0].epoch == 1 else []
        served = Counter(i for part in (head, rest) for s in part for batch in s for i in batch)
        draws = [Counter(SampledMix(multi_dataset, SAMPLING.at_step(t)).sample(1).ids.tolist()) for t in (0, 4, 8)]
        assert all(n <= max(d[i] for d in draws) for i, n in served.items()), f"{old}->{new} at {step}"
        if rest:
            assert HIN in direction(multi_dataset, [i for s in rest for b in s for i in b]) or step < 8


def test_packed_rows_follow_the_schedule_resume_exactly_and_travel_to_workers(multi_dataset):
    pack = tokenmill.PackConfig(max_length=64, rows_per_batch=2)

    def ranks():
        return [tokenmill.batches(multi_dataset, pack=pack, sampling=SAMPLING, rank=r, world_size=2, collate=None,
                                  cache=False) for r in range(2)]

    straight = ranks()
    assert len(straight[0].plan().parts) >= 2
    stream = [[batch.ids.tolist() for batch in step] for step in zip(*straight, strict=True)]
    for step in (3, 9, len(stream) - 2):
        before = ranks()
        for it in before:
            it.seek(1, step)
        after = ranks()
        for it in after:
            it.load_state_dict(before[0].state_dict())
        assert [[b.ids.tolist() for b in s] for s in zip(*after, strict=True)] == stream[step:]
    copy = pickle.loads(pickle.dumps(ranks()[1]))  # what a DataLoader worker gets
    assert copy.planner.fingerprint == straight[1].planner.fingerprint
    assert [b.ids.tolist() for b in copy] == [s[1] for s in stream]


def served_counts(dataset, steps: list[list[list[int]]]) -> dict[str, tuple[int, int]]:
    """Per direction, (samples, tokens) of the ids served in ``steps`` (every rank)."""
    ids = np.asarray([i for step in steps for batch in step for i in batch], dtype=np.int64)
    out = dict.fromkeys(dataset.directions, (0, 0))
    names = [dataset.directions[d] for d in dataset.direction_of(ids).tolist()]
    tokens = (np.asarray(dataset.src_sizes[ids], dtype=np.int64) + np.asarray(dataset.tgt_sizes[ids], dtype=np.int64))
    for name, t in zip(names, tokens.tolist(), strict=True):
        out[name] = (out[name][0] + 1, out[name][1] + t)
    return out


def test_the_ledger_of_a_schedule_equals_what_was_served(multi_dataset):
    its = iterators(multi_dataset, 2)
    epoch1 = take(its, its[0].num_steps())
    begun = take(its, 3)  # three steps of epoch 2 at world size 2, then an elastic resume at world size 3
    moved = iterators(multi_dataset, 3)
    for it in moved:
        it.load_state_dict(its[0].state_dict())
    begun += take(moved, 2)
    state = moved[0].state_dict()
    assert state["ledger"]["epoch"] == 2  # epoch 1's totals travel with the state (its steps set epoch 2's mix)
    resumed = iterators(multi_dataset, 3)[0]
    resumed.load_state_dict(state)
    table = resumed.ledger()
    assert (table["epoch"], table["step"]) == (2, 2)
    now, total = served_counts(multi_dataset, begun), served_counts(multi_dataset, epoch1 + begun)
    assert any(n for n, _ in now.values()) and now != total
    for name, row in table["sources"].items():
        assert (row["epoch_samples"], row["epoch_tokens"]) == now[name]
        assert (row["total_samples"], row["total_tokens"]) == total[name]
