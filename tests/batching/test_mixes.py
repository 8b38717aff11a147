"""``tokenmill.batching.mixes``: the multiset difference a mix change plans from, and segment records."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tokenmill.batching.mixes import multiset_minus, relative, segment, stored
from tokenmill.errors import ConfigError


def test_multiset_minus_equals_counter_subtraction_and_keeps_order():
    rng = np.random.default_rng(0)
    for _ in range(300):
        items = rng.integers(0, 20, rng.integers(0, 40))
        served = rng.integers(0, 25, rng.integers(0, 30))
        left = multiset_minus(items, served)
        assert Counter(left.tolist()) == Counter(items.tolist()) - Counter(served.tolist())
        remove = Counter(served.tolist())
        expected = []  # the first copies are the ones taken out
        for value in items.tolist():
            if remove[value]:
                remove[value] -= 1
            else:
                expected.append(value)
        assert left.tolist() == expected


def test_segments_record_a_mix_only_where_it_differs_from_the_running_one():
    old, new = {"sampling": {"temperature": 5.0}}, {"sampling": {"temperature": 1.0}}
    assert stored([(2, 3), (4, 1, old)]) == [[2, 3], [4, 1, old]]
    # a state saved under `old` (its own parts record no mix), resumed under `new`
    assert relative([[2, 3], [4, 1, new]], old, new) == [(2, 3, old), (4, 1, None)]
    with pytest.raises(ConfigError, match="segment"):
        segment([1])
