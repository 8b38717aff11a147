"""The training split's ids as the encode tasks left them: one part store per task, never joined.

A tasked ``encode.train.{lang}`` keeps each task's part (``ids.bin/.idx``: int32 work ids, where an
unknown surface is ``vocab_size + k`` in the part's own order of first appearance), the part's table of
unknown surfaces and the bincount of its work ids (:class:`IdCounts`). The stages after it read those
instead of one joined store, so no process goes through the split's ids once more:

* the dictionary: :func:`summed_counts` adds the parts' bincounts (surfaces by their text), less the
  tokens of the few items the piece filters dropped, gathered through the index (:func:`item_token_counts`);
* the piece filters: the parts' item sizes, in blocks of a fixed size across parts (:func:`regrouped`);
* binarize: one task per part (:func:`binarize_part`) writes the part in the store's final ids, end
  tokens and dtype; the coordinator then only copies the parts' tokens and sizes into the stores.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from tokenmill.fsutil import atomic_write
from tokenmill.prepare.crash import crash_point
from tokenmill.store import IndexedWriter
from tokenmill.store.format import Layout
from tokenmill.store.index_file import item_blocks, read_header, store_files

IDS = "ids"
COUNTS = "counts.npy"
UNKNOWN = "unknown.json"
BLOCK_ITEMS = 1 << 16  # items per block read from a part: bounds the temporaries
_GATHER_ITEMS = 1 << 16  # dropped items gathered at a time


class IdCounts:
    """Occurrences of each work id, summed block by block while a task encodes (grows past the
    tokenizer's vocabulary when unknown surfaces get ids of their own)."""

    def __init__(self, size: int) -> None:
        self.array = np.zeros(size, dtype=np.int64)

    def add(self, flat: np.ndarray) -> None:
        if not flat.size:
            return
        counted = np.bincount(flat, minlength=len(self.array)).astype(np.int64, copy=False)
        counted[: len(self.array)] += self.array
        self.array = counted

    def save(self, path: Path) -> None:
        with atomic_write(path, "wb") as handle:
            np.save(handle, self.array, allow_pickle=False)


def part_table(folder: Path) -> dict[str, list[int]]:
    """A part's unknown surfaces: surface -> [part work id, count] ({} when none are kept)."""
    path = folder / UNKNOWN
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def surfaces_in_order(table: dict[str, list[int]]) -> list[str]:
    """The surfaces of a part's table by work id (their order of first appearance)."""
    return [surface for surface, _ in sorted(table.items(), key=lambda item: item[1][0])]


def part_lengths(folders: Iterable[Path]) -> np.ndarray:
    """Items in each part's store (from the index headers)."""
    return np.array([read_header(store_files(folder / IDS)[0])[2] for folder in folders], dtype=np.int64)


def mask_slice(path: Path | None, start: int, stop: int) -> np.ndarray | None:
    """Entries ``[start, stop)`` of a one-dimensional ``.npy`` mask, copied (only those pages are read)."""
    if path is None:
        return None
    return np.array(np.load(path, mmap_mode="r")[start:stop])


def item_token_counts(prefix: Path, items: np.ndarray, size: int) -> np.ndarray:
    """Bincount (``size`` entries) of the tokens of the items at the sorted positions ``items`` of the store
    ``prefix``: their sizes and pointers and their tokens are gathered through maps, so only their pages
    are read, a block of items at a time."""
    total = np.zeros(size, dtype=np.int64)
    idx, binary = store_files(prefix)
    layout, dtype, n, _ = read_header(idx)
    if not len(items) or not os.path.getsize(binary):
        return total
    sizes = np.memmap(idx, dtype="<i4", mode="r", offset=layout.header.size, shape=(n,))
    pointers = np.memmap(idx, dtype="<i8", mode="r", offset=layout.header.size + 4 * n, shape=(n,))
    tokens = np.memmap(binary, dtype=dtype, mode="r")
    try:
        for start in range(0, len(items), _GATHER_ITEMS):
            chosen = items[start : start + _GATHER_ITEMS]
            lengths = sizes[chosen].astype(np.int64)
            firsts = pointers[chosen] // dtype.itemsize
            before = np.cumsum(lengths) - lengths
            where = np.repeat(firsts - before, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)
            total += np.bincount(tokens[where], minlength=size)[:size]
    finally:
        del sizes, pointers, tokens  # unmapped: nothing of the part stays resident
    return total


def summed_counts(folders: list[Path], vocab_size: int, keep: Path | None) -> tuple[np.ndarray, dict[str, int]]:
    """What one process counts over the joined store's kept items: occurrences of each tokenizer id
    (``vocab_size`` entries) and of each unknown surface, from the parts' bincounts. Items the piece
    filters dropped (``keep``: the split's mask) are taken out by gathering their tokens alone."""
    base = np.zeros(vocab_size, dtype=np.int64)
    surfaces: dict[str, int] = {}
    first = 0
    for folder, length in zip(folders, part_lengths(folders).tolist(), strict=True):
        table = part_table(folder)
        counts = np.zeros(vocab_size + len(table), dtype=np.int64)
        stored = np.load(folder / COUNTS)
        counts[: len(stored)] = stored
        kept = mask_slice(keep, first, first + length)
        if kept is not None:
            counts -= item_token_counts(folder / IDS, np.flatnonzero(~kept), len(counts))
        base += counts[:vocab_size]
        for work_id, surface in enumerate(surfaces_in_order(table), start=vocab_size):
            surfaces[surface] = surfaces.get(surface, 0) + int(counts[work_id])
        first += length
    return base, surfaces


def regrouped(blocks: Iterable[np.ndarray], items: int) -> Iterator[np.ndarray]:
    """The arrays of ``blocks`` joined and cut again into blocks of exactly ``items`` entries (the last one
    shorter): item sizes read part after part line up with those of a side stored in one piece."""
    pending: list[np.ndarray] = []
    count = 0
    for block in blocks:
        pending.append(block)
        count += len(block)
        if count < items:
            continue
        joined = np.concatenate(pending) if len(pending) > 1 else pending[0]
        cut = len(joined) - len(joined) % items
        for start in range(0, cut, items):
            yield joined[start : start + items]
        pending, count = [joined[cut:]], len(joined) - cut
    if count:
        yield np.concatenate(pending)


def ended(
    flat: np.ndarray, lengths: np.ndarray, end: int | None, dtype: np.dtype, *, empty_documents: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(flat, lengths) with ``end`` after each item (None: as they are). ``empty_documents``: an item without
    ids gets no end token either, as Megatron's ``preprocess_data`` appends EOD only to a document with ids
    (such an item then becomes a document without a sequence, see ``IndexedWriter.add_documents``)."""
    if end is None:
        return flat, lengths
    if not empty_documents:
        return with_end_token(flat, lengths, end, dtype), lengths + 1
    filled = lengths > 0
    return with_end_token(flat, lengths[filled], end, dtype), lengths + filled


def with_end_token(flat: np.ndarray, lengths: np.ndarray, end: int, dtype: np.dtype) -> np.ndarray:
    """``end`` after each item of (``flat``, ``lengths``), as ``dtype``: what ``np.insert`` gives, in the store's
    dtype at once (one pass fewer over a block). Ids outside ``dtype`` are refused, as the writer would."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.integer) and flat.size:
        limits = np.iinfo(dtype)
        low, high = int(flat.min()), int(flat.max())
        if low < limits.min or high > limits.max:
            raise ValueError(f"token ids span [{low}, {high}] but {dtype} holds [{limits.min}, {limits.max}]")
    out = np.empty(len(flat) + len(lengths), dtype=dtype)
    ends = np.cumsum(lengths) + np.arange(len(lengths))
    keep = np.ones(len(out), dtype=bool)
    keep[ends] = False
    out[keep] = flat
    out[ends] = end
    return out


def binarize_part(
    part: Path, out: Path, *, lookup: np.ndarray | None, kept: np.ndarray | None, end: int | None, unk: int,
    dtype: np.dtype, layout: Layout, crash_name: str, empty_documents: bool = False,
) -> dict[str, int]:
    """One part's kept items (``kept``: its slice of the piece filters' mask) as a store at ``out`` in the
    output's ids (work id -> id through ``lookup``), end token and dtype; returns its items, tokens and
    unknown tokens (what binarizing the joined store counts, part by part). ``empty_documents`` (see
    :func:`ended`): an item without ids stays an item of length 0 here, so the merge can make it a document
    without a sequence, and is not counted as a sentence."""
    sentences = tokens = unknown = 0
    first = 0
    megatron = layout is Layout.MEGATRON
    with IndexedWriter(out, layout=layout, dtype=dtype) as writer:
        for block, sizes in item_blocks(part, BLOCK_ITEMS):
            if kept is not None:
                mask = kept[first : first + len(sizes)]
                first += len(sizes)
                block, sizes = block[np.repeat(mask, sizes)], sizes[mask]
            flat = block if lookup is None else lookup[block]
            if unk >= 0:
                unknown += int(np.count_nonzero(flat == unk))
            flat, sizes = ended(flat, sizes, end, dtype, empty_documents=empty_documents)
            writer.add_items(flat, sizes, documents=megatron)
            sentences += int(np.count_nonzero(sizes)) if empty_documents else len(sizes)
            tokens += len(flat)
            crash_point(f"{crash_name}:midway")
    return {"sentences": sentences, "tokens": tokens, "unk": unknown}


__all__ = [
    "BLOCK_ITEMS", "COUNTS", "IDS", "UNKNOWN", "IdCounts", "binarize_part", "ended", "item_token_counts", "mask_slice",
    "part_lengths", "part_table", "regrouped", "summed_counts", "surfaces_in_order", "with_end_token",
]
