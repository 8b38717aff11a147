"""A Megatron blend known by its identity alone, and what is left of a new blend after a mix change.

A blend's identity (:attr:`~tokenmill.data.blending.BlendedDataset.mix`) is its settings (normalized
weights and size, or exhaustive counts) and each member's key. That is enough to make its
index arrays again (:class:`BlendDraw`), so a resume can work out what an earlier blend served
without the earlier blend's member datasets (a member may have been retired since).

The greedy serves each member's samples in order (sample ``k`` of a member is its ``k``-th
appearance), so what any run of blends served of a member is a prefix: its first ``s`` samples.
When the blend changes to one that draws ``c`` samples of that member, what is left of the member is
samples ``s .. c - 1`` (none if ``c <= s``): nothing served is served again, a member the new blend
lacks stops, a new member starts at its first sample. :func:`rest_positions` interleaves what is
left of every member in proportion (megatron-core's exhaustive greedy over the counts left), as
positions of the new blend, so the new blend's own ``get_batch`` serves them. Members are matched by
key (:mod:`~tokenmill.data.blend_members`): keep a member's dataset the same (store, settings,
``num_samples``) across a change, or its samples are another member's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tokenmill.cache import CacheLike, array_cache
from tokenmill.data.blending import blend_arrays, blend_fingerprint, build_exhaustive_blending_indices
from tokenmill.errors import ConfigError


class BlendDraw:
    """The index arrays of a blend made from its identity (no member datasets needed, so no batches)."""

    def __init__(self, mix: Mapping[str, Any], cache: CacheLike = True) -> None:
        if not isinstance(mix, Mapping) or not {"blend", "datasets"} <= set(mix):
            raise ConfigError(f"a blend mix is {{'blend': settings, 'datasets': member keys}}, got {mix!r}")
        self.mix = {"blend": dict(mix["blend"]), "datasets": [str(x) for x in mix["datasets"]]}
        self.cache = cache
        self.dataset_index, self.dataset_sample_index = blend_arrays(self.mix["blend"], cache)

    @property
    def members(self) -> list[str]:
        """Each member's key, in member order."""
        return list(self.mix["datasets"])

    def __len__(self) -> int:
        return int(self.dataset_index.shape[0])

    def fingerprint(self) -> str:
        """The blend's fingerprint (equal to the :class:`BlendedDataset`'s of the same identity)."""
        return blend_fingerprint(self.mix)

    def describe(self) -> str:
        """Short name for messages."""
        return f"blend {self.fingerprint()[:12]} of {len(self.members)} datasets"

    def get_batch(self, sample_ids: Any) -> dict[str, Any]:
        """A blend known by its identity has no member datasets to read."""
        raise ConfigError(f"{self.describe()} is known by its settings only and serves no rows")


def served_counts(draw: BlendDraw | Any, positions: np.ndarray) -> dict[str, int]:
    """Samples of each member (by key) the blend positions ``positions`` hold."""
    members = draw.mix["datasets"]
    counts = np.bincount(np.asarray(draw.dataset_index)[np.asarray(positions, dtype=np.int64)],
                         minlength=len(members))
    out: dict[str, int] = {}
    for fingerprint, count in zip(members, counts.tolist(), strict=True):
        out[fingerprint] = out.get(fingerprint, 0) + int(count)
    return out


def add_counts(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """Per-member counts summed."""
    return {k: int(a.get(k, 0)) + int(b.get(k, 0)) for k in {*a, *b}}


def rest_positions(draw: BlendDraw | Any, served: Mapping[str, int], cache: CacheLike = True) -> np.ndarray:
    """Positions of ``draw``'s blend that serve what is left of it after ``served`` (samples per member
    key), each member's left samples in order, interleaved in proportion (module docstring)."""
    members = list(draw.mix["datasets"])
    index = np.asarray(draw.dataset_index)
    drawn = np.bincount(index, minlength=len(members)).astype(np.int64)
    first = np.array([int(served.get(fp, 0)) for fp in members], dtype=np.int64)
    left = np.maximum(drawn - first, 0)
    live = np.flatnonzero(left > 0)
    if not len(live):
        return np.zeros(0, dtype=np.int64)

    def build() -> dict[str, np.ndarray]:
        choice, inner = build_exhaustive_blending_indices(left[live].tolist())
        positions = np.empty(len(choice), dtype=np.int64)
        for j, member in enumerate(live.tolist()):
            where = np.flatnonzero(choice == j)
            positions[where] = np.flatnonzero(index == member)[first[member] + inner[where]]
        return {"positions": positions}

    key = {"blend": draw.mix["blend"], "datasets": members, "served": first.tolist()}
    return array_cache(cache).get_or_build("blend-rest", key, build).arrays["positions"]


__all__ = ["BlendDraw", "add_counts", "rest_positions", "served_counts"]
