"""Trace packed language-model samples (:class:`~tokenmill.data.gpt_dataset.GPTDataset`): each sample's
documents with the token range taken from each, and the input file and line of each document; and back, the
(epoch, step, rank, row) of every sample holding an input line. Through a Megatron blend
(:class:`~tokenmill.data.blending.BlendedDataset` of GPT datasets) each sample also names the member it is drawn
from and its sample id there; a line is found in every member made from its file.

A sample is the pieces of consecutive entries of the dataset's document index between two rows of its
sample index (Megatron's layout): the first piece starts at the row's offset, the last ends at the next
row's. The GPT plan is closed-form (samples in order, ``micro * world`` a step), so it inverts in one line.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from tokenmill.batching.gpt_plan import GPTBatchConfig, GPTSource
from tokenmill.data.blending import BlendedDataset
from tokenmill.data.gpt_dataset import GPTDataset
from tokenmill.errors import ConfigError, FormatError
from tokenmill.loader.iterator import gpt_batches
from tokenmill.loader.provenance import Served, StorePart, read_items
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
    text: str | None = None
    """The input line as the run read it (only when asked for)."""

    def to_dict(self) -> dict[str, Any]:
        """The fields (``text`` only when it was read)."""
        return {k: v for k, v in self.__dict__.items() if k != "text" or v is not None}


@dataclass(frozen=True)
class TracedSample:
    """One row of a GPT micro batch: its sample id and the document pieces it is packed from; through a blend,
    also the member dataset it comes from (``member``: its place in the blend) and its sample id there."""

    row: int
    sample: int
    pieces: list[Piece]
    store: str | None = None
    """The store (prefix) the pieces are read from: which dataset."""
    member: int | None = None
    """A blend's member the sample comes from (None: not a blend)."""
    member_sample: int | None = None
    """The sample id inside that member (None: not a blend)."""

    def to_dict(self) -> dict[str, Any]:
        """The fields, the pieces as dicts (``member`` and ``member_sample`` only through a blend)."""
        values = {"row": self.row, "sample": self.sample, "store": self.store,
                  "pieces": [p.to_dict() for p in self.pieces]}
        if self.member is not None:
            values.update(member=self.member, member_sample=self.member_sample)
        return values


def _map(dataset: GPTDataset) -> Provenance:
    path = provenance_path(dataset.dataset.prefix)
    if not path.exists():
        raise FormatError(f"{dataset.dataset.prefix}: no provenance map ({path.name}); run the same tokenmill "
                          "prepare command again (it adds the maps and changes nothing else)")
    return Provenance(path)


def members(source: GPTSource) -> list[GPTDataset]:
    """The GPT datasets ``source`` reads: itself, or a blend's members (each must be a :class:`GPTDataset`)."""
    if isinstance(source, GPTDataset):
        return [source]
    if isinstance(source, BlendedDataset) and all(isinstance(d, GPTDataset) for d in source.datasets):
        return list(source.datasets)
    raise ConfigError(f"{source.describe()}: trace follows GPTDataset samples and blends of GPTDatasets")


def _in_members(source: GPTSource, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(member, sample id in that member) of each of ``samples`` (one member, the same ids, when no blend)."""
    if not isinstance(source, BlendedDataset):
        return np.zeros(len(samples), dtype=np.int64), samples
    return (np.asarray(source.dataset_index[samples], dtype=np.int64),
            np.asarray(source.dataset_sample_index[samples], dtype=np.int64))


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


def _traced(dataset: GPTDataset, prov: Provenance, row: int, sample: int, member: int | None,
            member_sample: int) -> TracedSample:
    """Row ``row`` holding ``sample`` (``member_sample`` of ``dataset``) with its pieces' documents and lines."""
    found = sample_pieces(dataset, member_sample)
    documents = _documents(dataset, np.asarray([p[0] for p in found], dtype=np.int64))
    files, lines = prov.table.locate(prov.numbers_of(documents))
    pieces = [Piece(int(d), a, b, prov.table.name(int(f)), int(n))
              for d, (_, a, b), f, n in zip(documents.tolist(), found, files, lines, strict=True)]
    return TracedSample(row, sample, pieces, str(dataset.dataset.prefix), member,
                        None if member is None else member_sample)


def gpt_step(source: GPTSource, config: GPTBatchConfig, epoch: int, step: int, rank: int,
             world_size: int) -> list[TracedSample]:
    """Every row of rank ``rank``'s micro batch at (``epoch``, ``step``) with its document pieces (through a
    blend: with the member each sample comes from)."""
    datasets = members(source)
    plan = gpt_batches(source, config, rank=rank, world_size=world_size).plan(epoch)
    if not 0 <= step < plan.num_steps:
        raise ConfigError(f"step {step}: epoch {epoch} has {plan.num_steps} micro steps (0 to {plan.num_steps - 1})")
    samples = np.asarray(plan.indices(step, rank), dtype=np.int64)
    which, inner = _in_members(source, samples)
    maps = {int(m): _map(datasets[int(m)]) for m in np.unique(which)}
    blend = isinstance(source, BlendedDataset)
    return [_traced(datasets[m], maps[m], row, s, m if blend else None, i)
            for row, (s, m, i) in enumerate(zip(samples.tolist(), which.tolist(), inner.tolist(), strict=True))]


def with_text(rows: list[TracedSample]) -> list[TracedSample]:
    """``rows`` with each piece's input line (``Piece.text``), each input file read once."""
    wanted: dict[tuple[str, str], set[int]] = defaultdict(set)
    for row in rows:
        for piece in row.pieces:
            wanted[(str(row.store), piece.file)].add(piece.line)
    texts: dict[tuple[str, str, int], str] = {}
    for (store, file), lines in wanted.items():
        table = Provenance(provenance_path(store)).table
        part = StorePart(store, (0,), 0, None, None, None)
        found = read_items(part, table, table.find(file)[0], sorted(lines))
        texts.update({(store, file, line): source for line, (source, _) in found.items()})
    return [replace(row, pieces=[replace(p, text=texts[(str(row.store), p.file, p.line)]) for p in row.pieces])
            for row in rows]


def samples_holding(dataset: GPTDataset, prov: Provenance, file: int, line: int) -> np.ndarray:
    """The sample ids of ``dataset`` with a piece of line ``line`` of input ``file`` (number ``file`` of the map's
    table); empty when cleaning, dedup or a filter dropped the line."""
    document = prov.item_of(prov.table.number_of(file, line))
    if document is None:
        return np.zeros(0, dtype=np.int64)
    bounds = dataset.dataset.document_indices
    items = np.arange(document, document + 1) if bounds is None else np.arange(bounds[document], bounds[document + 1])
    positions = np.flatnonzero(np.isin(dataset.document_index, items))
    first = dataset.sample_index[:-1, 0].astype(np.int64)  # rows' first and last document positions: both rise
    last = dataset.sample_index[1:, 0].astype(np.int64)
    lows, highs = np.searchsorted(last, positions, side="left"), np.searchsorted(first, positions, side="right")
    rows = np.unique(np.concatenate([np.arange(a, b) for a, b in zip(lows, highs, strict=True)] or [[]]))
    rows = rows.astype(np.int64)
    samples = np.empty(len(dataset.shuffle_index), dtype=np.int64)
    samples[dataset.shuffle_index.astype(np.int64)] = np.arange(len(dataset.shuffle_index))
    wanted = set(items.tolist())  # a row may end exactly where the line's document starts (no token of it)
    held = [s for s in samples[rows[rows < len(samples)]].tolist()
            if any(piece[0] in wanted for piece in sample_pieces(dataset, s))]
    return np.asarray(sorted(held), dtype=np.int64)


def _source_samples(source: GPTSource, file: str, line: int) -> np.ndarray:
    """Sample ids of ``source`` (a dataset or a blend) holding a piece of line ``line`` of input ``file``."""
    named, found = False, []
    for m, dataset in enumerate(members(source)):
        prov = _map(dataset)
        for index in prov.table.find(file):
            named = True
            inner = samples_holding(dataset, prov, index, line)
            if isinstance(source, BlendedDataset):
                inner = np.flatnonzero((np.asarray(source.dataset_index) == m)
                                       & np.isin(source.dataset_sample_index, inner))
            found.append(inner)
    if not named:
        raise ConfigError(f"--source {file}:{line}: no dataset of {source.describe()} was made from a file named "
                          f"{file}")
    return np.unique(np.concatenate(found)).astype(np.int64)


def gpt_served(source: GPTSource, config: GPTBatchConfig, file: str, line: int, epochs: list[int],
               world_size: int) -> list[Served]:
    """Every (epoch, micro step, rank, row) of a sample holding a piece of line ``line`` of input ``file``."""
    found = _source_samples(source, file, line)
    chunk = config.micro_batch_size * world_size
    served = []
    for epoch in epochs:
        plan = gpt_batches(source, config, world_size=world_size).plan(epoch)
        if plan.order is None:
            positions, samples = found, found
        else:
            positions = np.flatnonzero(np.isin(plan.order, found))
            samples = np.asarray(plan.order, dtype=np.int64)[positions]
        offsets = positions - plan.start
        for offset, sample in zip(offsets.tolist(), samples.tolist(), strict=True):
            step, within = divmod(offset, chunk)
            if offset >= 0 and step < plan.num_steps:
                rank, row = divmod(within, plan.micro_batch_size)
                served.append(Served(epoch, int(step), int(rank), int(row), int(sample)))
    return sorted(served, key=lambda s: (s.epoch, s.step, s.rank, s.row))


__all__ = ["Piece", "TracedSample", "gpt_served", "gpt_step", "members", "sample_pieces", "samples_holding",
           "with_text"]
