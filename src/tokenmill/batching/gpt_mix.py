"""Mix changes at resume for Megatron blends: the GPT planner of a blend whose weights or members change.

A blend's mix is its identity (:attr:`~tokenmill.data.blending.BlendedDataset.mix`: settings and
member keys, :mod:`~tokenmill.data.blend_members`). A pass may run in parts (resume segments
``(world_size, steps[, mix])``, see :mod:`tokenmill.batching.mixes`). Between two parts of one mix the
pass goes on where it was, in Megatron's consumed-samples order (an elastic resume). Where the mix
changes, the rest of the pass is what the new blend draws less what the parts before served, member by member
(:func:`~tokenmill.data.blend_mix.rest_positions`): no sample is served twice, a retired member
stops, a new member starts, and the rest is cut into whole global batches dealt in Megatron's chunks
(every rank runs the same micro batches). Plans stay closed-form apart from the rest's order, which
is cached; a pure function of (blends, settings, epoch, segments, world size).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokenmill.batching.epochs import remember
from tokenmill.batching.gpt_plan import GPTBatchConfig, GPTPlan, GPTPlanner, GPTSource
from tokenmill.batching.mixes import mix_key, same_mix, segment, stored
from tokenmill.data.blend_mix import BlendDraw, add_counts, rest_positions, served_counts
from tokenmill.data.blending import BlendedDataset, blend_fingerprint
from tokenmill.errors import ConfigError


class BlendPlanner(GPTPlanner):
    """:class:`GPTPlanner` of a blend (a :class:`BlendedDataset`, or a :class:`BlendDraw` of an earlier
    mix) that resumes a state saved under another blend when asked (``allow_mix_change``)."""

    def __init__(self, source: GPTSource, config: GPTBatchConfig, *, world_size: int = 1) -> None:
        super().__init__(source, config, world_size=world_size)
        self._mixes: dict[str, BlendPlanner] = {}
        self._after: dict[int, Any] = {}

    @property
    def mix(self) -> dict[str, Any]:
        """The blend's identity: settings and member keys."""
        return dict(self.source.mix)  # type: ignore[attr-defined]

    @property
    def plan_settings(self) -> dict[str, Any]:
        """The batch settings and the blend (``selection``): what a resumed state is compared with."""
        return {**self.config.to_dict(), "selection": self.mix}

    def data_fingerprint(self, mix: dict[str, Any]) -> str:
        """The data fingerprint a state saved under ``mix`` records (a blend's data are its mix)."""
        return blend_fingerprint(mix)

    def for_mix(self, mix: dict[str, Any] | None) -> BlendPlanner:
        """The same planner over the blend ``mix`` names (known by its identity: it plans, serves no rows)."""
        if mix is None or same_mix(mix, self.mix):
            return self
        key = mix_key(mix)
        if key not in self._mixes:
            self._mixes[key] = BlendPlanner(BlendDraw(mix, self.source.cache), self.config,  # type: ignore[attr-defined]
                                            world_size=self.world_size)
        return self._mixes[key]

    def plan_after(self, epoch: int, segments: Sequence[Sequence[Any]]) -> GPTPlan:
        """The rest of the pass for this planner's ranks and blend after ``segments`` (module docstring)."""
        return self.chain(epoch, segments)[-1]

    def chain(self, epoch: int, segments: Sequence[Sequence[Any]]) -> list[GPTPlan]:
        """The plan of every part of ``epoch`` after ``segments``, then the running one's (the last)."""
        parts = [segment(x) for x in segments]
        asked = stored(parts)
        if epoch in self._after and self._after[epoch][0] == asked:  # asked for on every micro batch
            return self._after[epoch][1]
        owner = self.for_mix(parts[0][2]).for_world(parts[0][0]) if parts else self
        plans = [owner.plan(epoch)]
        served: dict[str, int] = {}
        for index, (world, steps, mix) in enumerate(parts):
            plan = plans[-1]
            if world != plan.world_size or not 0 <= steps <= plan.num_steps:
                raise ConfigError(
                    f"resume segments {asked} do not fit pass {epoch}: part {index} ran {steps} micro batches at "
                    f"world size {world}, but its plan has {plan.num_steps} at world size {plan.world_size}"
                )
            served = add_counts(served, served_counts(owner.source, plan.served_after(steps)))
            next_world, _, next_mix = parts[index + 1] if index + 1 < len(parts) else (self.world_size, 0, None)
            target = self.for_mix(next_mix).for_world(next_world)
            if same_mix(mix, next_mix):  # the same blend goes on where it was (elastic)
                plans.append(target._plan_from(epoch, plan.consumed(steps), plan.order))
            else:  # the new blend's draw less what was served
                plans.append(target._plan_from(epoch, 0, rest_positions(target.source, served,
                                                                        target.source.cache)))  # type: ignore[attr-defined]
            owner = target
        remember(self._after, epoch, (asked, plans))
        return plans

    def consumed_samples(self, epoch: int, segments: Sequence[Sequence[Any]], step: int) -> int:
        """Samples consumed in all passes up to (epoch, step) after ``segments`` (for the record)."""
        done = sum(int(s[1]) * int(s[0]) for s in segments) * self.config.micro_batch_size
        return (epoch - 1) * self.total + done + step * self.config.micro_batch_size * self.world_size


def gpt_planner(source: GPTSource, config: GPTBatchConfig, *, world_size: int = 1) -> GPTPlanner:
    """The planner of GPT micro batches over ``source``: a blend's can change its mix at resume."""
    kind = BlendPlanner if isinstance(source, BlendedDataset | BlendDraw) else GPTPlanner
    return kind(source, config, world_size=world_size)


__all__ = ["BlendPlanner", "gpt_planner"]
