"""Grain adapter (``pip install tokenmill[grain]``): a tokenmill epoch plan as a Grain data source.

:class:`GrainBatches` is a random-access data source whose records are whole batches: record
``rank * total + t`` is rank ``rank``'s ``t``-th batch from the iterator's position on (over
``epochs`` epochs, each with its own plan). Grain's ``ShardOptions(shard_index=rank,
shard_count=world_size)`` (or ``ShardByJaxProcess``) gives every shard one contiguous block of
records, so shard r reads exactly rank r's batches in order — the numpy
:class:`~tokenmill.loader.BatchIterator`'s stream, through ``grain.DataLoader``, with its worker
processes and its ``get_state``/``set_state`` checkpoints. (Every rank has the same number of
batches per epoch, so the split is exact.)

Static shapes for ``jax.jit``: ``BatchConfig(pad_to_multiple=k)`` keeps widths to a few values,
packed rows (:class:`~tokenmill.batching.packed_pairs.PackedPairPlanner`, ``fixed_width``) have
one width, and ``static_rows`` pads every batch to one row count.

Importing this module imports Grain; the rest of tokenmill never does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tokenmill._core.optional import require
from tokenmill.errors import ConfigError
from tokenmill.loader.iterator import BatchIterator
from tokenmill.loader.layouts import batch_maker, check_layout, pad_rows_to

grain = require("grain.python", extra="grain", needed_by="tokenmill.loader.grain")


READ_OPTIONS = grain.ReadOptions(num_threads=2, prefetch_buffer_size=16)
"""Reader threads and prefetched batches per process (measured: 2 threads ~2x Grain's default 16 here)."""


class GrainBatches:
    """All ranks' batches from the iterator's position on, for ``epochs`` epochs, by record index.

    ``layout``: ``ours`` (the iterator's collate), ``fairseq`` or ``opennmt``. ``static_rows``: pad
    every batch to this many rows (token rows with ``pad_id``, default the dataset's ``<pad>``, or 0
    for OpenNMT-tf ids). Records are plain numpy structures (dicts, tuples, scalars).
    """

    def __init__(
        self,
        batches: BatchIterator,
        *,
        layout: str = "ours",
        epochs: int = 1,
        static_rows: int | None = None,
        pad_id: int | None = None,
    ) -> None:
        if not isinstance(epochs, int) or epochs < 1:
            raise ConfigError(f"epochs must be an integer >= 1, got {epochs!r}")
        if static_rows is not None and (not isinstance(static_rows, int) or static_rows < 1):
            raise ConfigError(f"static_rows must be a positive integer or None, got {static_rows!r}")
        self.batches = batches
        self.layout = check_layout(layout)
        self.start = (batches.epoch, batches.step)
        self.epochs = epochs
        self.static_rows = static_rows
        if pad_id is None:
            opennmt_ids = layout == "opennmt" or (layout == "ours" and batches.collate_name == "opennmt")
            pad_id = 0 if opennmt_ids and batches.collate_options.ids == "opennmt" else batches.dataset.options.pad
        self.pad_id = pad_id
        first_epoch, first_step = self.start
        steps = [batches.num_steps(first_epoch + i) for i in range(epochs)]
        steps[0] -= first_step
        self._ends = np.cumsum(steps, dtype=np.int64)
        """Batches per rank up to the end of each epoch, counted from the start position."""
        self.steps_per_rank = int(self._ends[-1])
        self._batch_at = batch_maker(batches, layout)

    @property
    def world_size(self) -> int:
        return self.batches.world_size

    def __len__(self) -> int:
        return self.world_size * self.steps_per_rank

    def position(self, index: int) -> tuple[int, int, int]:
        """(epoch, step, rank) of record ``index``."""
        if not 0 <= index < len(self):
            raise IndexError(f"record {index} is outside [0, {len(self)})")
        rank, t = divmod(int(index), self.steps_per_rank)
        part = int(np.searchsorted(self._ends, t, side="right"))
        step = t - (int(self._ends[part - 1]) if part else 0) + (self.start[1] if part == 0 else 0)
        return self.start[0] + part, step, rank

    def __getitem__(self, index: int) -> Any:
        epoch, step, rank = self.position(index)
        batch = self._batch_at(epoch, step, rank)
        if self.static_rows is not None:
            batch = pad_rows_to(batch, self.static_rows, self.pad_id)
        return batch

    def __getstate__(self) -> dict[str, Any]:  # Grain's worker processes: everything but the collate closure
        return {k: v for k, v in self.__dict__.items() if k != "_batch_at"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._batch_at = batch_maker(self.batches, self.layout)

    def __repr__(self) -> str:
        # Grain stores this in its checkpoints and refuses a state saved for another source
        return (
            f"GrainBatches(plan={self.batches.planner.fingerprint}, world_size={self.world_size}, "
            f"start={self.start}, epochs={self.epochs}, layout={self.layout!r}, static_rows={self.static_rows})"
        )

    # ---------------------------------------------------------------- loading
    def shard_options(self, rank: int | None = None) -> grain.ShardOptions:
        """Grain's sharding that gives shard ``rank`` (default: the iterator's rank) its batches."""
        rank = self.batches.rank if rank is None else rank
        return grain.ShardOptions(shard_index=rank, shard_count=self.world_size, drop_remainder=False)

    def sampler(self, shard_options: grain.ShardOptions | None = None) -> grain.IndexSampler:
        """Records in order, one pass, sharded by rank; no shuffling (the plan has shuffled)."""
        options = shard_options or self.shard_options()
        if options.shard_count != self.world_size:
            raise ConfigError(
                f"Grain shards over {options.shard_count} processes but the batches were planned for world_size="
                f"{self.world_size}; make the BatchIterator with world_size equal to the number of shards"
            )
        return grain.IndexSampler(len(self), shard_options=options, shuffle=False, num_epochs=1, seed=None)

    def loader(
        self,
        *,
        rank: int | None = None,
        shard_options: grain.ShardOptions | None = None,
        worker_count: int = 0,
        worker_buffer_size: int = 1,
        operations: Sequence[Any] = (),
        read_options: grain.ReadOptions | None = None,
    ) -> grain.DataLoader:
        """A ``grain.DataLoader`` serving rank ``rank``'s batches (``shard_options`` instead: e.g.
        ``grain.ShardByJaxProcess()``); iterate it, and save/restore with ``get_state``/``set_state``.

        ``read_options`` default: :data:`READ_OPTIONS` (2 reader threads, not Grain's 16: a record is a
        whole batch collated by numpy, and 16 threads contending for the GIL halve the rate).
        """
        options = shard_options or self.shard_options(rank)
        return grain.DataLoader(
            data_source=self,
            sampler=self.sampler(options),
            operations=list(operations),
            worker_count=worker_count,
            worker_buffer_size=worker_buffer_size,
            shard_options=options,
            read_options=read_options or READ_OPTIONS,
        )


def grain_loader(
    batches: BatchIterator,
    *,
    layout: str = "ours",
    epochs: int = 1,
    static_rows: int | None = None,
    worker_count: int = 0,
    shard_options: grain.ShardOptions | None = None,
    **loader_options: Any,
) -> grain.DataLoader:
    """``GrainBatches(batches, ...).loader(...)``: a Grain DataLoader of the iterator's rank's batches."""
    source = GrainBatches(batches, layout=layout, epochs=epochs, static_rows=static_rows)
    return source.loader(shard_options=shard_options, worker_count=worker_count, **loader_options)
