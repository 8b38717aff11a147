"""From a dataset's sample ids to the stores' items and on to input files and lines, and back.

A sample id of a :class:`~tokenmill.data.pairs.PairDataset` is an item of its source store (or of one
part of a :class:`~tokenmill.data.pairs.ConcatStore`); one of a
:class:`~tokenmill.data.multi_pairs.MultiPairDataset` is an item of one direction's shard. Each store's
provenance map (``{prefix}.prov``, :mod:`tokenmill.store.provenance`) says which input item it was; the
input text is read back with the format and keys the run's ``manifest.json`` recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import ConcatStore, PairDataset
from tokenmill.errors import ConfigError, FormatError
from tokenmill.store.layout import MANIFEST_NAME, provenance_path
from tokenmill.store.provenance import InputTable, Provenance
from tokenmill.text import ReadOptions, open_source


class PackedPosition:
    """What a traced record with an optional ``position`` (a pair's place in a packed row) writes: its
    fields, ``position`` only when it has one, so output for unpacked rows is as it was."""

    def to_dict(self) -> dict[str, Any]:
        values = dict(self.__dict__)
        if values.get("position") is None:
            values.pop("position", None)
        return values


@dataclass(frozen=True)
class Served(PackedPosition):
    """Where a sample is served: (epoch, step, rank, row in that batch, and for a packed row the position
    in the row)."""

    epoch: int
    step: int
    rank: int
    row: int
    sample: int
    position: int | None = None
    """Packed rows: the pair's place in its row (0 first); None for a row of one sample."""


@dataclass(frozen=True)
class StorePart:
    """One store a dataset reads: its prefix, the sample ids its items start at (one per copy), its size,
    and the languages of the pair it belongs to."""

    prefix: str
    bases: tuple[int, ...]
    size: int
    src_lang: str | None
    tgt_lang: str | None
    direction: str | None


def store_parts(dataset: PairDataset | MultiPairDataset) -> list[StorePart]:
    """Every source-side store of ``dataset`` with where its items sit among the sample ids."""
    if isinstance(dataset, MultiPairDataset):
        found = []
        for p, part in enumerate(dataset.parts):
            name = dataset.directions[int(dataset.part_direction[p])]
            for inner in store_parts(part):
                bases = tuple(int(dataset.offsets[p]) + b for b in inner.bases)
                found.append(StorePart(inner.prefix, bases, inner.size, inner.src_lang, inner.tgt_lang, name))
        return found
    side = dataset.src if dataset.src is not None else dataset.tgt
    langs = (dataset.src_lang, dataset.tgt_lang)
    if isinstance(side, ConcatStore):
        parts = []
        for p, store in enumerate(side.parts):
            size, start = int(side.real_sizes[p]), int(side.starts[p])
            bases = tuple(start + k * size for k in range(side.repeats[p]))
            parts.append(StorePart(str(store.prefix), bases, size, *langs, None))
        return parts
    assert side is not None
    return [StorePart(str(side.prefix), (0,), len(side), *langs, None)]


class SourceMaps:
    """The provenance maps of a dataset's stores, opened on first use."""

    def __init__(self, dataset: PairDataset | MultiPairDataset) -> None:
        self.parts = store_parts(dataset)
        self.starts = np.asarray([min(p.bases) for p in self.parts], dtype=np.int64)
        self._maps: dict[str, Provenance] = {}

    def map_of(self, part: StorePart) -> Provenance:
        if part.prefix not in self._maps:
            path = provenance_path(part.prefix)
            if not path.exists():
                raise FormatError(
                    f"{part.prefix}: no provenance map ({path.name}); this directory was prepared before maps were "
                    "written: run the same tokenmill prepare command again (it adds the maps and changes nothing else)")
            self._maps[part.prefix] = Provenance(path)
        return self._maps[part.prefix]

    def locate(self, sample: int) -> tuple[StorePart, int]:
        """(store, item in it) of sample id ``sample``."""
        for part in self.parts:
            for base in part.bases:
                if base <= sample < base + part.size:
                    return part, sample - base
        raise ConfigError(f"sample {sample} is not in this dataset")

    def origin(self, sample: int) -> tuple[StorePart, int, int, int]:
        """(store, item, input file index, 1-based line or row) of sample id ``sample``."""
        part, item = self.locate(sample)
        prov = self.map_of(part)
        files, lines = prov.table.locate(prov.numbers_of(np.asarray([item])))
        return part, item, int(files[0]), int(lines[0])

    def samples_of(self, file: str, line: int) -> np.ndarray:
        """Every sample id (copies included) that line ``line`` of input ``file`` became; empty when cleaning,
        dedup or a filter dropped it. ``file`` as the manifest names it, or its last part."""
        found: list[int] = []
        named = False
        for part in self.parts:
            prov = self.map_of(part)
            for index in prov.table.find(file):
                named = True
                item = prov.item_of(prov.table.number_of(index, line))
                if item is not None:
                    found += [base + item for base in part.bases]
        if not named:
            raise ConfigError(f"--source {file}:{line}: no store of this dataset was made from a file named {file}")
        return np.asarray(sorted(found), dtype=np.int64)


def run_settings(prefix: str) -> dict[str, Any]:
    """The settings ``manifest.json`` recorded, from the folder of ``prefix`` or one above it (shards)."""
    for folder in [Path(prefix).parent, *Path(prefix).parent.parents][:3]:
        path = folder / MANIFEST_NAME
        if path.exists():
            return dict(json.loads(path.read_text(encoding="utf-8")).get("settings", {}))
    return {}


def read_items(part: StorePart, table: InputTable, file: int, lines: list[int]) -> dict[int, tuple[str, str | None]]:
    """(source text, target text or None) of 1-based ``lines`` of input ``file``, read as the run read them."""
    settings = run_settings(part.prefix)
    entry = table.files[file]
    files, tgt_files = ([entry[0]], [entry[1]]) if isinstance(entry, list | tuple) else ([entry], None)
    mono = part.tgt_lang is None or (settings.get("target_lang") is None and not settings.get("directions"))
    src_key = settings.get("source_key") or ("text" if mono else part.src_lang) or "src"
    tgt_key = None if mono else (settings.get("target_key") or part.tgt_lang)
    for path in files + (tgt_files or []):
        if not Path(path).exists():
            raise ConfigError(f"{path}: the input file is not here (trace reads the text from the run's inputs; "
                              "run it where the inputs are, or pass text=False / --no-text)")
    source = open_source(files, settings.get("input_format") or "text", tgt_files=tgt_files, src_key=src_key,
                         tgt_key=tgt_key, options=ReadOptions())
    texts: dict[int, tuple[str, str | None]] = {}
    for line in sorted(set(lines)):
        chunk = next(source.chunks(line - 1, line))
        texts[line] = (chunk.src[0], None if chunk.tgt is None else chunk.tgt[0])
    return texts
