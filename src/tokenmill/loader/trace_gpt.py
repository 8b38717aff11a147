"""Trace packed language-model samples (:class:`~tokenmill.data.gpt_dataset.GPTDataset`): each sample's
documents with the token range taken from each, and the input file and line of each document; and back, the
(epoch, step, rank, row) of every sample holding an input line.

A sample is the pieces of consecutive entries of the dataset's document index between two rows of its
sample index (Megatron's layout): the first piece starts at the row's offset, the last ends at the next
row's. The GPT plan is closed-form (samples in order, ``micro * world`` a step), so it inverts in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tokenmill.batching.gpt_plan import GPTBatchConfig
from tokenmill.data.gpt_dataset import GPTDataset
from tokenmill.errors import ConfigError, FormatError
from tokenmill.loader.iterator import gpt_batches
from tokenmill.loader.provenance import Served
from tokenmill.store.layout import provenance_path
from tokenmill.store.provenance import Provenance


@dataclass(frozen=True)
class Piece:
    """Tokens ``[start, stop)`` of stored document ``document``, from ``line`` of input ``file``."""

    document: int
    start: int
    stop: int
    file: str
    line: int


@dataclass(frozen=True)
class TracedSample:
    """One row of a GPT micro batch: its sample id and the document pieces it is packed from."""

    row: int
    sample: int
    pieces: list[Piece]

    def to_dict(self) -> dict[str, Any]:
        return {"row": self.row, "sample": self.sample, "pieces": [dict(p.__dict__) for p in self.pieces]}


def _map(dataset: GPTDataset) -> Provenance:
    path = provenance_path(dataset.dataset.prefix)
    if not path.exists():
        raise FormatError(f"{dataset.dataset.prefix}: no provenance map ({path.name}); run the same tokenmill "
                          "prepare command again (it adds the maps and changes nothing else)")
    return Provenance(path)


def _documents(dataset: GPTDataset, items: np.ndarray) -> np.ndarray:
    """The stored document each sequence ``items`` belongs to (the same number without document boundaries)."""
    bounds = dataset.dataset.document_indices
    return items if bounds is None else np.searchsorted(bounds, items, side="right") - 1


def sample_pieces(dataset: GPTDataset, sample: int) -> list[tuple[int, int, int]]:
    """(stored sequence, token start, token stop) of each piece sample ``sample`` is packed from."""
    row = int(dataset.shuffle_index[sample])
    begin, end = dataset.sample_index[row].astype(np.int64), dataset.sample_index[row + 1].astype(np.int64)
    positions = np.arange(int(begin[0]), int(end[0]) + 1)
    items = dataset.document_index[positions].astype(np.int64)
    starts = np.zeros(len(items), dtype=np.int64)
    stops = dataset.dataset.sizes[items].astype(np.int64)
    starts[0] = begin[1]
    stops[-1] = end[1] + int(dataset.config.add_extra_token)
    return [(int(i), int(a), int(b)) for i, a, b in zip(items, starts, stops, strict=True) if b > a]


def gpt_step(dataset: GPTDataset, config: GPTBatchConfig, epoch: int, step: int, rank: int,
             world_size: int) -> list[TracedSample]:
    """Every row of rank ``rank``'s micro batch at (``epoch``, ``step``) with its document pieces."""
    plan = gpt_batches(dataset, config, rank=rank, world_size=world_size).plan(epoch)
    if not 0 <= step < plan.num_steps:
        raise ConfigError(f"step {step}: epoch {epoch} has {plan.num_steps} micro steps (0 to {plan.num_steps - 1})")
    prov = _map(dataset)
    rows = []
    for row, sample in enumerate(plan.indices(step, rank).tolist()):
        found = sample_pieces(dataset, sample)
        documents = _documents(dataset, np.asarray([p[0] for p in found], dtype=np.int64))
        files, lines = prov.table.locate(prov.numbers_of(documents))
        pieces = [Piece(int(d), a, b, prov.table.name(int(f)), int(n))
                  for d, (_, a, b), f, n in zip(documents.tolist(), found, files, lines, strict=True)]
        rows.append(TracedSample(row, sample, pieces))
    return rows


def gpt_served(dataset: GPTDataset, config: GPTBatchConfig, file: str, line: int, epochs: list[int],
               world_size: int) -> list[Served]:
    """Every (epoch, micro step, rank, row) of a sample holding a piece of line ``line`` of input ``file``."""
    prov = _map(dataset)
    named = prov.table.find(file)
    if not named:
        raise ConfigError(f"--source {file}:{line}: {dataset.dataset.prefix} was not made from a file named {file}")
    document = prov.item_of(prov.table.number_of(named[0], line))
    if document is None:
        return []
    bounds = dataset.dataset.document_indices
    items = np.arange(document, document + 1) if bounds is None else np.arange(bounds[document], bounds[document + 1])
    positions = np.flatnonzero(np.isin(dataset.document_index, items))
    first = dataset.sample_index[:-1, 0].astype(np.int64)
    last = dataset.sample_index[1:, 0].astype(np.int64)
    holding = [np.flatnonzero((first <= p) & (last >= p)) for p in positions.tolist()]
    rows = np.unique(np.concatenate(holding)) if holding else np.zeros(0, np.int64)
    samples = np.empty(len(dataset.shuffle_index), dtype=np.int64)
    samples[dataset.shuffle_index.astype(np.int64)] = np.arange(len(dataset.shuffle_index))
    found = [s for s in samples[rows[rows < len(samples)]].tolist()
             if any(piece[0] in items for piece in sample_pieces(dataset, s))]
    served = []
    for epoch in epochs:
        plan = gpt_batches(dataset, config, world_size=world_size).plan(epoch)
        for sample in found:
            step, within = divmod(sample - plan.start, plan.micro_batch_size * world_size)
            rank, row = divmod(within, plan.micro_batch_size)
            if sample >= plan.start and step < plan.num_steps:
                served.append(Served(epoch, int(step), int(rank), int(row), int(sample)))
    return sorted(served, key=lambda s: (s.epoch, s.step, s.rank, s.row))


__all__ = ["Piece", "TracedSample", "gpt_served", "gpt_step", "sample_pieces"]
