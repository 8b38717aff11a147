"""Mixture changes inside an epoch: the parts an epoch ran in, and what is left to serve under a new mix.

An epoch may run in parts: each part ran some steps at some world size under some mix (the
selection's settings, e.g. a sampled mix's weights or temperature). A part is a *segment*
``(world_size, steps, mix)``; ``mix`` None means the mix of the planner asked (the one running
now). Only the mix of a part that differs from the running one is recorded, so a state saved
without mixture changes has the same two-number segments as before.

When the mix changes between two parts, the rest of the epoch is the epoch's draw under the new
mix less everything served so far (:func:`multiset_minus`): a sample served before the change is
served again only where the new mix draws more copies of it than were served; a source the new
mix leaves out stops, a source it adds starts. A change of world size alone keeps the rule of an
elastic resume (what the running plan had not served, cut again).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from tokenmill.batching.order import argsort_ids
from tokenmill.errors import ConfigError

Segment = tuple[int, int, "dict[str, Any] | None"]


def multiset_minus(items: np.ndarray, served: np.ndarray) -> np.ndarray:
    """``items`` without one occurrence per occurrence in ``served`` (vectorized), in ``items``' order.

    Of several copies of one id the first ones in ``items`` are taken out; ids of ``served`` that
    ``items`` lacks (or lacks enough of) are ignored. Ids are non-negative (dataset ids): counts are
    kept per id, and only items whose id is partly taken out are sorted.
    """
    items = np.asarray(items, dtype=np.int64)
    return items[multiset_keep(items, served)]


def multiset_keep(items: np.ndarray, served: np.ndarray) -> np.ndarray:
    """Which positions of ``items`` :func:`multiset_minus` keeps (a bool mask)."""
    items = np.asarray(items, dtype=np.int64)
    served = np.asarray(served, dtype=np.int64)
    if not len(served) or not len(items):
        return np.ones(len(items), dtype=bool)
    top = int(max(items.max(), served.max())) + 1
    remove = np.bincount(served, minlength=top)[items]
    keep = remove == 0
    touched = np.flatnonzero(~keep)  # every copy of an id served is here: its copies are counted among these
    ids = items[touched]
    partly = touched[np.bincount(ids, minlength=top)[ids] > remove[touched]]
    if len(partly):  # ids with more copies than were served: keep the copies after the first ``remove``
        ids = items[partly]
        grouped = argsort_ids(ids)
        run_start = np.flatnonzero(np.concatenate([[True], ids[grouped][1:] != ids[grouped][:-1]]))
        runs = np.diff(np.concatenate([run_start, [len(ids)]]))
        occurrence = np.empty(len(ids), dtype=np.int64)
        occurrence[grouped] = np.arange(len(ids), dtype=np.int64) - np.repeat(run_start, runs)
        keep[partly] = occurrence >= remove[partly]
    return keep


def segment(value: Sequence[Any]) -> Segment:
    """A segment from its stored form ``[world, steps]`` or ``[world, steps, mix]``."""
    if not 2 <= len(value) <= 3:
        raise ConfigError(f"a resume segment is [world_size, steps] or [world_size, steps, mix], got {value!r}")
    mix = value[2] if len(value) == 3 else None
    if mix is not None and not isinstance(mix, dict):
        raise ConfigError(f"the mix of resume segment {value!r} is not a settings mapping")
    return int(value[0]), int(value[1]), mix


def stored(segments: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """Segments in their JSON form: two numbers, or three with the mix of a part that differs."""
    out: list[list[Any]] = []
    for world, steps, mix in map(segment, segments):
        out.append([world, steps] if mix is None else [world, steps, mix])
    return out


def same_mix(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether two recorded mixes are the same settings (None: the running one)."""
    return mix_key(a) == mix_key(b)


def mix_key(mix: dict[str, Any] | None) -> str:
    """A stable text for a mix (memo and cache keys)."""
    return "" if mix is None else json.dumps(mix, sort_keys=True, default=str)


def relative(segments: Sequence[Sequence[Any]], saved_mix: dict[str, Any], own_mix: dict[str, Any]) -> list[Segment]:
    """Segments of a state saved under ``saved_mix`` as seen by a planner running ``own_mix``: a part
    without a recorded mix ran the saver's mix; a part whose mix is the running one records none."""
    out: list[Segment] = []
    for world, steps, mix in map(segment, segments):
        mix = saved_mix if mix is None else mix
        out.append((world, steps, None if mix_key(mix) == mix_key(own_mix) else mix))
    return out


__all__ = ["Segment", "multiset_keep", "multiset_minus", "relative", "same_mix", "segment", "stored"]
