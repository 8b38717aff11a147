"""Megatron's consumed-samples batching of GPT samples and blends, as a planner of the batch iterator.

Megatron-LM's ``MegatronPretrainingSampler`` walks the dataset's samples ``0, 1, 2, ...`` from
``consumed_samples`` in chunks of ``micro_batch_size * data_parallel_size``; rank ``r`` takes
the ``r``-th ``micro_batch_size`` slice of every chunk, and a training step takes
``global_batch_size / (micro_batch_size * data_parallel_size)`` such micro batches. So the
position is one global number, the samples consumed, and any world size can go on from it.

Here a plan step is one micro batch per rank (what Megatron's data iterator yields), so the
position the iterator keeps, (epoch, step) plus the (world size, steps) segments run at other
world sizes, is that number in a few integers: resuming at another world size serves the samples
after it, each once, with equal steps on every rank. A pass serves the whole global batches the
dataset holds (Megatron trains whole steps; the tail shorter than one global batch is not served)
and every pass repeats the same order (the GPT index already spans the epochs it was asked for).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from tokenmill.batching.config import settings_from_dict
from tokenmill.batching.epochs import remember
from tokenmill.cache import fingerprint
from tokenmill.errors import ConfigError

GPT_PLAN_VERSION = 1


class GPTSource(Protocol):
    """What the planner needs of a GPT dataset or blend: its length and identity, and batches of rows."""

    def __len__(self) -> int: ...

    def fingerprint(self) -> str: ...

    def describe(self) -> str: ...

    def get_batch(self, sample_ids: Any) -> dict[str, Any]: ...


@dataclass(frozen=True)
class GPTBatchConfig:
    """Megatron's batch settings: samples per optimizer step (all ranks) and per rank per micro batch."""

    global_batch_size: int
    """Samples per training step over all data-parallel ranks (Megatron's --global-batch-size)."""
    micro_batch_size: int = 1
    """Samples per rank per forward pass (Megatron's --micro-batch-size)."""

    def __post_init__(self) -> None:
        for name in ("global_batch_size", "micro_batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
        if self.global_batch_size % self.micro_batch_size:
            raise ConfigError(
                f"global_batch_size={self.global_batch_size} is not a multiple of "
                f"micro_batch_size={self.micro_batch_size}"
            )

    def check_world(self, world_size: int) -> int:
        """Micro batches per rank per step at ``world_size``; a ConfigError naming the fix if it does not divide."""
        chunk = self.micro_batch_size * world_size
        if world_size < 1 or self.global_batch_size % chunk:
            raise ConfigError(
                f"global_batch_size={self.global_batch_size} does not divide into micro batches of "
                f"micro_batch_size={self.micro_batch_size} on world_size={world_size} ranks "
                f"({self.micro_batch_size} x {world_size} = {chunk}); choose a global_batch_size that is a "
                f"multiple of {chunk}, or a world size / micro_batch_size whose product divides it"
            )
        return self.global_batch_size // chunk

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (what a saved iterator state records)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> GPTBatchConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error naming them."""
        return settings_from_dict(cls, values, "GPT batch")


@dataclass(frozen=True)
class GPTPlan:
    """Samples ``start ..`` in chunks of ``micro * world_size``: rank r takes slice r of each chunk."""

    epoch: int
    world_size: int
    micro_batch_size: int
    start: int
    """Samples consumed before this plan's first step (in this pass)."""
    num_steps: int
    """Micro batches per rank."""
    order: np.ndarray | None = field(default=None, compare=False, repr=False)
    """The pass's samples in the order they are served (None: ``0, 1, 2, ...``; after a mix change,
    the positions of the new blend left to serve, :mod:`tokenmill.data.blend_mix`)."""

    def indices(self, step: int, rank: int) -> np.ndarray:
        """Sample ids rank ``rank`` runs at ``step`` (Megatron's slice of the chunk)."""
        if not 0 <= step < self.num_steps or not 0 <= rank < self.world_size:
            raise IndexError(f"step {step} / rank {rank} outside a plan of {self.num_steps} steps x {self.world_size}")
        first = self.start + (step * self.world_size + rank) * self.micro_batch_size
        if self.order is not None:
            return np.asarray(self.order[first : first + self.micro_batch_size], dtype=np.int64)
        return np.arange(first, first + self.micro_batch_size, dtype=np.int64)

    def served_after(self, steps: int) -> np.ndarray:
        """Sample ids the first ``steps`` steps of this plan served (all ranks)."""
        stop = self.consumed(steps)
        return np.arange(self.start, stop, dtype=np.int64) if self.order is None else np.asarray(
            self.order[self.start : stop], dtype=np.int64)

    def consumed(self, step: int) -> int:
        """Samples of the pass consumed once every rank has run ``step`` micro batches of this plan."""
        return self.start + step * self.world_size * self.micro_batch_size

    def rank_batches(self, rank: int) -> list[np.ndarray]:
        """Every batch of one rank, in step order (for inspection and tests)."""
        return [self.indices(t, rank) for t in range(self.num_steps)]


def plan_fingerprint(data: str, config: GPTBatchConfig, world_size: int) -> str:
    """The fingerprint of the GPT plans of data of fingerprint ``data`` under ``config`` on ``world_size`` ranks."""
    return fingerprint({"data": data, "config": config.to_dict(), "world": world_size, "v": GPT_PLAN_VERSION})


class GPTPlanner:
    """The ``planner=`` of a :class:`~tokenmill.loader.BatchIterator` over a GPT dataset or blend.

    Plans are closed-form (no arrays), so nothing is cached; ``fingerprint`` identifies the data,
    the settings and the world size."""

    def __init__(self, source: GPTSource, config: GPTBatchConfig, *, world_size: int = 1) -> None:
        self.source = source
        self.config = config
        self.world_size = world_size
        self.micro_steps = config.check_world(world_size)
        self.total = len(source) // config.global_batch_size * config.global_batch_size
        if self.total == 0:
            raise ConfigError(
                f"{source.describe()} has {len(source)} samples, fewer than one global batch of "
                f"{config.global_batch_size}; build it with more num_samples"
            )
        self._data = source.fingerprint()
        self._plans: dict[int, GPTPlan] = {}

    @property
    def fingerprint(self) -> str:
        """Data, settings and world size (a saved state must match this, or elastically its world's)."""
        return plan_fingerprint(self._data, self.config, self.world_size)

    def for_world(self, world_size: int) -> GPTPlanner:
        """The same planner for another number of ranks (the global batch must divide, see ``check_world``)."""
        if world_size == self.world_size:
            return self
        return type(self)(self.source, self.config, world_size=world_size)

    def _plan_from(self, epoch: int, start: int, order: np.ndarray | None = None) -> GPTPlan:
        """The pass from sample ``start`` of ``order`` (None: the source's own order) on."""
        chunk = self.config.micro_batch_size * self.world_size
        batch = self.config.global_batch_size
        total = self.total if order is None else len(order) // batch * batch  # whole global batches
        left = total - start
        if left % chunk:
            raise ConfigError(
                f"cannot go on at world_size={self.world_size}: {start} samples of the pass are consumed and "
                f"the {left} left do not split into micro batches of {self.config.micro_batch_size} on "
                f"{self.world_size} ranks; resume from a state saved at a step boundary (consumed samples a "
                f"multiple of global_batch_size={self.config.global_batch_size})"
            )
        return GPTPlan(epoch, self.world_size, self.config.micro_batch_size, start, left // chunk, order)

    def plan(self, epoch: int) -> GPTPlan:
        """A whole pass: every whole global batch of the dataset, in sample order."""
        if epoch not in self._plans:  # asked several times per micro batch by the iterator and the loader
            remember(self._plans, epoch, self._plan_from(epoch, 0))
        return self._plans[epoch]

    def consumed_after(self, segments: Sequence[tuple[int, int]]) -> int:
        """Samples of the pass consumed by ``segments`` ((world size, micro steps) each, in order)."""
        consumed = 0
        for index, (world, steps) in enumerate(segments):
            world, steps = int(world), int(steps)
            self.config.check_world(world)
            chunk = self.config.micro_batch_size * world
            if steps < 0 or consumed + steps * chunk > self.total:
                raise ConfigError(
                    f"resume segments {list(segments)} do not fit the pass: part {index} ran {steps} steps at "
                    f"world size {world} after {consumed} of its {self.total} samples"
                )
            consumed += steps * chunk
        return consumed

    def plan_after(self, epoch: int, segments: Sequence[tuple[int, int]]) -> GPTPlan:
        """The rest of the pass for this planner's ranks after ``segments`` ran at other world sizes."""
        return self._plan_from(epoch, self.consumed_after(segments))

    def consumed_samples(self, epoch: int, segments: Sequence[tuple[int, int]], step: int) -> int:
        """Megatron's ``consumed_samples`` at (epoch, step) of this world size after ``segments``."""
        chunk = self.config.micro_batch_size * self.world_size
        return (epoch - 1) * self.total + self.consumed_after(segments) + step * chunk

    def start_at(self, consumed_samples: int) -> tuple[int, int]:
        """(epoch, step) of this world size where a Megatron run with ``consumed_samples`` goes on."""
        chunk = self.config.micro_batch_size * self.world_size
        if consumed_samples < 0 or consumed_samples % chunk:
            raise ConfigError(
                f"consumed_samples={consumed_samples} is not a multiple of micro_batch_size x world_size = {chunk}"
            )
        epoch, within = divmod(consumed_samples, self.total)
        return epoch + 1, within // chunk


def collate_gpt(source: GPTSource, ids: np.ndarray) -> dict[str, Any]:
    """A micro batch of rows: ``tokens``, ``labels``, ``loss_mask``, ``position_ids`` (micro, seq_length),
    flat ``cu_seqlens``/``max_seqlen`` (and ``dataset_id`` for a blend), gathered in one read."""
    return source.get_batch(ids)


__all__ = ["GPTBatchConfig", "GPTPlan", "GPTPlanner", "GPTSource", "collate_gpt", "plan_fingerprint"]
