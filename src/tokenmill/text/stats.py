"""Counts kept by each text step (read, normalize, filter, dedup), for a preprocess.log-style summary.

A :class:`StepStats` is an ordered mapping of counter name to an integer, tagged with the step's name.
Workers each fill their own and the pipeline sums them with :meth:`StepStats.merge`; the result is
plain JSON (``to_dict``/``from_dict``) so it can go into the manifest unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tokenmill.errors import FormatError


@dataclass
class StepStats:
    """Integer counters of one step, in the order they were first touched (stable JSON)."""

    step: str  # e.g. "read", "normalize", "filter", "dedup"
    counts: dict[str, int] = field(default_factory=dict)  # counter name -> value

    def add(self, name: str, n: int = 1) -> None:
        """Increase counter ``name`` by ``n`` (creates it at 0 first)."""
        self.counts[name] = self.counts.get(name, 0) + int(n)

    def ensure(self, *names: str) -> None:
        """Create counters at 0 so summaries always show them, even when nothing happened."""
        for name in names:
            self.counts.setdefault(name, 0)

    def __getitem__(self, name: str) -> int:
        return self.counts.get(name, 0)

    def merge(self, other: StepStats) -> StepStats:
        """Add ``other``'s counters into this one (same step); returns self for chaining."""
        if other.step != self.step:
            raise ValueError(f"cannot merge stats of step {other.step!r} into {self.step!r}")
        for name, n in other.counts.items():
            self.add(name, n)
        return self

    def to_dict(self) -> dict[str, object]:
        return {"step": self.step, "counts": dict(self.counts)}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> StepStats:
        step, counts = data.get("step"), data.get("counts")
        if not isinstance(step, str) or not isinstance(counts, Mapping):
            raise FormatError(f"not a StepStats record: {data!r}")
        bad = {k: v for k, v in counts.items() if not isinstance(k, str) or type(v) is not int}
        if bad:
            raise FormatError(f"StepStats {step!r} has non-integer counters: {bad!r}")
        return cls(step, dict(counts))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


def merge_all(stats: Iterable[StepStats]) -> dict[str, StepStats]:
    """Sum any number of StepStats by step name, keeping first-seen step order."""
    out: dict[str, StepStats] = {}
    for s in stats:
        if s.step not in out:
            out[s.step] = StepStats(s.step)
        out[s.step].merge(s)
    return out


def format_table(stats: Iterable[StepStats]) -> str:
    """Plain-text table (step, counter, value) for logs and the end-of-run summary."""
    rows = [(s.step, name, f"{n:,}") for s in stats for name, n in s.counts.items()]
    if not rows:
        return ""
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:>{widths[2]}}" for a, b, c in rows)
