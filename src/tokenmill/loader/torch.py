"""PyTorch adapter (``pip install tokenmill[torch]``): batches as tensors through a DataLoader.

:class:`TorchBatches` is an ``IterableDataset``: DataLoader worker ``w`` of ``k`` builds the
stream positions ``w, w+k, w+2k, ...`` and DataLoader's round-robin over workers puts them back in
stream order, so the batches come out the same, in the same order, for any ``num_workers``.
:class:`StatefulLoader` wraps the DataLoader and remembers the position of the last batch it
handed out, so ``state_dict()`` resumes exactly there no matter how far workers prefetched.
Rank and world size come from ``torch.distributed`` when it is initialized and they are not given
(what ``torchrun`` sets up).

Importing this module imports torch; the rest of tokenmill never does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from tokenmill._core.optional import require
from tokenmill.batching.collate import CollateOptions
from tokenmill.batching.config import BatchConfig
from tokenmill.cache import CacheLike
from tokenmill.loader.iterator import BatchIterator, Collate
from tokenmill.loader.make import Dataset, make_batches

torch = require("torch", extra="torch", needed_by="tokenmill.loader (PyTorch batches)")
require("torch.utils.data", extra="torch", needed_by="tokenmill.loader (PyTorch batches)")


def to_tensors(obj: Any) -> Any:
    """numpy arrays (in dicts, tuples, lists) as torch tensors sharing their memory; the rest as is."""
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            return obj
        return torch.from_numpy(np.ascontiguousarray(obj) if obj.flags.writeable else np.array(obj))
    if isinstance(obj, dict):
        return {k: to_tensors(v) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return tuple(to_tensors(v) for v in obj)
    if isinstance(obj, list):
        return [to_tensors(v) for v in obj]
    return obj


def rank_and_world(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """Fill in missing rank/world size from torch.distributed (else 0 and 1)."""
    if rank is not None and world_size is not None:
        return rank, world_size
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return (dist.get_rank() if rank is None else rank, dist.get_world_size() if world_size is None else world_size)
    return (0 if rank is None else rank, 1 if world_size is None else world_size)


def _identity(batch: Any) -> Any:
    return batch


class TorchBatches(torch.utils.data.IterableDataset):
    """One rank's batches from a position on, as tensors; worker-count independent.

    Use with ``DataLoader(TorchBatches(...), batch_size=None, num_workers=k)``. With
    ``with_position`` every item is ``((epoch, step), batch)``.
    """

    def __init__(
        self, batches: BatchIterator, *, start: tuple[int, int] | None = None, with_position: bool = False
    ) -> None:
        super().__init__()
        self.batches = batches
        self.start = start if start is not None else (batches.epoch, batches.step)
        self.with_position = with_position

    def __iter__(self) -> Iterator[Any]:
        info = torch.utils.data.get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        epoch, step = self.start
        for position in self.batches.positions(epoch, step, stride=workers, offset=worker):
            batch = to_tensors(self.batches.batch_at(*position))
            yield (position, batch) if self.with_position else batch


class StatefulLoader:
    """A DataLoader over one rank's batches with ``state_dict``/``load_state_dict`` that resume exactly.

    Each ``for`` loop creates a DataLoader starting at the current position (the rest of the
    epoch, or forever when the iterator is infinite); ``len()`` is the number of batches in the
    current epoch.
    """

    def __init__(
        self,
        batches: BatchIterator,
        *,
        num_workers: int = 0,
        pin_memory: bool = False,
        prefetch_factor: int | None = None,
        timeout: float = 0,
        multiprocessing_context: Any = None,
    ) -> None:
        if batches.update_freq != 1:
            raise ValueError("StatefulLoader yields single batches; group them for update_freq in the training loop")
        self.batches = batches
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.prefetch_factor = prefetch_factor
        self.timeout = timeout
        self.multiprocessing_context = multiprocessing_context

    def __len__(self) -> int:
        return self.batches.num_steps()

    @property
    def epoch(self) -> int:
        return self.batches.epoch

    def _loader(self) -> torch.utils.data.DataLoader:
        self.batches.plan()  # computed (or mapped) here once, before workers start
        extra: dict[str, Any] = {}
        if self.num_workers > 0:
            extra["prefetch_factor"] = self.prefetch_factor or 2
            extra["multiprocessing_context"] = self.multiprocessing_context
        return torch.utils.data.DataLoader(
            TorchBatches(self.batches, with_position=True),
            batch_size=None,
            num_workers=self.num_workers,
            pin_memory=self.pin_memory,
            collate_fn=_identity,
            timeout=self.timeout,
            **extra,
        )

    def _stream(self) -> Iterable[Any]:
        """((epoch, step), batch) pairs: through a DataLoader when it adds something (workers, pinned
        memory), else straight from this process's iterator (the same batches, without DataLoader's
        per-batch bookkeeping)."""
        if self.num_workers == 0 and not self.pin_memory:
            self.batches.plan()
            return TorchBatches(self.batches, with_position=True)
        return self._loader()

    def __iter__(self) -> Iterator[Any]:
        start_epoch = self.batches.epoch
        for (epoch, step), batch in self._stream():
            self.batches.seek(int(epoch), int(step) + 1)
            self.batches.consumed += 1
            yield batch
        if not self.batches.infinite and self.batches.epoch == start_epoch:
            self.batches.set_epoch(start_epoch + 1)

    def state_dict(self) -> dict[str, Any]:
        """Position after the last batch handed out (see :meth:`BatchIterator.state_dict`)."""
        return self.batches.state_dict()

    def load_state_dict(self, state: dict[str, Any], *, allow_mix_change: bool = False) -> None:
        """Resume there (:meth:`BatchIterator.load_state_dict`; ``allow_mix_change``: under another mix)."""
        self.batches.load_state_dict(state, allow_mix_change=allow_mix_change)


def make_loader(
    dataset: Dataset,
    config: BatchConfig | None = None,
    *,
    rank: int | None = None,
    world_size: int | None = None,
    collate: str | Collate | None = "fairseq",
    collate_options: CollateOptions | None = None,
    infinite: bool = False,
    cache: CacheLike = True,
    num_workers: int = 0,
    pin_memory: bool = False,
    prefetch_factor: int | None = None,
    multiprocessing_context: Any = None,
) -> StatefulLoader:
    """Batches of ``dataset`` (any dataset :func:`~tokenmill.loader.make.make_batches` takes) for this
    process's rank as tensors through a DataLoader.

    Rank and world size default to torch.distributed's (0 and 1 when it is not initialized).
    """
    rank, world_size = rank_and_world(rank, world_size)
    batches = make_batches(dataset, config, rank=rank, world_size=world_size, collate=collate,
                           collate_options=collate_options, infinite=infinite, cache=cache)
    return StatefulLoader(
        batches,
        num_workers=num_workers,
        pin_memory=pin_memory,
        prefetch_factor=prefetch_factor,
        multiprocessing_context=multiprocessing_context,
    )
