"""``--near-dedup`` on a training split cleaned in one piece (``--align-suffix``, ``--documents blank-line``:
not cut into tasks). After the cleaning pass the kept items' band keys go to disk in hash partitions and the
clusters are settled as the clean tasks' merge settles them, with the cleaned output as its one part (the
same files under the names a task's folder holds, linked, not copied); then the cleaned files (each side,
the alignments, the input numbers) are written again without the near-duplicates, streamed block by block.
Memory: one partition of band keys, then one partition's table and one block of edges, as in the merge.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.fsutil import atomic_write, write_json
from tokenmill.prepare.clean_parts import index_path, text_path
from tokenmill.prepare.near_dedup import (
    NEAR,
    find_edges,
    near_partition_count,
    near_settings,
    near_sides,
    partition_band_keys,
    resolve_clusters,
    write_band_keys,
)
from tokenmill.prepare.part_merge import LineIndexer
from tokenmill.prepare.partitioned_dedup import KEYS_RAW
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.stages.cleaned import cleaned_pairs
from tokenmill.prepare.stages.near_merge import Lines, NearClusters, Offer
from tokenmill.text.drop_sample import DropSample

BLOCK_BYTES = 1 << 24
"""Bytes of a cleaned file read at once when it is indexed or written again."""
NUMBERS_RAW = "numbers.raw"


def near_in_one_piece(ctx: RunContext, files: list[Path], numbers: Path, kept: int, sample: DropSample,
                      audit: Path, offer: Offer, lines: Lines) -> dict[str, int]:
    """Drop the near-duplicates of the one-piece training split: ``files`` (each side's cleaned file, then
    the alignments') and ``numbers`` (the kept items' input numbers) lose them, ``sample`` gets them under
    ``near_dedup``, ``audit`` the pairs it samples with their kept items; returns the step's counts."""
    settings = near_settings(ctx.config)
    assert settings is not None
    folder = ctx.work / "near" / f"{ctx.prefix}train"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    with atomic_write(folder / f"{NEAR}{KEYS_RAW}", "wb") as handle:
        for src, tgt in cleaned_pairs(ctx, "train"):
            write_band_keys(handle, src, tgt, near_sides(ctx.config), settings)
    partitions = near_partition_count(kept, settings)
    partition_band_keys(folder, partitions)
    for lang, path in zip(ctx.config.langs, files, strict=False):  # the cleaned output as a clean task's part
        os.link(path, text_path(folder, lang))
        write_json(index_path(folder, lang), _index(path, ctx.read_options.index_every))
    os.link(numbers, folder / NUMBERS_RAW)
    find_edges([folder], [0], partitions, settings.bands, folder / "clusters")
    resolve_clusters(folder / "clusters")
    clusters = NearClusters(folder / "clusters", np.array([0, kept], dtype=np.int64), [folder], offer, lines)
    gone = clusters.add_part(ctx, folder, np.zeros(0, dtype=np.int64), 0, kept, sample)
    clusters.write_audit(ctx, sample, audit)
    for path in files:
        _drop_lines(path, gone)
    _drop_numbers(numbers, gone)
    shutil.rmtree(folder)
    return clusters.stats(kept)


def _blocks(path: Path) -> Iterator[bytes]:
    """``path``'s bytes in blocks of whole lines (about :data:`BLOCK_BYTES` each)."""
    rest = b""
    with path.open("rb") as handle:
        while data := handle.read(BLOCK_BYTES):
            data = rest + data
            end = data.rfind(b"\n") + 1
            rest = data[end:]
            if end:
                yield data[:end]
    if rest:
        yield rest


def _index(path: Path, every: int) -> dict[str, Any]:
    """The line index a clean task writes beside its text part (lines read back at positions)."""
    indexer = LineIndexer(every)
    for block in _blocks(path):
        indexer.add_block(block)
    return indexer.state(path)


def _drop_lines(path: Path, gone: np.ndarray) -> None:
    """Write ``path`` again without its lines at the sorted positions ``gone``."""
    first = 0
    with atomic_write(path, "wb") as out:
        for block in _blocks(path):
            data = np.frombuffer(block, dtype=np.uint8)
            ends = np.flatnonzero(data == ord("\n")) + 1
            if not len(ends) or ends[-1] != len(data):
                ends = np.append(ends, len(data))  # a last line without its newline
            lengths = np.diff(ends, prepend=0)
            keep = ~np.isin(np.arange(first, first + len(ends)), gone)
            out.write(data[np.repeat(keep, lengths)].tobytes())
            first += len(ends)


def _drop_numbers(path: Path, gone: np.ndarray) -> None:
    """Write the int64 input numbers again without the items at ``gone``."""
    numbers = np.memmap(path, dtype="<i8", mode="r") if path.stat().st_size else np.zeros(0, dtype="<i8")
    step = BLOCK_BYTES // 8
    with atomic_write(path, "wb") as out:
        for start in range(0, len(numbers), step):
            block = np.asarray(numbers[start:start + step])
            keep = ~np.isin(np.arange(start, start + len(block)), gone)
            out.write(block[keep].tobytes())
    del numbers


__all__ = ["near_in_one_piece"]
