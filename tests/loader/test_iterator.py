"""BatchIterator: epochs, repeat, update_freq, and a state that resumes exactly at any step."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from tests.batching.corpus import make_pair_dir
from tokenmill.batching.config import BatchConfig
from tokenmill.data.pairs import PairDataset, PairOptions
from tokenmill.errors import TokenmillError
from tokenmill.loader import BatchIterator


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return PairDataset.from_dir(make_pair_dir(tmp_path_factory.mktemp("it") / "data", 240, seed=9))


def ids(batch) -> list[int]:
    return np.asarray(batch).tolist()


@pytest.mark.parametrize(
    ("mode", "world", "rank"),
    [("lowpad", 1, 0), ("fairseq", 1, 0), ("opennmt", 1, 0), ("lowpad", 3, 2), ("fairseq", 2, 1)],
)
def test_resume_at_every_step_continues_the_same_stream(dataset, tmp_path, mode, world, rank):
    config = BatchConfig(mode=mode, max_tokens=300, required_batch_size_multiple=2)
    make = lambda: BatchIterator(  # noqa: E731
        dataset, config, rank=rank, world_size=world, collate=None, infinite=True, cache=tmp_path
    )
    reference = make()
    per_epoch = reference.num_steps(1)
    total = per_epoch * 2 + 3  # into the third epoch
    stream, states = [], []
    for batch in itertools.islice(reference, total):
        stream.append(ids(batch))
        states.append(json.loads(json.dumps(reference.state_dict())))  # states are plain JSON
    assert len(stream) == total and states[per_epoch - 1]["epoch"] == 2 and states[per_epoch - 1]["step"] == 0
    for k, state in enumerate(states):
        resumed = make()
        resumed.load_state_dict(state)
        rest = [ids(b) for b in itertools.islice(resumed, total - k - 1)]
        assert rest == stream[k + 1 :], f"resume after batch {k} diverged"


def test_epochs_end_and_the_next_loop_starts_the_next_epoch(dataset):
    iterator = BatchIterator(dataset, BatchConfig(max_tokens=400), collate=None, cache=False)
    first = [ids(b) for b in iterator]
    assert len(first) == len(iterator) and iterator.epoch == 2 and iterator.step == 0
    second = [ids(b) for b in iterator]
    assert sorted(itertools.chain(*first)) == sorted(itertools.chain(*second)) == list(range(240))
    assert first != second


def test_update_freq_groups_consecutive_batches(dataset):
    single = BatchIterator(dataset, BatchConfig(max_tokens=400), collate=None, cache=False)
    grouped = BatchIterator(dataset, BatchConfig(max_tokens=400), collate=None, cache=False, update_freq=3)
    flat = [ids(b) for b in single]
    groups = list(grouped)
    assert (
        len(groups)
        == -(-len(flat) // 3)
        == len(BatchIterator(dataset, BatchConfig(max_tokens=400), cache=False, update_freq=3))
    )
    assert [ids(b) for group in groups for b in group] == flat
    assert grouped.consumed == len(flat)


def test_collated_batches_by_default(dataset):
    batch = next(iter(BatchIterator(dataset, BatchConfig(max_tokens=400), cache=False)))
    assert set(batch) >= {"id", "nsentences", "ntokens", "net_input", "target"}
    features, labels = next(
        iter(BatchIterator(dataset, BatchConfig(max_tokens=400), cache=False, collate="opennmt"))
    )
    assert set(features) == {"length", "ids"} and set(labels) == {"length", "ids", "ids_out"}


def test_mismatched_resume_fails_with_the_reason(dataset, tmp_path):
    iterator = BatchIterator(dataset, BatchConfig(max_tokens=300), collate=None, cache=False)
    next(iter(iterator))
    state = iterator.state_dict()
    other_settings = BatchIterator(dataset, BatchConfig(max_tokens=600), collate=None, cache=False)
    with pytest.raises(TokenmillError, match=r"max_tokens: 300 -> 600"):
        other_settings.load_state_dict(state)
    other_world = BatchIterator(dataset, BatchConfig(max_tokens=300), world_size=2, collate=None, cache=False)
    other_world.load_state_dict(state)  # another world size resumes elastically (tests/loader/test_elastic.py)
    assert other_world.segments == [(1, 1)] and other_world.step == 0
    other_data = PairDataset.from_dir(make_pair_dir(tmp_path / "other", 240, seed=10))
    with pytest.raises(TokenmillError, match="the data differ"):
        BatchIterator(other_data, BatchConfig(max_tokens=300), collate=None, cache=False).load_state_dict(state)
    filtered = PairDataset(dataset.src, dataset.tgt, PairOptions(max_source_positions=10))
    with pytest.raises(TokenmillError, match="the data differ"):
        BatchIterator(filtered, BatchConfig(max_tokens=300), collate=None, cache=False).load_state_dict(state)
    with pytest.raises(TokenmillError, match="not a tokenmill batch iterator state"):
        iterator.load_state_dict({"epoch": 1})


def test_random_access_equals_iteration(dataset):
    iterator = BatchIterator(dataset, BatchConfig(max_tokens=300), rank=1, world_size=2, collate=None, cache=False)
    stream = [ids(b) for b in iterator]
    assert [ids(iterator.batch_at(1, t)) for t in range(len(stream))] == stream
    assert list(iterator.positions(1, 3, stride=2, offset=1)) == [(1, t) for t in range(4, len(stream), 2)]


def test_a_planner_made_for_another_world_size_is_refused(dataset):
    from tokenmill.batching.packed_pairs import PackConfig, PackedPairPlanner
    from tokenmill.errors import ConfigError

    planner = PackedPairPlanner(dataset, PackConfig(max_length=64, max_tokens=256), world_size=2)
    with pytest.raises(ConfigError, match="world_size=2 but the iterator is for world_size=4"):
        BatchIterator(dataset, planner=planner, rank=0, world_size=4, collate=None)
    assert BatchIterator(dataset, planner=planner, rank=1, world_size=2, collate=None).num_steps() > 0
