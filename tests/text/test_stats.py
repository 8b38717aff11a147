"""StepStats: counters, merge across workers, JSON round trip."""

from __future__ import annotations

import json

import pytest

from tokenmill.errors import FormatError
from tokenmill.text.stats import StepStats, format_table, merge_all


def test_merge_and_json_round_trip() -> None:
    a, b = StepStats("filter"), StepStats("filter")
    a.add("pairs", 10)
    a.add("dropped_empty", 2)
    b.add("pairs", 5)
    b.ensure("dropped_ratio")
    merged = merge_all([a, b, StepStats("read", {"read": 3})])
    assert merged["filter"].counts == {"pairs": 15, "dropped_empty": 2, "dropped_ratio": 0}
    again = StepStats.from_dict(json.loads(merged["filter"].to_json()))
    assert again == merged["filter"]
    assert "dropped_empty" in format_table(merged.values())
    with pytest.raises(ValueError, match="cannot merge"):
        a.merge(StepStats("read"))
    with pytest.raises(FormatError, match="non-integer"):
        StepStats.from_dict({"step": "x", "counts": {"n": 1.5}})
