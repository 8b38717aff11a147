"""Mix weights as a function of the training step: a piecewise-linear schedule of named weights.

``[{"step": 0, "weights": {"a": 1, "b": 0}}, {"step": 1000, "weights": {"a": 1, "b": 1}}]`` gives
each direction's weight at every step: linear between two points, the first point's before it (the
first point is step 0), the last point's after it. The mix is not re-drawn at every step: the weights
in force from step ``t`` are those at the last multiple of ``every`` at or before ``t``, so the mix
changes at most once per ``every`` steps (each change is a mix segment of the epoch, see
:mod:`tokenmill.batching.mixes`), and stretches where the weights stay the same are one segment.
A pure function of its settings: no randomness, nothing kept but the step.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenmill.errors import ConfigError

Point = tuple[int, tuple[tuple[str, float], ...]]


@dataclass(frozen=True)
class WeightsSchedule:
    """Checked schedule points ``(step, ((name, weight), ...))`` in step order, and the re-draw interval."""

    points: tuple[Point, ...]
    every: int

    @classmethod
    def parse(cls, points: Any, every: Any) -> WeightsSchedule:
        """Check a schedule as a config gives it (a list of ``{step, weights}`` mappings); a ConfigError names
        the entry and the fix."""
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ConfigError(f"schedule_every must be a whole number of steps >= 1, got {every!r}")
        if not isinstance(points, Sequence) or isinstance(points, str) or not points:
            raise ConfigError("weights_schedule must be a non-empty list of {step: N, weights: {direction: w}}")
        parsed = [_point(i, entry) for i, entry in enumerate(points)]
        steps = [step for step, _ in parsed]
        if steps[0] != 0 or any(b <= a for a, b in itertools.pairwise(steps)):
            raise ConfigError(f"weights_schedule steps must start at 0 and increase, got {steps}")
        names = [name for name, _ in parsed[0][1]]
        for step, weights in parsed[1:]:
            if [name for name, _ in weights] != names:
                raise ConfigError(
                    f"weights_schedule at step {step} names {[n for n, _ in weights]}, but step 0 names {names}: "
                    "give every point a weight for the same directions (0 leaves one out)"
                )
        return cls(tuple(parsed), int(every))

    def to_list(self) -> list[dict[str, Any]]:
        """The points as a config writes them (JSON/YAML)."""
        return [{"step": step, "weights": dict(weights)} for step, weights in self.points]

    def weights_at(self, step: int) -> dict[str, float]:
        """The weights in force from ``step``: the linear schedule at the last multiple of ``every`` <= step."""
        at = step // self.every * self.every
        before = [p for p in self.points if p[0] <= at][-1]
        later = [p for p in self.points if p[0] > at]
        if not later:
            return dict(before[1])
        (s0, w0), (s1, w1) = before, later[0]
        share = (at - s0) / (s1 - s0)
        return {name: a + (b - a) * share for (name, a), (_, b) in zip(w0, w1, strict=True)}

    def next_change(self, step: int) -> int | None:
        """The first step after ``step`` where the weights in force change (None: they never do again)."""
        now = self.weights_at(step)
        at = step // self.every * self.every + self.every
        last = self.points[-1][0]
        while at <= last + self.every:
            if self.weights_at(at) != now:
                return at
            at += self.every
        return None


def _point(index: int, entry: Any) -> Point:
    if not isinstance(entry, Mapping) or set(entry) != {"step", "weights"}:
        raise ConfigError(f"weights_schedule entry {index} is {entry!r:.80}; write it as {{step: N, weights: {{...}}}}")
    step, weights = entry["step"], entry["weights"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ConfigError(f"weights_schedule entry {index}: step must be a whole number >= 0, got {step!r}")
    if not isinstance(weights, Mapping) or not weights:
        raise ConfigError(f"weights_schedule entry {index}: weights must map directions to numbers, "
                          f"got {weights!r:.80}")
    out = []
    for name, value in weights.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise ConfigError(f"weights_schedule at step {step}: weight of {name!r} must be a number >= 0, "
                              f"got {value!r}")
        out.append((str(name), float(value)))
    if not sum(v for _, v in out) > 0:
        raise ConfigError(f"weights_schedule at step {step}: the weights sum to 0; give a direction a weight > 0")
    return step, tuple(out)


__all__ = ["WeightsSchedule"]
