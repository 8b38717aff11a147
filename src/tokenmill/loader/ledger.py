"""The consumption ledger: per source, samples and tokens served in this epoch and in total.

Computed from an iterator's position alone (epoch, step, the epoch's segments and the totals of the
epochs before, which a state records once an epoch with several parts is over): the plans say
which items each (epoch, step) served, so nothing is counted while training runs. A source is what
the planner's selection counts by (the directions of a sampled mix; one source ``all`` otherwise).
Tokens are both sides of a pair. A mix that follows a weights schedule
(:class:`~tokenmill.batching.scheduled.ScheduledPlanner`) counts by its base planner's sources; its
epoch's plan says what each of its parts served. Megatron GPT samples and blends count by member
(:mod:`tokenmill.loader.gpt_ledger`): a blend change at resume retires and adds members, so their
totals are kept by member key and a row is shown for every member of this blend and every
earlier one that served something.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tokenmill.batching.epochs import EpochPlanner, served_by
from tokenmill.batching.gpt_plan import GPTPlanner
from tokenmill.batching.scheduled import ScheduledPlanner
from tokenmill.errors import TokenmillError
from tokenmill.loader import gpt_ledger

Counts = dict[str, tuple[int, int]]
"""(samples, tokens) per source."""


@dataclass
class Totals:
    """Samples and tokens per source of every epoch before ``epoch`` (``names``: the sources, in order)."""

    epoch: int = 1
    samples: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)

    def to_dict(self, names: list[str]) -> dict[str, Any]:
        return {"epoch": self.epoch, "sources": self.names or names, "samples": self.samples, "tokens": self.tokens}

    @classmethod
    def from_dict(cls, value: dict[str, Any], names: list[str], *, fixed: bool = True) -> Totals:
        """The totals a state records; ``fixed``: its sources must be ``names`` (a blend's members may differ)."""
        recorded = [str(x) for x in value.get("sources") or []]
        if fixed and recorded != names:
            raise TokenmillError(
                f"the state's ledger counts sources {value.get('sources')} but this data has {names}"
            )
        return cls(int(value["epoch"]), [int(x) for x in value["samples"]], [int(x) for x in value["tokens"]],
                   recorded)

    def counts(self, names: list[str]) -> Counts:
        """The totals per source (``names`` where the totals do not name theirs: zeros)."""
        if not self.samples:
            return {}
        return {name: (int(n), int(t)) for name, n, t in zip(self.names or names, self.samples, self.tokens,
                                                               strict=True)}


ServedIds = Callable[[int, "int | None"], Any]
"""(epoch, step) -> what that epoch served before that step (None: the whole epoch): dataset ids, or for GPT
samples and blends the samples per member key."""


def sources(planner: Any) -> list[str]:
    """The names the ledger counts by (a GPT planner's: its members' keys)."""
    if isinstance(planner, GPTPlanner):
        return gpt_ledger.members(planner)
    return list(getattr(_planner(planner).selection, "sources", ["all"]))


def supported(planner: Any) -> bool:
    """Whether ``planner`` keeps a ledger (epoch planners, weights schedules over them, GPT samples and blends)."""
    return isinstance(planner.base if isinstance(planner, ScheduledPlanner) else planner, EpochPlanner | GPTPlanner)


def fixed_sources(planner: Any) -> bool:
    """Whether every state of this data counts the same sources (not so for a blend, whose members change)."""
    return not isinstance(planner, GPTPlanner)


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


def _counts(planner: Any, served_now: Any, epoch: int) -> Counts:
    """(samples, tokens) per source of what ``served_now`` says was served in ``epoch``."""
    if isinstance(planner, GPTPlanner):
        return gpt_ledger.counts(planner, served_now)
    n, t = count(_planner(planner), served_now, epoch)
    return {name: (int(n[i]), int(t[i])) for i, name in enumerate(sources(planner))}


def _added(a: Counts, b: Counts) -> Counts:
    return {k: (a.get(k, (0, 0))[0] + b.get(k, (0, 0))[0], a.get(k, (0, 0))[1] + b.get(k, (0, 0))[1])
            for k in {**a, **b}}


def _order(planner: Any, *counted: Counts) -> list[str]:
    """The sources shown: the planner's, then any other that served something (a blend's earlier members)."""
    names = sources(planner)
    extra = sorted({k for c in counted for k, (n, _) in c.items() if n and k not in names})
    return names + extra


def served(planner: Any, epoch: int, segments: list, step: int | None) -> Any:
    """What ``epoch`` served after ``segments`` and ``step`` steps of its running part (``step`` None: the whole
    running part, i.e. the epoch finished): dataset ids (for GPT planners, samples per member)."""
    if isinstance(planner, GPTPlanner):
        return gpt_ledger.served(planner, epoch, segments, step)
    planner = _planner(planner)
    plans = planner.chain(epoch, segments)
    ran = [(plan, int(s[1])) for plan, s in zip(plans[:-1], segments, strict=True)]
    last = plans[-1]
    ran.append((last, last.num_steps if step is None else step))
    return served_by(ran)


def advance(planner: Any, totals: Totals, upto: int, served_ids: ServedIds) -> Totals:
    """``totals`` moved on to ``upto``: each epoch in between added whole (``served_ids(e, None)``)."""
    acc = totals.counts(sources(planner))
    for epoch in range(totals.epoch, upto):
        acc = _added(acc, _counts(planner, served_ids(epoch, None), epoch))
    names = _order(planner, acc)
    return Totals(max(upto, totals.epoch), [acc.get(k, (0, 0))[0] for k in names],
                  [acc.get(k, (0, 0))[1] for k in names], names)


def table(planner: Any, totals: Totals, epoch: int, step: int, served_ids: ServedIds) -> dict[str, Any]:
    """The ledger at (epoch, step): per source this epoch's and all epochs' samples and tokens (a GPT
    planner's rows are named by member, each with its ``member`` key)."""
    now = _counts(planner, served_ids(epoch, step), epoch)
    before = totals.counts(sources(planner))
    names = _order(planner, now, before)
    shown = gpt_ledger.labels(planner, names) if isinstance(planner, GPTPlanner) else {k: k for k in names}
    rows = {}
    for name in names:
        (n, t), (bn, bt) = now.get(name, (0, 0)), before.get(name, (0, 0))
        row = {"epoch_samples": n, "epoch_tokens": t, "total_samples": bn + n, "total_tokens": bt + t}
        rows[shown[name]] = row | ({"member": name} if isinstance(planner, GPTPlanner) else {})
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


__all__ = ["Counts", "ServedIds", "Totals", "advance", "count", "describe", "fixed_sources", "served", "sources",
           "supported", "table"]
