"""The consumption ledger: per source, samples and tokens served in this epoch and in total.

Computed from an iterator's position alone (epoch, step, the epoch's segments and the totals of the
epochs before, which a state records once an epoch with several parts is over): the plans say
which items each (epoch, step) served, so nothing is counted while training runs. A source is what
the planner's selection counts by (the directions of a sampled mix; one source ``all`` otherwise).
Tokens are both sides of a pair. A mix that follows a weights schedule
(:class:`~tokenmill.batching.scheduled.ScheduledPlanner`) counts by its base planner's sources; its
epoch's plan says what each of its parts served.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tokenmill.batching.epochs import EpochPlanner, served_by
from tokenmill.batching.scheduled import ScheduledPlanner
from tokenmill.errors import TokenmillError


@dataclass
class Totals:
    """Samples and tokens per source of every epoch before ``epoch``."""

    epoch: int = 1
    samples: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)

    def to_dict(self, names: list[str]) -> dict[str, Any]:
        return {"epoch": self.epoch, "sources": names, "samples": self.samples, "tokens": self.tokens}

    @classmethod
    def from_dict(cls, value: dict[str, Any], names: list[str]) -> Totals:
        if list(value.get("sources") or []) != names:
            raise TokenmillError(
                f"the state's ledger counts sources {value.get('sources')} but this data has {names}"
            )
        return cls(int(value["epoch"]), [int(x) for x in value["samples"]], [int(x) for x in value["tokens"]])


ServedIds = Callable[[int, "int | None"], np.ndarray]
"""(epoch, step) -> the dataset ids served in that epoch before that step (None: the whole epoch)."""


def sources(planner: Any) -> list[str]:
    """The names the ledger counts by."""
    return list(getattr(_planner(planner).selection, "sources", ["all"]))


def supported(planner: Any) -> bool:
    """Whether ``planner`` keeps a ledger (epoch planners and weights schedules over them do;
    Megatron-style GPT plans count consumed samples)."""
    return isinstance(planner.base if isinstance(planner, ScheduledPlanner) else planner, EpochPlanner)


def _planner(planner: Any) -> EpochPlanner:
    """The epoch planner whose selection counts (a schedule's base planner)."""
    if isinstance(planner, ScheduledPlanner):
        planner = planner.base
    if not isinstance(planner, EpochPlanner):
        raise TokenmillError(f"a consumption ledger needs an epoch planner, not {type(planner).__name__}")
    return planner


def count(planner: EpochPlanner, ids: np.ndarray, epoch: int) -> tuple[np.ndarray, np.ndarray]:
    """(samples, tokens) per source of the dataset ids ``ids`` served in ``epoch``."""
    names = sources(planner)
    ids = np.asarray(ids, dtype=np.int64)
    if not len(ids):
        return np.zeros(len(names), dtype=np.int64), np.zeros(len(names), dtype=np.int64)
    selection = planner.selection
    source = selection.source_of(ids) if hasattr(selection, "source_of") else np.zeros(len(ids), dtype=np.int64)
    if hasattr(selection, "tokens_of"):  # from the data: ids another mix served need not be in this one's draw
        tokens = np.asarray(selection.tokens_of(ids), dtype=np.int64)
    else:
        sizes = planner.item_sizes(ids, epoch)
        tokens = np.asarray(sizes.src, dtype=np.int64)
        tokens = tokens + (0 if sizes.tgt is None else np.asarray(sizes.tgt, dtype=np.int64))
    return (np.bincount(source, minlength=len(names)).astype(np.int64),
            np.bincount(source, weights=tokens, minlength=len(names)).astype(np.int64))


def served(planner: Any, epoch: int, segments: list, step: int | None) -> np.ndarray:
    """Dataset ids served in ``epoch`` after ``segments`` and ``step`` steps of its running part
    (``step`` None: the whole running part, i.e. the epoch finished)."""
    planner = _planner(planner)
    plans = planner.chain(epoch, segments)
    ran = [(plan, int(s[1])) for plan, s in zip(plans[:-1], segments, strict=True)]
    last = plans[-1]
    ran.append((last, last.num_steps if step is None else step))
    return served_by(ran)


def advance(planner: Any, totals: Totals, upto: int, served_ids: ServedIds) -> Totals:
    """``totals`` moved on to ``upto``: each epoch in between added whole (``served_ids(e, None)``)."""
    planner = _planner(planner)
    names = sources(planner)
    samples = np.array(totals.samples or [0] * len(names), dtype=np.int64)
    tokens = np.array(totals.tokens or [0] * len(names), dtype=np.int64)
    for epoch in range(totals.epoch, upto):
        n, t = count(planner, served_ids(epoch, None), epoch)
        samples, tokens = samples + n, tokens + t
    return Totals(max(upto, totals.epoch), samples.tolist(), tokens.tolist())


def table(planner: Any, totals: Totals, epoch: int, step: int, served_ids: ServedIds) -> dict[str, Any]:
    """The ledger at (epoch, step): per source this epoch's and all epochs' samples and tokens."""
    planner = _planner(planner)
    names = sources(planner)
    n, t = count(planner, served_ids(epoch, step), epoch)
    before_n = np.array(totals.samples or [0] * len(names), dtype=np.int64)
    before_t = np.array(totals.tokens or [0] * len(names), dtype=np.int64)
    rows = {
        name: {"epoch_samples": int(n[i]), "epoch_tokens": int(t[i]),
               "total_samples": int(before_n[i] + n[i]), "total_tokens": int(before_t[i] + t[i])}
        for i, name in enumerate(names)
    }
    return {"epoch": epoch, "step": step, "sources": rows}


def describe(ledger: dict[str, Any]) -> str:
    """The ledger as a table for people."""
    head = ("source", "epoch samples", "epoch tokens", "total samples", "total tokens")
    rows = [head] + [(name, *(str(r[k]) for k in ("epoch_samples", "epoch_tokens", "total_samples", "total_tokens")))
                     for name, r in ledger["sources"].items()]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [f"consumption ledger at epoch {ledger['epoch']}, step {ledger['step']}:"]
    lines += ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths,
                                                                                                   strict=True)))
              for r in rows]
    return "\n".join(lines)


__all__ = ["ServedIds", "Totals", "advance", "count", "describe", "served", "sources", "supported", "table"]
