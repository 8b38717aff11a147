"""Join the parts tasks wrote, in task order, into the files one process would have written.

* :func:`copy_kept_lines`: a task's cleaned text into the split's cleaned file, without the lines the
  global dedup dropped (a byte mask per block, no per-line Python), picking out the few lines whose
  text the drop sample wants.
* :func:`renumbered_unknowns`: a task's unknown surfaces added to the split's table, numbered in the order
  of their first appearance in the whole split (what one process assigns).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import BinaryIO

import numpy as np

from tokenmill.errors import TokenmillError

_BLOCK_BYTES = 1 << 22


def copy_kept_lines(path: Path, out: BinaryIO, drop: np.ndarray, want: np.ndarray) -> dict[int, bytes]:
    """Append the lines of ``path`` to ``out`` except those at the sorted positions ``drop``; return the
    bytes (without newline) of the lines at the sorted positions ``want``."""
    found: dict[int, bytes] = {}
    with open(path, "rb") as source:
        if not len(drop) and not len(want):
            shutil.copyfileobj(source, out, _BLOCK_BYTES)
            return found
        first, rest = 0, b""
        while data := source.read(_BLOCK_BYTES):
            data = rest + data
            cut = data.rfind(b"\n") + 1
            block, rest = data[:cut], data[cut:]
            if not block:
                continue
            raw = np.frombuffer(block, dtype=np.uint8)
            ends = np.flatnonzero(raw == 10) + 1
            starts = np.concatenate([[0], ends[:-1]])
            n = len(ends)
            lo, hi = np.searchsorted(drop, [first, first + n])
            if hi > lo:
                keep = np.ones(n, dtype=bool)
                keep[drop[lo:hi] - first] = False
                out.write(raw[np.repeat(keep, ends - starts)].tobytes())
            else:
                out.write(block)
            lo, hi = np.searchsorted(want, [first, first + n])
            for position in (want[lo:hi] - first).tolist():
                found[first + position] = block[starts[position] : ends[position] - 1]
            first += n
    if rest:
        raise TokenmillError(f"{path}: the last line has no newline: this task's part is damaged; delete its folder "
                             "and run prepare again")
    return found


def renumbered_unknowns(
    table: dict[str, list[int]], part: dict[str, list[int]], vocab_size: int
) -> np.ndarray | None:
    """Add ``part``'s unknown surfaces (surface -> [work id, count]) to the split's ``table`` in the
    part's order of first appearance; return the part's work id -> split work id map (None: none)."""
    if not part:
        return None
    lookup = np.arange(vocab_size + len(part), dtype=np.int32)  # work ids, as the id stores hold them
    for surface, (work_id, count) in sorted(part.items(), key=lambda item: item[1][0]):
        entry = table.setdefault(surface, [vocab_size + len(table), 0])
        entry[1] += int(count)
        lookup[work_id] = entry[0]
    return lookup


__all__ = ["copy_kept_lines", "renumbered_unknowns"]
