"""The consumption ledger of Megatron GPT samples and blends: per member, samples and tokens served.

A GPT pass serves Megatron's consumed-samples order, so what a position served is known from the
plans alone: for one :class:`~tokenmill.data.gpt_dataset.GPTDataset`, the samples consumed so far; for a
:class:`~tokenmill.data.blending.BlendedDataset`, the blend positions each part of the pass served
(:meth:`~tokenmill.batching.gpt_mix.BlendPlanner.chain`: the parts before a blend change ran under the
blends their segments record), counted per member. Members are known by their key (fingerprint and
content, :mod:`~tokenmill.data.blend_members`), which stays the same across a blend change, so a retired
member keeps its counts and a new one starts at 0; two members over other tokens with the same lengths
are counted apart.
Tokens are Megatron's consumed tokens: ``seq_length`` per sample (what the model is fed; all members of
a blend share ``seq_length``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tokenmill.batching.gpt_mix import BlendPlanner
from tokenmill.batching.gpt_plan import GPTPlanner
from tokenmill.batching.mixes import segment
from tokenmill.data.blend_members import short
from tokenmill.data.blend_mix import add_counts, served_counts
from tokenmill.errors import TokenmillError


def members(planner: GPTPlanner) -> list[str]:
    """The keys of the planner's members (a plain GPT dataset's fingerprint), in member order."""
    mix = getattr(planner.source, "mix", None)
    return [str(x) for x in mix["datasets"]] if isinstance(mix, Mapping) else [planner.source.fingerprint()]


def served(planner: GPTPlanner, epoch: int, segments: Sequence[Sequence[Any]], step: int | None) -> dict[str, int]:
    """Samples per member key served in pass ``epoch`` after ``segments`` and ``step`` micro batches of
    the running part (None: all of it, the pass finished)."""
    if not isinstance(planner, BlendPlanner):
        plan = planner.plan_after(epoch, [tuple(x[:2]) for x in segments])
        return {members(planner)[0]: plan.consumed(plan.num_steps if step is None else step)}
    plans = planner.chain(epoch, segments)
    parts = [segment(x) for x in segments]
    counts: dict[str, int] = {}
    for index, plan in enumerate(plans):
        if index < len(parts):
            world, steps, mix = parts[index]
            owner = planner.for_mix(mix).for_world(world)
        else:
            owner, steps = planner, plan.num_steps if step is None else step
        counts = add_counts(counts, served_counts(owner.source, plan.served_after(steps)))
    return counts


def seq_length(planner: GPTPlanner) -> int:
    """Tokens per sample of the planner's data (a blend's members share it)."""
    source = planner.source
    datasets = getattr(source, "datasets", [source])
    lengths = {getattr(getattr(d, "config", None), "seq_length", None) for d in datasets}
    if len(lengths) != 1 or None in lengths:
        raise TokenmillError(f"the ledger counts seq_length tokens per sample, but {source.describe()} has "
                             f"members with seq_length {sorted(map(str, lengths))}")
    return int(lengths.pop())  # type: ignore[arg-type]


def counts(planner: GPTPlanner, samples: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """(samples, tokens) per member key of ``samples`` (per member key)."""
    length = seq_length(planner)
    return {fp: (int(n), int(n) * length) for fp, n in samples.items()}


def labels(planner: GPTPlanner, keys: Sequence[str]) -> dict[str, str]:
    """A name for each member: its dataset's description (with its place in the blend where two are alike:
    one store listed twice, or under other settings), or, for a member of an earlier blend this one lacks,
    its key shortened."""
    source = planner.source
    datasets = dict(zip(members(planner), getattr(source, "datasets", [source]), strict=True))
    places = {key: place for place, key in enumerate(members(planner), 1)}
    names = {key: datasets[key].describe() if key in datasets else f"member {short(key)} (not in this blend)"
             for key in keys}
    alike = [key for key in names if key in datasets and list(names.values()).count(names[key]) > 1]
    return {key: f"{name} (member {places[key]})" if key in alike else name for key, name in names.items()}


__all__ = ["counts", "labels", "members", "seq_length", "served"]
