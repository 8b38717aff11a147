"""Planner abilities are declared protocols: the planners have the ones the iterator relies on, and a planner
of one's own that lacks a method lacks the ability (the iterator then refuses an elastic resume)."""

from __future__ import annotations

import numpy as np
import pytest

from tokenmill.batching.abilities import CountsSamples, Elastic, MadeForWorld, NamesSettings
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Sizes
from tokenmill.batching.gpt_plan import GPTPlanner
from tokenmill.batching.plan import Planner
from tokenmill.errors import TokenmillError
from tokenmill.loader.iterator import BatchIterator


class _Lengths:
    """The least a dataset gives the iterator: lengths and a fingerprint."""

    def __init__(self, n: int) -> None:
        rng = np.random.default_rng(0)
        self.src_sizes = rng.integers(1, 30, n).astype(np.int32)
        self.tgt_sizes = rng.integers(1, 30, n).astype(np.int32)

    def __len__(self) -> int:
        return len(self.src_sizes)

    def fingerprint(self) -> str:
        return "toy"

    def describe(self) -> str:
        return "toy"


def test_the_planners_declare_what_they_can_do(tmp_path):
    sizes = Sizes(np.arange(1, 50, dtype=np.int32), np.arange(1, 50, dtype=np.int32))
    planner = Planner(sizes, BatchConfig(max_tokens=64), world_size=2, cache=False, data_fingerprint="toy")
    assert isinstance(planner, Elastic) and isinstance(planner, NamesSettings) and isinstance(planner, MadeForWorld)
    assert not isinstance(planner, CountsSamples)
    assert isinstance(GPTPlanner, type) and issubclass(GPTPlanner, Elastic) and issubclass(GPTPlanner, CountsSamples)


class _Fixed:
    """A planner of one's own: one plan, no re-planning for other world sizes."""

    fingerprint = "fixed"

    def __init__(self, inner: Planner) -> None:
        self.inner = inner

    def plan(self, epoch: int):
        return self.inner.plan(epoch)


def test_a_planner_without_the_ability_is_not_resumed_elastically(tmp_path):
    data = _Lengths(40)
    inner = Planner(Sizes(data.src_sizes, data.tgt_sizes), BatchConfig(max_tokens=64), world_size=1, cache=False,
                    data_fingerprint="toy")
    assert not isinstance(_Fixed(inner), Elastic)
    first = BatchIterator(data, BatchConfig(max_tokens=64), planner=_Fixed(inner), collate=None, cache=False)
    state = first.state_dict()
    state["world_size"] = 2
    again = BatchIterator(data, BatchConfig(max_tokens=64), planner=_Fixed(inner), collate=None, cache=False)
    with pytest.raises(TokenmillError, match="this planner cannot re-plan an epoch"):
        again.load_state_dict(state)
