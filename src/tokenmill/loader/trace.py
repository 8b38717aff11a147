"""``tokenmill.trace``: which input lines a batch holds, and at which batches an input line is served.

Both directions come from the epoch's plan (``order``: sample ids in batch order; batch ``b`` is
``order[starts[b]:stops[b]]``; ``schedule[t, r]``: the batch rank ``r`` runs at step ``t``) and the stores'
provenance maps (:mod:`tokenmill.loader.provenance`): a step's rows are looked up, and a line's sample ids
are found in ``order`` and turned into (step, rank, row) by inverting the schedule. Nothing is replayed.
Packed rows of pairs (``pack=``) hold several pairs a row: each then also has its position in the row
(:mod:`tokenmill.loader.trace_packed`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from tokenmill.batching.config import BatchConfig
from tokenmill.batching.gpt_plan import GPTBatchConfig
from tokenmill.batching.packed_pairs import PackConfig
from tokenmill.batching.scheduled import ScheduledPlan
from tokenmill.data.blending import BlendedDataset
from tokenmill.data.gpt_dataset import GPTDataset
from tokenmill.data.multi_langtok import LangTokConfig
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import PairDataset, PairOptions
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import ConfigError
from tokenmill.loader.iterator import BatchIterator
from tokenmill.loader.make import make_batches
from tokenmill.loader.provenance import PackedPosition, Served, SourceMaps, read_items
from tokenmill.loader.trace_gpt import TracedSample, gpt_served, gpt_step
from tokenmill.loader.trace_packed import batch_slots, packed_iterator, plan_units
from tokenmill.store.layout import describe


@dataclass(frozen=True)
class TracedRow(PackedPosition):
    """One row of a traced batch (with ``position``: one pair of a packed row): its sample, the store item it
    reads, and the input line it came from."""

    row: int
    sample: int
    store: str
    item: int
    file: str
    line: int
    direction: str | None = None
    source: str | None = None
    target: str | None = None
    position: int | None = None
    """Packed rows: the pair's place in its row (0 first); None for a row of one pair."""


@dataclass(frozen=True)
class TraceSettings:
    """What decides the plan (as ``tokenmill batches`` takes it): one direction or many, the split, the
    batching settings, the mix, the world size, the plan cache, and ``pack`` for pairs packed into rows."""

    split: str = "train"
    config: BatchConfig | None = None
    world_size: int = 1
    sampling: SamplingConfig | None = None
    directions: list[str] | None = None
    langtok: LangTokConfig | None = None
    options: PairOptions | None = None
    src_lang: str | None = None
    tgt_lang: str | None = None
    shard: int | None = None
    cache: Any = True
    pack: PackConfig | None = None


def trace_iterator(directory: str, settings: TraceSettings) -> BatchIterator:
    """The iterator whose plans are traced (the dataset and mix opened as ``tokenmill batches`` opens them;
    with ``settings.pack`` their pairs packed into rows)."""
    iterator = _pairs_iterator(directory, settings)
    return iterator if settings.pack is None else packed_iterator(iterator, settings.pack, settings.cache)


def _pairs_iterator(directory: str, settings: TraceSettings) -> BatchIterator:
    contents = describe(directory)
    if contents.kind in ("monolingual", "megatron"):
        raise ConfigError(f"{contents.what()}: its GPT samples are traced with --seq-length N --global-batch-size B "
                          "(in Python: tokenmill.trace(tokenmill.GPTDataset(...), step=..., "
                          "config=tokenmill.GPTBatchConfig(...)))")
    many = contents.kind == "multilingual"
    if settings.directions is not None or (many and settings.src_lang is None and settings.tgt_lang is None):
        dataset: PairDataset | MultiPairDataset = MultiPairDataset.from_dir(
            directory, settings.split, settings.directions, langtok=settings.langtok, options=settings.options)
        sampling = settings.sampling if settings.split == "train" else None
        return make_batches(dataset, settings.config or BatchConfig(), sampling=sampling,
                            world_size=settings.world_size, collate=None, cache=settings.cache)
    if settings.sampling is not None:
        raise ConfigError("sampling settings apply to many directions; this directory holds one")
    dataset = PairDataset.from_dir(directory, settings.split, src_lang=settings.src_lang, tgt_lang=settings.tgt_lang,
                                   options=settings.options, shard=settings.shard)
    return make_batches(dataset, settings.config or BatchConfig(), world_size=settings.world_size, collate=None,
                        cache=settings.cache)


def step_rows(iterator: BatchIterator, epoch: int, step: int, rank: int, *, text: bool = True) -> list[TracedRow]:
    """Every row rank ``rank`` gets at (``epoch``, ``step``): its input file and line (and text); for packed
    rows, every pair of every row with its position in the row."""
    _parts(iterator, epoch)
    plan = iterator.plan(epoch)
    if not 0 <= step < plan.num_steps:
        raise ConfigError(f"--step {step}: epoch {epoch} has {plan.num_steps} steps (0 to {plan.num_steps - 1})")
    maps = SourceMaps(iterator.dataset)  # type: ignore[arg-type]
    rows = []
    for row, position, sample in batch_slots(plan.indices(step, rank)):
        part, item, file, line = maps.origin(sample)
        table = maps.map_of(part).table
        rows.append(TracedRow(row, sample, part.prefix, item, table.name(file), line, part.direction,
                              position=position))
    return _with_text(maps, rows) if text else rows


def _with_text(maps: SourceMaps, rows: list[TracedRow]) -> list[TracedRow]:
    """The rows with their input text, each input file read once."""
    wanted: dict[tuple[str, str], list[TracedRow]] = defaultdict(list)
    for row in rows:
        wanted[(maps.locate(row.sample)[0].prefix, row.file)].append(row)
    texts: dict[tuple[str, str, int], tuple[str, str | None]] = {}
    for (prefix, name), group in wanted.items():
        part = next(p for p in maps.parts if p.prefix == prefix)
        table = maps.map_of(part).table
        found = read_items(part, table, table.find(name)[0], [r.line for r in group])
        texts.update({(prefix, name, line): value for line, value in found.items()})
    out = []
    for row in rows:
        source, target = texts[(maps.locate(row.sample)[0].prefix, row.file, row.line)]
        out.append(TracedRow(**{**row.to_dict(), "source": source, "target": target}))
    return out


def served_at(iterator: BatchIterator, file: str, line: int, epochs: list[int]) -> list[Served]:
    """Every (epoch, step, rank, row) at which line ``line`` of input ``file`` is served in ``epochs`` (with
    the position in the row for packed rows)."""
    samples = SourceMaps(iterator.dataset).samples_of(file, line)  # type: ignore[arg-type]
    found: list[Served] = []
    for epoch in epochs:
        for plan, first, steps in _parts(iterator, epoch):
            found += [Served(epoch, first + s.step, s.rank, s.row, s.sample, s.position)
                      for s in _served_in(plan, samples) if s.step < steps]
    return sorted(found, key=lambda s: (s.epoch, s.step, s.rank, s.row, s.position or 0))


def _served_in(plan: Any, samples: np.ndarray) -> list[Served]:
    """Where ``plan`` (one plan of pairs) serves any of ``samples``: (step, rank, row) by inverting its
    schedule (``epoch`` 0: the caller's to set)."""
    positions = np.flatnonzero(holding(plan.order, samples))
    if not len(positions):
        return []
    units, within = plan_units(plan, positions)
    starts, stops = np.asarray(plan.table.starts), np.asarray(plan.table.stops)
    by_start = np.argsort(starts, kind="stable")
    batch = by_start[np.searchsorted(starts[by_start], units, side="right") - 1]
    inside = units < stops[batch]
    where = np.full(len(starts), -1, dtype=np.int64)  # batch -> its place in the schedule (step * world + rank)
    schedule = np.asarray(plan.schedule)
    where[schedule.ravel()] = np.arange(schedule.size)
    places = [None] * len(units) if within is None else within.tolist()
    found = []
    for k, (unit, b, ok) in enumerate(zip(units.tolist(), batch.tolist(), inside.tolist(), strict=True)):
        if ok and where[b] >= 0:
            step, rank = divmod(int(where[b]), plan.world_size)
            found.append(Served(0, step, rank, unit - int(starts[b]), int(plan.order[positions[k]]), places[k]))
    return found


def holding(order: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """Where ``order`` holds one of ``samples``: one comparison pass per sample for the few copies of one line
    (a fifth of ``np.isin``'s time on a plan of 20M ids), ``np.isin`` for more."""
    if len(samples) > 8:
        return np.isin(order, samples)
    found = np.zeros(len(order), dtype=bool)
    for sample in np.asarray(samples).tolist():
        found |= order == sample
    return found


def _parts(iterator: BatchIterator, epoch: int) -> list[tuple[Any, int, int]]:
    """(plan, first step, steps run) of each part of ``epoch``: the epoch's plan whole, or under a weights
    schedule its mix segments (:class:`~tokenmill.batching.scheduled.ScheduledPlan`: each part runs the first
    steps of the plan of what the parts before left), so a trace follows what the iterator serves."""
    plan = iterator.plan(epoch)
    if isinstance(plan, ScheduledPlan):
        parts = [(p, int(first), int(take)) for (p, take), first in zip(plan.parts, plan.starts[:-1], strict=True)]
    else:
        parts = [(plan, 0, plan.num_steps)]
    for part, _, _ in parts:
        if not all(hasattr(part, name) for name in ("order", "table", "schedule")):
            raise ConfigError(f"trace follows plans of pairs (cut by a token budget or packed into rows), not "
                              f"{type(part).__name__}")
    return parts


def parse_source(text: str) -> tuple[str, int]:
    """``FILE:LINE`` as (file, line)."""
    name, sep, number = text.rpartition(":")
    if not sep or not name or not number.isdigit() or int(number) < 1:
        raise ConfigError(f"--source {text!r}: expected FILE:LINE with a 1-based line number (train.en:12)")
    return name, int(number)


def trace(
    directory: str | GPTDataset | BlendedDataset,
    *,
    epoch: int | list[int] = 1,
    step: int | None = None,
    rank: int = 0,
    source: str | None = None,
    text: bool = True,
    **settings: Any,
) -> list[TracedRow] | list[Served] | list[TracedSample]:
    """Where a batch came from, or where an input line goes.

    ``step`` (with ``epoch`` and ``rank``): the rows of that batch, each with its input file, line and text.
    ``source="FILE:LINE"``: every (epoch, step, rank, row) at which that line is served in ``epoch`` (one
    epoch or a list). ``settings``: the plan's settings as :class:`TraceSettings` names them (``config=``,
    ``world_size=``, ``sampling=``, ``directions=``, ``langtok=``, ``split=`` ...): the same as training's.
    ``directory`` may also be a :class:`GPTDataset` or a Megatron blend of them (:class:`BlendedDataset`;
    ``config=`` a :class:`GPTBatchConfig`): a step's rows are then its packed samples, each with its documents'
    token ranges and input lines (and through a blend, the member it is drawn from). ``pack=`` a
    :class:`PackConfig`: pairs packed into rows, each row's pairs with their position in the row.
    """
    if (step is None) == (source is None):
        raise ConfigError("give step= (with epoch= and rank=) or source='FILE:LINE', one of the two")
    epochs = epoch if isinstance(epoch, list) else [epoch]
    if isinstance(directory, GPTDataset | BlendedDataset):
        return _trace_gpt(directory, epochs, step, rank, source, settings)
    iterator = trace_iterator(directory, TraceSettings(**settings))
    if not 0 <= rank < iterator.world_size:
        raise ConfigError(f"rank {rank} is outside world size {iterator.world_size}")
    if step is not None:
        if isinstance(epoch, list):
            raise ConfigError("a step is traced in one epoch: give epoch= as one number")
        return step_rows(iterator, epoch, step, rank, text=text)
    file, line = parse_source(source)  # type: ignore[arg-type]
    return served_at(iterator, file, line, epochs)


def _trace_gpt(dataset: GPTDataset | BlendedDataset, epochs: list[int], step: int | None, rank: int, source: str | None,
               settings: dict[str, Any]) -> list[TracedSample] | list[Served]:
    config, world_size = settings.pop("config", None), int(settings.pop("world_size", 1))
    if not isinstance(config, GPTBatchConfig) or settings:
        raise ConfigError("a GPTDataset or blend is traced with config=GPTBatchConfig(...) and world_size= only"
                          + (f" (not {sorted(settings)})" if settings else ""))
    if step is not None:
        return gpt_step(dataset, config, epochs[0], step, rank, world_size)
    file, line = parse_source(source)  # type: ignore[arg-type]
    return gpt_served(dataset, config, file, line, epochs, world_size)


__all__ = ["Served", "TraceSettings", "TracedRow", "served_at", "step_rows", "trace", "trace_iterator"]
