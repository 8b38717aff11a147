"""A sampled mix whose weights follow the training step (:mod:`tokenmill.data.mix_schedule`), planned as a
chain of mix segments.

An epoch that starts at global step ``base`` runs its first part under the weights in force at
``base``; where the schedule's weights change (at most once per ``schedule_every`` steps), the part
ends and the rest of the epoch is re-planned under the new mix like a mix change at resume
(:meth:`~tokenmill.batching.epochs.EpochPlanner.plan_after`: the new draw less what was served), and
so on to the end of the epoch. The epoch's plan (:class:`ScheduledPlan`) is these parts one after the
other. Everything is a pure function of (data, settings, epoch, base step, world-size segments): a
state needs only the position and the step the epoch started at, and resumes exactly, also at another
world size (earlier parts at other world sizes are walked the same way, then the rest is cut for this
one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tokenmill.batching.epochs import EpochPlanner, served_by
from tokenmill.batching.mixes import relative, segment
from tokenmill.batching.plan import PlanStats
from tokenmill.batching.scheduled_stats import Slots, scheduled_stats
from tokenmill.cache import fingerprint
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import ConfigError


class ScheduledPlan:
    """One epoch as parts run one after the other: ``(plan, steps)`` each, the plan of what the parts
    before left under that part's mix."""

    def __init__(self, parts: list[tuple[Any, int]], world_size: int,
                 earlier: list[tuple[Any, int]] | None = None, *, first_step: int = 0,
                 slots: Slots | None = None) -> None:
        self.parts = parts
        self.world_size = world_size
        self.earlier = list(earlier or [])
        """``(plan, steps)`` of the parts run before, at other world sizes (resume segments)."""
        self.starts = np.cumsum([0] + [steps for _, steps in parts])
        self.first_step = first_step
        """The global training step the first of ``parts`` begins at (its weights are the schedule's there)."""
        self._slots = slots
        self._stats: PlanStats | None = None

    @property
    def part_starts(self) -> list[int]:
        """The global training step each of ``parts`` begins at."""
        return [self.first_step + int(s) for s in self.starts[:-1]]

    @property
    def stats(self) -> PlanStats:
        """What the parts' steps run, as other plans' ``stats`` (:mod:`tokenmill.batching.scheduled_stats`)."""
        if self._stats is None:
            if self._slots is None:
                raise ConfigError("this scheduled plan was made without its planner's batch_slots: no stats")
            self._stats = scheduled_stats(self.parts, self.world_size, self._slots)
        return self._stats

    def served(self, step: int | None = None) -> np.ndarray:
        """Dataset ids the epoch served before ``step`` of this world size's parts (None: the whole epoch),
        the earlier parts' included, copies included (for the consumption ledger)."""
        step = self.num_steps if step is None else step
        ran = list(self.earlier)
        for (plan, take), start in zip(self.parts, self.starts[:-1].tolist(), strict=True):
            if step > start:
                ran.append((plan, min(take, step - start)))
        return served_by(ran)

    @property
    def num_steps(self) -> int:
        return int(self.starts[-1])

    def indices(self, step: int, rank: int) -> Any:
        """The batch of rank ``rank`` at ``step`` of the epoch (the part holding that step)."""
        if not 0 <= step < self.num_steps:
            raise IndexError(f"step {step} outside a scheduled epoch of {self.num_steps} steps")
        part = int(np.searchsorted(self.starts, step, side="right")) - 1
        return self.parts[part][0].indices(step - int(self.starts[part]), rank)

    def rank_batches(self, rank: int) -> list[Any]:
        """Every batch of one rank, in step order (for inspection and tests)."""
        return [self.indices(t, rank) for t in range(self.num_steps)]


class ScheduledPlanner:
    """The ``planner=`` of a batch iterator over a sampled mix with a weights schedule. ``base`` plans one
    mix (any epoch planner over a :class:`~tokenmill.batching.sampled.SampledMix`); ``sampling`` holds
    the schedule. The iterator asks :meth:`plan_scheduled` with the step its epoch began at."""

    def __init__(self, base: EpochPlanner, sampling: SamplingConfig) -> None:
        schedule = sampling.schedule
        if schedule is None:
            raise ConfigError("a scheduled mix needs SamplingConfig(weights_schedule=[...])")
        self.base = base.for_mix(self._mix_of(base, sampling.at_step(0)))
        self.sampling = sampling
        self.schedule = schedule
        self.world_size = base.world_size
        self.plan_settings = {**base.plan_settings, "selection": self._mix_of(base, sampling)}
        self.fingerprint = fingerprint({"base": self.base.fingerprint, "schedule": sampling.to_dict()})
        self._memo: dict[tuple, ScheduledPlan] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"base": self.base, "sampling": self.sampling}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["base"], state["sampling"])  # type: ignore[misc]

    @staticmethod
    def _mix_of(base: EpochPlanner, sampling: SamplingConfig) -> dict[str, Any]:
        return {**base.plan_settings["selection"], "sampling": sampling.to_dict()}

    def mix_at(self, step: int) -> dict[str, Any]:
        """The selection settings in force from global step ``step``."""
        return self._mix_of(self.base, self.sampling.at_step(step))

    def for_world(self, world_size: int) -> ScheduledPlanner:
        """The same schedule for another number of ranks."""
        return self if world_size == self.world_size else ScheduledPlanner(self.base.for_world(world_size),
                                                                           self.sampling)

    def plan_scheduled(self, epoch: int, segments: Sequence[Sequence[Any]], base: int) -> ScheduledPlan:
        """The plan of ``epoch`` begun at global step ``base`` (after ``segments``, earlier parts of it at other
        world sizes: ``(world_size, steps)`` each): the parts this world size runs, to the epoch's end."""
        key = (epoch, base, tuple(tuple(segment(x)[:2]) for x in segments))
        if key in self._memo:
            return self._memo[key]
        ran: list[tuple[int, int, dict[str, Any]]] = []  # every part so far: (world size, steps, mix)
        step = base
        earlier: list[tuple[Any, int]] = []
        for world, steps, _ in map(segment, segments):
            step = self._walk(epoch, world, steps, step, ran, earlier)
        parts: list[tuple[Any, int]] = []
        self._walk(epoch, self.world_size, None, step, ran, parts)
        return self._keep(key, ScheduledPlan(parts, self.world_size, earlier, first_step=step,
                                             slots=self.base.batch_slots))  # type: ignore[attr-defined]

    def _keep(self, key: tuple, plan: ScheduledPlan) -> ScheduledPlan:
        """Keep the plans of the last few (epoch, base, segments) asked for (asked on every batch)."""
        if len(self._memo) >= 4:
            self._memo.pop(next(iter(self._memo)))
        self._memo[key] = plan
        return plan

    def _walk(self, epoch: int, world: int, steps: int | None, step: int, ran: list, parts: list) -> int:
        """Run parts at ``world`` from global ``step`` for ``steps`` steps (None: to the epoch's end), adding
        each part to ``ran`` (and its plan to ``parts``); returns the global step after them."""
        left = steps
        while left is None or left > 0:
            mix = self.mix_at(step)
            planner = self.base.for_mix(mix).for_world(world)
            plan = planner.plan_after(epoch, relative(ran, {}, mix)) if ran else planner.plan(epoch)
            change = self.schedule.next_change(step)
            room = plan.num_steps if change is None else min(plan.num_steps, change - step)
            take = room if left is None else min(left, room)
            if left is not None and take < left and take == plan.num_steps:
                raise ConfigError(f"resume segments do not fit epoch {epoch}: a part at world size {world} ran "
                                  f"{steps} steps but the schedule's epoch has only {take} left there")
            parts.append((plan, take))
            step += take
            if take == plan.num_steps:  # the epoch ends in this part
                break
            ran.append((world, take, mix))
            left = None if left is None else left - take
        return step


__all__ = ["ScheduledPlan", "ScheduledPlanner"]
