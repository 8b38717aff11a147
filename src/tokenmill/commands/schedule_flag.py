"""``--weights-schedule`` and ``--schedule-every``: a weights schedule (direction weights as a piecewise-linear
function of the training step, :mod:`tokenmill.data.mix_schedule`) typed on the command line or kept in a
YAML file, and how ``tokenmill batches`` shows a scheduled epoch.

Two forms, the same schedule:

- inline, ``STEP:direction=weight,...;STEP:...``, e.g. ``0:eng-deu=1,eng-fra=1;5000:eng-deu=1,eng-fra=3``;
- a YAML (or JSON) file, either a mapping from step to weights (``0: {eng-deu: 1, eng-fra: 1}``) or the
  Python API's list (``- {step: 0, weights: {...}}``), also under a ``weights_schedule:`` key.

An existing file, or a name ending in ``.yaml``/``.yml``/``.json``, is a file; anything else the inline form.
The result is exactly the ``SamplingConfig(weights_schedule=..., schedule_every=...)`` the Python API takes,
so the batches are the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from tokenmill.batching.scheduled import ScheduledPlanner
from tokenmill.commands.params import direction_weights
from tokenmill.data.mix_schedule import WeightsSchedule
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import ConfigError

FLAG = "--weights-schedule"
EXAMPLE = "0:eng_Latn-deu_Latn=1,eng_Latn-fra_Latn=1;5000:eng_Latn-deu_Latn=1,eng_Latn-fra_Latn=3"
DEFAULT_EVERY = SamplingConfig.schedule_every
FILE_SUFFIXES = (".yaml", ".yml", ".json")


def _inline(text: str) -> list[dict[str, Any]]:
    """``STEP:d=w,...;STEP:...`` as schedule points."""
    points = []
    for item in (part.strip() for part in text.split(";")):
        if not item:
            continue
        step, sep, weights = item.partition(":")
        if not sep or not step.strip().isdigit():
            raise ConfigError(f"{FLAG}: {item!r} is not STEP:direction=weight,... (e.g. {EXAMPLE})")
        points.append({"step": int(step), "weights": direction_weights(weights, flag=f"{FLAG} at step {step.strip()}")})
    return points


def _from_file(text: str) -> list[dict[str, Any]]:
    """A YAML/JSON file of schedule points (module docstring)."""
    path = Path(text)
    if not path.is_file():
        raise ConfigError(f"{FLAG}: no file {text}; give an existing YAML file, or the schedule itself as "
                          f"STEP:direction=weight,...;STEP:... (e.g. {EXAMPLE})")
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ConfigError(f"{FLAG} {path}: not readable YAML ({str(error).splitlines()[0]})") from None
    if isinstance(loaded, Mapping) and set(loaded) == {"weights_schedule"}:
        loaded = loaded["weights_schedule"]
    if isinstance(loaded, Mapping):
        bad = [key for key in loaded if isinstance(key, bool) or not isinstance(key, int)]
        if bad:
            raise ConfigError(f"{FLAG} {path}: {bad[0]!r} is not a step; write 'STEP: {{direction: weight, ...}}' "
                              "per line, steps as whole numbers (the re-draw interval goes in --schedule-every)")
        return [{"step": step, "weights": weights} for step, weights in loaded.items()]
    if isinstance(loaded, Sequence) and not isinstance(loaded, str):
        return list(loaded)
    raise ConfigError(f"{FLAG} {path}: holds {type(loaded).__name__}; write a mapping 'STEP: {{direction: weight}}' "
                      "or a list '- {step: N, weights: {...}}'")


def parse_schedule(text: str) -> list[dict[str, Any]]:
    """The schedule points ``--weights-schedule`` gives (inline or a file), checked."""
    is_file = Path(text).is_file() or text.lower().endswith(FILE_SUFFIXES)
    points = _from_file(text) if is_file else _inline(text)
    try:
        WeightsSchedule.parse(points, DEFAULT_EVERY)
    except ConfigError as error:
        raise ConfigError(f"{FLAG}: {error}") from None
    return points


def scheduled(sampling: SamplingConfig, text: str | None, every: int | None,
              clashing: Mapping[str, Any]) -> SamplingConfig:
    """``sampling`` with the schedule ``--weights-schedule`` gives (itself without one). ``clashing``: the flags a
    schedule replaces, by name, with their values (None: not given)."""
    if text is None:
        if every is not None:
            raise ConfigError(f"--schedule-every applies to {FLAG}: give a schedule, or drop --schedule-every")
        return sampling
    given = [name for name, value in clashing.items() if value is not None]
    if given:
        raise ConfigError(f"{FLAG} sets the weights at every step, so it replaces {' and '.join(given)}: drop "
                          f"{' and '.join(given)} (a direction left out of the mix gets weight 0 in the schedule)")
    return replace(sampling, weights_schedule=parse_schedule(text),
                   schedule_every=DEFAULT_EVERY if every is None else every)


def check_directions(sampling: SamplingConfig | None, directions: Sequence[str]) -> None:
    """Refuse a schedule whose directions are not the data's, naming both and the flag."""
    schedule = sampling.schedule if sampling is not None else None
    if schedule is None:
        return
    named = [name for name, _ in schedule.points[0][1]]
    unknown, missing = sorted(set(named) - set(directions)), sorted(set(directions) - set(named))
    if unknown or missing:
        problem = f"names {', '.join(unknown)}, which the data lack" if unknown else f"leaves out {', '.join(missing)}"
        raise ConfigError(f"{FLAG} {problem}: give each of the directions {', '.join(directions)} a weight at every "
                          "step (0 leaves one out), or choose directions with --directions")


def mix_view(iterator: Any, epoch: int) -> tuple[dict[str, Any], str]:
    """(JSON report, table) of ``epoch``'s mix: the planner's own, or for a weights schedule the epoch's parts
    (first step, steps, weights in force)."""
    planner = iterator.planner
    if not isinstance(planner, ScheduledPlanner):
        return planner.report(epoch), planner.describe_epoch(epoch)
    plan = iterator.plan(epoch)
    parts = [{"first_step": start, "steps": int(take), "weights": planner.sampling.at_step(start).weights}
             for start, (_, take) in zip(plan.part_starts, plan.parts, strict=True)]
    names = list(parts[0]["weights"])
    rows = [("steps", *names)] + [(f"{p['first_step']}-{p['first_step'] + p['steps'] - 1}",
                                   *(f"{p['weights'][n]:g}" for n in names)) for p in parts]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [f"epoch {epoch}: weights schedule in {len(parts)} part(s), re-drawn every {planner.schedule.every} "
             "steps where the weights change (global steps, weight per direction):"]
    lines += ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths,
                                                                                                  strict=True)))
              for r in rows]
    return {"epoch": epoch, "schedule_every": planner.schedule.every, "parts": parts}, "\n".join(lines)


__all__ = ["check_directions", "mix_view", "parse_schedule", "scheduled"]
