"""A batching mode added from outside the package: one function registered by name, run end to end through
``tokenmill.batches()`` (planned, dealt to ranks, collated, resumed) with no edit to any core file."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import tokenmill
from tests.batching.corpus import make_pair_dir
from tokenmill.batching import modes
from tokenmill.batching.costs import Cut, Sizes
from tokenmill.batching.modes import register_cut, registered_modes
from tokenmill.data.pairs import PairDataset
from tokenmill.errors import ConfigError

ROWS = 4


def shortest_first(sizes: Sizes, config: tokenmill.BatchConfig, epoch: int) -> Cut:
    """The toy mode: kept samples by source length (ties by id), ROWS rows per batch."""
    ids = sizes.kept_ids()
    order = ids[np.lexsort((ids, sizes.src[ids]))]
    ends = np.append(np.arange(ROWS, len(order), ROWS), len(order)).astype(np.int64)
    return Cut(order=order.astype(np.int64), ends=ends)


@pytest.fixture(autouse=True, scope="module")
def registered() -> Iterator[None]:
    """The toy mode, registered for this module's tests only (other tests see the built-in modes)."""
    register_cut("test-shortest-first", shortest_first)
    yield
    del modes._MODES["test-shortest-first"]  # no public way to retire a mode: tests only


@pytest.fixture
def dataset(tmp_path, monkeypatch) -> PairDataset:
    monkeypatch.setenv("TOKENMILL_CACHE", str(tmp_path / "cache"))
    return PairDataset.from_dir(make_pair_dir(tmp_path / "data", 101, seed=3))


def test_registered_mode_runs_through_the_front_door(dataset):
    config = tokenmill.BatchConfig(mode="test-shortest-first", max_tokens=None, max_sentences=ROWS, shuffle=False)
    iterator = tokenmill.batches(dataset, config, world_size=1, collate=None)
    served = [np.asarray(batch) for batch in iterator]
    assert [len(b) for b in served[:-1]] == [ROWS] * (len(served) - 1) and 1 <= len(served[-1]) <= ROWS
    flat = np.concatenate(served)
    assert sorted(flat.tolist()) == list(range(len(dataset)))  # each pair once
    lengths = dataset.src_sizes[flat]
    assert (np.diff(lengths) >= 0).all(), "batches follow the toy mode's order"


def test_registered_mode_resumes_exactly(dataset):
    config = tokenmill.BatchConfig(mode="test-shortest-first", max_tokens=None, max_sentences=ROWS)
    first = tokenmill.batches(dataset, config, world_size=2, rank=1, collate=None)
    stream = iter(first)
    for _ in range(3):
        next(stream)
    state = first.state_dict()
    rest = [np.asarray(b).tolist() for b in stream]
    resumed = tokenmill.batches(dataset, config, world_size=2, rank=1, collate=None)
    resumed.load_state_dict(state)
    assert [np.asarray(b).tolist() for b in resumed] == rest and rest


def test_names_are_checked():
    assert "test-shortest-first" in registered_modes() and registered_modes()[:3] == ("lowpad", "fairseq", "opennmt")
    register_cut("test-shortest-first", shortest_first)  # the same function again: fine
    with pytest.raises(ConfigError, match="registered already"):
        register_cut("test-shortest-first", lambda sizes, config, epoch: None)
    with pytest.raises(ConfigError, match="unknown; choose one of lowpad, fairseq, opennmt"):
        tokenmill.BatchConfig(mode="no-such-mode")
