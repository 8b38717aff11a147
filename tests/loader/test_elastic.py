"""Elastic resume: a state saved at world size W loads at W' != W. The rest of the epoch is served
exactly once across the W' ranks, every rank runs the same number of steps, the next epochs follow
the W' plan, and the state stays a few integers."""

from __future__ import annotations

import itertools
import json
from collections import Counter

import numpy as np
import pytest

from tests.batching.corpus import make_pair_dir
from tokenmill.batching.config import BatchConfig
from tokenmill.data.pairs import PairDataset
from tokenmill.errors import TokenmillError
from tokenmill.loader import BatchIterator

CONFIG = BatchConfig(max_tokens=160, required_batch_size_multiple=1, seed=3)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """An uneven corpus: 101 pairs of varied lengths (no world size divides the batches evenly)."""
    return PairDataset.from_dir(make_pair_dir(tmp_path_factory.mktemp("elastic") / "data", 101, seed=5))


def ranks(dataset, world, **kwargs):
    return [BatchIterator(dataset, CONFIG, rank=r, world_size=world, collate=None, cache=False, **kwargs)
            for r in range(world)]


def served(iterators, steps=None):
    """Sample ids every rank yields (all of the current epoch, or ``steps`` steps each), and steps per rank."""
    ids, counts = [], []
    for it in iterators:
        batches = list(it) if steps is None else list(itertools.islice(it, steps))
        counts.append(len(batches))
        ids += [int(i) for batch in batches for i in np.asarray(batch)]
    return ids, counts


def epoch_samples(dataset, world):
    return sorted(served(ranks(dataset, world))[0])


@pytest.mark.parametrize("old", range(1, 9))
def test_every_step_and_every_new_world_size_serves_the_rest_once(dataset, old):
    whole = epoch_samples(dataset, old)
    steps = ranks(dataset, old)[0].num_steps(1)
    for new in range(1, 9):
        for step in range(steps):
            before_its = ranks(dataset, old)
            before, _ = served(before_its, step)
            state = before_its[0].state_dict()
            assert json.loads(json.dumps(state)) == state and len(json.dumps(state)) < 2048
            after_its = ranks(dataset, new)
            for it in after_its:
                it.load_state_dict(state)
            segments = [(old, step)] if step and old != new else []
            rest = after_its[0].planner.plan_after(1, segments)
            left_out = rest.stats.dropped.get("left_fewer_than_ranks", 0)
            if rest.num_steps == 0:  # nothing (or fewer samples than ranks) left: the next epoch is next
                assert all(it.epoch == 2 and it.step == 0 for it in after_its)
                after, counts = [], [0] * new
            else:
                after, counts = served(after_its)
            assert len(set(counts)) == 1, f"{old}->{new} at step {step}: ranks ran {counts} steps"
            total = Counter(before) + Counter(after)
            assert max(total.values()) == 1, f"{old}->{new} at step {step}: a sample served twice"
            assert len(total) + left_out == len(whole) and left_out < new, (old, new, step, left_out)


def test_after_the_resumed_epoch_the_new_world_size_plan_follows(dataset):
    old = ranks(dataset, 4)
    served(old, 1)
    state = old[0].state_dict()
    assert (state["epoch"], state["step"]) == (1, 1), "mid-epoch"
    new = ranks(dataset, 3, infinite=True)
    for it in new:
        it.load_state_dict(state)
    rest = new[0].num_steps(1)
    for it in new:
        list(itertools.islice(it, rest))
    fresh = ranks(dataset, 3)
    for it, reference in zip(new, fresh, strict=True):
        reference.set_epoch(2)
        expected = [np.asarray(b).tolist() for b in reference]
        got = [np.asarray(b).tolist() for b in itertools.islice(it, len(expected))]
        assert got == expected, "epoch 2 is the plain 3-rank plan"


def test_a_second_change_of_world_size_within_the_epoch(dataset):
    whole = epoch_samples(dataset, 8)
    first = ranks(dataset, 8)
    assert first[0].num_steps(1) > 1
    seen, _ = served(first, 1)
    middle = ranks(dataset, 2)
    for it in middle:
        it.load_state_dict(first[0].state_dict())
    assert middle[0].num_steps(1) > 2
    more, _ = served(middle, 2)
    state = middle[0].state_dict()
    assert state["segments"] == [[8, 1]] and state["step"] == 2 and state["world_size"] == 2
    last = ranks(dataset, 5)
    for it in last:
        it.load_state_dict(state)
    rest, counts = served(last)
    assert len(set(counts)) == 1
    total = Counter(seen) + Counter(more) + Counter(rest)
    assert max(total.values()) == 1 and sorted(total) == whole


def test_other_data_or_settings_are_still_refused(dataset):
    old = ranks(dataset, 2)
    served(old, 1)
    state = old[0].state_dict()
    other = BatchIterator(dataset, BatchConfig(max_tokens=200), rank=0, world_size=3, collate=None, cache=False)
    with pytest.raises(TokenmillError, match=r"max_tokens: 160 -> 200"):
        other.load_state_dict(state)


def test_settings_a_plan_does_not_depend_on_do_not_block_a_resume(dataset):
    old = ranks(dataset, 2)
    served(old, 1)
    state = old[0].state_dict()
    threads = BatchIterator(dataset, CONFIG.replace(plan_threads=3), rank=0, world_size=2, collate=None, cache=False)
    threads.load_state_dict(state)  # how many threads build the plan is not part of it
    assert (threads.epoch, threads.step) == (old[0].epoch, old[0].step)
    # batch_penalty shapes lowpad's cut only: a fairseq-mode state without it (saved before it existed) resumes.
    fairseq = BatchConfig(mode="fairseq", max_tokens=160, seed=3)
    saved = BatchIterator(dataset, fairseq, rank=0, world_size=2, collate=None, cache=False)
    next(iter(saved))
    state = json.loads(json.dumps(saved.state_dict()))
    state["config"].pop("batch_penalty", None)
    again = BatchIterator(dataset, fairseq.replace(batch_penalty=0.5), rank=0, world_size=2, collate=None, cache=False)
    again.load_state_dict(state)
    assert again.step == 1
    lowpad = BatchIterator(dataset, CONFIG.replace(batch_penalty=0.5), rank=0, world_size=2, collate=None, cache=False)
    with pytest.raises(TokenmillError, match=r"batch_penalty: 0.25 -> 0.5"):
        lowpad.load_state_dict(old[0].state_dict())
