"""What a planner can do beyond planning an epoch, declared as protocols instead of probed by name.

The batch iterator (:class:`~tokenmill.loader.iterator.BatchIterator`) asks a planner, with
``isinstance(planner, Elastic)`` and the like, whether it can re-plan an epoch for another world size,
whether it counts Megatron's consumed samples, which settings name its plans, and which world size it was
made for. A planner that has the methods has the ability (``runtime_checkable``): nothing to inherit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Elastic(Protocol):
    """Re-plans the rest of an epoch begun at other world sizes (elastic resume)."""

    def for_world(self, world_size: int) -> Any:
        """The same planner for ``world_size`` ranks."""

    def plan_after(self, epoch: int, segments: Sequence[tuple[int, int]]) -> Any:
        """The plan of what ``segments`` ((world size, steps) each) left of ``epoch``."""


@runtime_checkable
class CountsSamples(Protocol):
    """Knows Megatron's global ``consumed_samples`` at a position (GPT samples)."""

    def consumed_samples(self, epoch: int, segments: Sequence[tuple[int, int]], step: int) -> int:
        """``consumed_samples`` at (epoch, step) after ``segments``."""


@runtime_checkable
class NamesSettings(Protocol):
    """Names the settings its plans depend on (what a resumed state is compared with, field by field)."""

    plan_settings: Mapping[str, Any]


@runtime_checkable
class MadeForWorld(Protocol):
    """Was made for a number of ranks (an iterator over it must be for the same number)."""

    world_size: int


@runtime_checkable
class ChangesMix(Protocol):
    """Serves a mix of sources that a resumed state may change (:mod:`tokenmill.batching.mixes`)."""

    @property
    def mix(self) -> dict[str, Any]:
        """The selection's settings by name."""
        ...

    def for_mix(self, mix: dict[str, Any] | None) -> Any:
        """The same planner serving ``mix``."""
        ...


@runtime_checkable
class MixInData(Protocol):
    """Its data are the mix (a Megatron blend): a state saved under another mix records other data."""

    def data_fingerprint(self, mix: dict[str, Any]) -> str:
        """The data fingerprint of a state saved under ``mix``."""
        ...


@runtime_checkable
class Scheduled(Protocol):
    """Plans an epoch from the global step it begins at (a mix that follows a weights schedule)."""

    def for_world(self, world_size: int) -> Any:
        """The same planner for ``world_size`` ranks."""

    def plan_scheduled(self, epoch: int, segments: Sequence[Sequence[Any]], base: int) -> Any:
        """The plan of ``epoch`` begun at global step ``base``, after ``segments`` at other world sizes."""


__all__ = ["ChangesMix", "CountsSamples", "Elastic", "MadeForWorld", "MixInData", "NamesSettings", "Scheduled"]
