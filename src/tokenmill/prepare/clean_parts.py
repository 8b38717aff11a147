"""Train's cleaned text as the clean tasks left it: one part per task, read through its duplicate mask.

A tasked ``clean.train`` never joins its parts into one cleaned file. Each task folder keeps
``{lang}.txt`` (the lines the task kept, as :meth:`~tokenmill.prepare.pipeline.Pipeline.clean_text`
writes them), ``{lang}.index.json`` (its line index, made while writing: no counting pass) and, once the
duplicates across tasks are settled, ``gone.npy`` (the sorted positions of the part's lines that the
global dedup drops). Read in task order without the ``gone`` lines, the parts are the cleaned file one
process writes, line for line and byte for byte: what the tokenizer's sample, T2T's byte-budget sample and
the encode tasks (one per part) read.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import compress
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.fsutil import atomic_path
from tokenmill.text import ReadOptions, open_source
from tokenmill.text.chunks import CHUNK_BYTES, byte_bounded_lines
from tokenmill.text.readers import Chunk, Source
from tokenmill.text.stats import StepStats

GONE = "gone.npy"
_BLOCK_BYTES = 1 << 22


def text_path(folder: Path, lang: str) -> Path:
    return folder / f"{lang}.txt"


def index_path(folder: Path, lang: str) -> Path:
    return folder / f"{lang}.index.json"


def save_gone(folder: Path, gone: np.ndarray) -> Path:
    """Save a part's duplicate positions (sorted int64) atomically; returns where."""
    path = folder / GONE
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.save(handle, np.asarray(gone, dtype=np.int64), allow_pickle=False)
    return path


def load_gone(folder: Path) -> np.ndarray:
    return np.load(folder / GONE, allow_pickle=False)


def kept_mask(gone: np.ndarray, start: int, count: int) -> np.ndarray | None:
    """Which of the ``count`` lines from ``start`` stay (None: all of them)."""
    lo, hi = np.searchsorted(gone, [start, start + count])
    if lo == hi:
        return None
    keep = np.ones(count, dtype=bool)
    keep[gone[lo:hi] - start] = False
    return keep


@dataclass(frozen=True)
class CleanParts:
    """The parts of train's cleaned text, in task order; ``quoted``: lines are JSON objects on disk."""

    folders: list[Path]
    quoted: bool
    chunk_lines: int

    def source(self, index: int, lang: str) -> Source:
        """Part ``index`` of side ``lang`` as a source (its saved line index taken: no counting pass)."""
        path = str(text_path(self.folders[index], lang))
        saved = json.loads(index_path(self.folders[index], lang).read_text(encoding="utf-8"))
        chunk_lines = byte_bounded_lines(self.chunk_lines, int(saved["n_lines"]), os.path.getsize(path),
                                         CHUNK_BYTES)
        options = ReadOptions(chunk_lines=chunk_lines)  # long documents: fewer a chunk (see byte_bounded_lines)
        if self.quoted:
            source = open_source([path], "jsonl", src_key="t", tgt_key=None, options=options)
        else:
            source = open_source([path], options=options)
        source.restore_index([{**saved, "path": path}])
        return source

    def part_chunks(self, index: int, lang: str) -> Iterator[list[str]]:
        """The lines of part ``index`` that stay, chunk by chunk (a chunk may come out shorter)."""
        gone = load_gone(self.folders[index])
        for chunk in self.source(index, lang).chunks():
            keep = kept_mask(gone, chunk.start, len(chunk.src))
            lines = chunk.src if keep is None else list(compress(chunk.src, keep.tolist()))
            if lines:
                yield lines

    def chunks(self, lang: str) -> Iterator[list[str]]:
        """Every part's lines that stay, in order: the cleaned file's lines."""
        for index in range(len(self.folders)):
            yield from self.part_chunks(index, lang)

    def kept_lines(self) -> list[int]:
        """Lines that stay in each part."""
        return [int(_lines(folder) - len(load_gone(folder))) for folder in self.folders]

    def raw_blocks(self, lang: str) -> Iterator[bytes]:
        """The bytes of the cleaned file (whole lines, newline included), block by block."""
        for folder in self.folders:
            yield from kept_blocks(text_path(folder, lang), load_gone(folder))

    def raw_size(self, lang: str) -> int:
        """Bytes of the cleaned file (the parts' sizes less the lines that go)."""
        return sum(len(block) for block in self.raw_blocks(lang))

    def raw_lines(self, lang: str) -> Iterator[bytes]:
        """The cleaned file's lines as bytes, newline included, as a binary file iterates them: only ``\n``
        ends a line (``bytes.splitlines`` would also cut at a lone ``\r`` that a kept line may hold)."""
        for block in self.raw_blocks(lang):
            yield from io.BytesIO(block)


class PartsSource:
    """Side ``lang`` of the parts as the few calls of a :class:`~tokenmill.text.readers.Source` that a
    one-process stage makes on the cleaned file (``scan``, ``chunks``, ``stats``)."""

    def __init__(self, parts: CleanParts, lang: str) -> None:
        self.parts, self.lang = parts, lang
        self.stats = StepStats("read")

    def scan(self) -> int:
        return sum(self.parts.kept_lines())

    def chunks(self) -> Iterator[Chunk]:
        start = 0
        for lines in self.parts.chunks(self.lang):
            yield Chunk(start, len(lines), lines)
            start += len(lines)


def _lines(folder: Path) -> int:
    """Lines of a part (from the index of any side: the sides have as many)."""
    found = sorted(folder.glob("*.index.json"))
    return int(json.loads(found[0].read_text(encoding="utf-8"))["n_lines"]) if found else 0


def kept_blocks(path: Path, drop: np.ndarray) -> Iterator[bytes]:
    """The whole lines of ``path`` except those at the sorted positions ``drop``, in blocks (a byte mask per
    block: no per-line Python)."""
    with open(path, "rb") as source:
        first, rest = 0, b""
        while data := source.read(_BLOCK_BYTES):
            data = rest + data
            cut = data.rfind(b"\n") + 1
            block, rest = data[:cut], data[cut:]
            if not block:
                continue
            n = block.count(b"\n")
            keep = kept_mask(drop, first, n)
            first += n
            if keep is None:
                yield block
                continue
            raw = np.frombuffer(block, dtype=np.uint8)
            ends = np.flatnonzero(raw == 10) + 1
            starts = np.concatenate([[0], ends[:-1]])
            yield raw[np.repeat(keep, ends - starts)].tobytes()
    if rest:
        raise TokenmillError(f"{path}: the last line has no newline: this task's part is damaged; delete its folder "
                             "and run prepare again")


def lines_at(path: Path, index: dict[str, Any], positions: np.ndarray) -> dict[int, bytes]:
    """The lines (bytes, no newline) at the few sorted ``positions`` of ``path``, each read from the nearest
    indexed line before it (``index``: a line index state), not from the start of the file."""
    found: dict[int, bytes] = {}
    every, offsets = int(index["every"]), index["offsets"]
    with open(path, "rb") as handle:
        for block in np.unique(positions // every).tolist():
            handle.seek(int(offsets[block]))
            data = handle.read(int(offsets[block + 1]) - int(offsets[block]) if block + 1 < len(offsets) else -1)
            wanted = positions[positions // every == block] - block * every
            lines = data.split(b"\n", int(wanted.max()) + 1)
            found.update({block * every + w: lines[w] for w in wanted.tolist()})
    return found


__all__ = [
    "GONE", "CleanParts", "PartsSource", "index_path", "kept_blocks", "kept_mask", "lines_at", "save_gone", "text_path",
]
