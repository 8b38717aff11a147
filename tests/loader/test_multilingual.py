"""Iterating a sampled mix of translation directions (``multilingual_batches``): exact resume from
every step, refusal of another sampling, resume at another world size serving the rest of the epoch
once, DataLoader workers giving the single-process stream, and the iterator surviving pickling.

The ``multi_data_bin`` is the Open-NLLB-style one of ``tests/data/multi_corpus.py``.
"""

from __future__ import annotations

import itertools
import pickle
from collections import Counter

import numpy as np
import pytest

from tokenmill.batching.config import BatchConfig
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import TokenmillError
from tokenmill.loader import multilingual_batches

BATCHES = BatchConfig(max_tokens=200, required_batch_size_multiple=2)
SAMPLING = SamplingConfig(temperature=5.0, seed=3)  # upsamples the 12-pair direction


def stream(iterator, count: int) -> list[list[int]]:
    return [batch["id"].tolist() for batch in itertools.islice(iterator, count)]


def test_resume_from_every_step_gives_the_same_stream(multi_dataset, tmp_path):
    def make():
        return multilingual_batches(
            multi_dataset, BATCHES, SAMPLING, rank=1, world_size=2, infinite=True, cache=tmp_path
        )

    total = make().num_steps(1) + make().num_steps(2) + 2  # into epoch 3
    running = make()
    reference, states = [], [running.state_dict()]
    for batch in itertools.islice(running, total):
        reference.append(batch["id"].tolist())
        assert np.array_equal(batch["direction"], multi_dataset.direction_of(batch["id"]))
        states.append(running.state_dict())
    for k in range(total):
        resumed = make()
        resumed.load_state_dict(states[k])
        assert stream(resumed, total - k) == reference[k:], f"resume after {k} batches"


def test_resume_refuses_other_sampling(multi_dataset, tmp_path):
    state = multilingual_batches(multi_dataset, BATCHES, SAMPLING, cache=tmp_path).state_dict()
    other = multilingual_batches(multi_dataset, BATCHES, SamplingConfig(temperature=2.0), cache=tmp_path)
    with pytest.raises(TokenmillError, match=r"selection\.sampling\.temperature: 5\.0 -> 2\.0"):  # named
        other.load_state_dict(state)


def test_dataloader_workers_give_the_single_process_stream(multi_data_bin, tmp_path):
    torch = pytest.importorskip("torch")
    from tokenmill.loader.torch import StatefulLoader

    def make():
        return multilingual_batches(multi_data_bin, BATCHES, SAMPLING, world_size=2, infinite=True, cache=tmp_path)

    total = make().num_steps(1) + 3
    expected = stream(make(), total)
    loader = StatefulLoader(make(), num_workers=2)
    got = []
    for batch in itertools.islice(loader, total):
        assert isinstance(batch["direction"], torch.Tensor)
        got.append(batch["id"].tolist())
    assert got == expected
    state = loader.state_dict()  # workers prefetched further; the state is where the consumer stopped
    resumed = StatefulLoader(make(), num_workers=0)
    resumed.load_state_dict(state)
    assert [b["id"].tolist() for b in itertools.islice(resumed, 2)] == stream(make(), total + 2)[total:]


def test_iterator_survives_pickling_as_spawned_workers_receive_it(multi_dataset, tmp_path):
    iterator = multilingual_batches(multi_dataset, BATCHES, SAMPLING, world_size=2, rank=1, cache=tmp_path, epoch=2)
    copy = pickle.loads(pickle.dumps(iterator))
    assert copy.planner.fingerprint == iterator.planner.fingerprint
    assert stream(copy, 5) == stream(iterator, 5)


@pytest.mark.parametrize(("old", "new"), [(2, 3), (4, 1), (3, 8), (1, 2)])
def test_a_sampled_mix_resumes_at_another_world_size_serving_the_rest_once(multi_dataset, old, new):
    def ranks(world):
        return [multilingual_batches(multi_dataset, BATCHES, SAMPLING, rank=r, world_size=world, collate=None,
                                     cache=False) for r in range(world)]

    def drawn(iterators, steps=None):
        out = Counter()
        for it in iterators:
            for batch in (it if steps is None else itertools.islice(it, steps)):
                out.update(np.asarray(batch).tolist())
        return out

    whole = drawn(ranks(old))  # the epoch's sampled items (repeats of upsampled pairs included)
    for step in range(1, ranks(old)[0].num_steps(1)):
        before_its = ranks(old)
        before = drawn(before_its, step)
        after_its = ranks(new)
        for it in after_its:
            it.load_state_dict(before_its[0].state_dict())
        rest = after_its[0].plan()
        left_out = rest.stats.dropped.get("left_fewer_than_ranks", 0)
        steps = {it.num_steps(1) for it in after_its}
        after = drawn(after_its) if rest.num_steps else Counter()
        assert len(steps) == 1, f"every rank runs the same number of steps, {old}->{new} at {step}"
        assert sum((before + after).values()) + left_out == sum(whole.values())
        assert not (before + after) - whole, "nothing drawn more often than the epoch's sample says"
