"""Join the parts tasks wrote, in task order, into the files one process would have written.

* :func:`copy_kept_lines`: a task's cleaned text into the split's cleaned file, without the lines the
  global dedup dropped (a byte mask per block, no per-line Python), picking out the few lines whose
  text the drop sample wants.
  :class:`LineIndexer` indexes the lines as they are written (the encode plan needs no counting pass).
* :func:`renumbered_unknowns`: a task's unknown surfaces added to the split's table, numbered in the order
  of their first appearance in the whole split (what one process assigns).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from tokenmill.errors import TokenmillError

_BLOCK_BYTES = 1 << 22


class LineIndexer:
    """The line index of a file of whole lines, made while it is written block by block: its line count,
    size and the start of every ``every``-th line, what :func:`~tokenmill.text.readers.scan_lines` finds
    reading it back (the encode plan's counting pass, without the pass)."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.lines = 0
        self.size = 0
        self._starts: list[np.ndarray] = []

    def add_block(self, block: bytes) -> None:
        """A block of whole lines written; its newlines are found only when an indexed line starts in it."""
        count = block.count(b"\n")
        if (-self.lines) % self.every < count:
            self.add_ends(np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10) + 1)
        else:
            self.lines += count
            self.size += len(block)

    def add_ends(self, ends: np.ndarray) -> None:
        """Lines written, given by their ends (after the newline) from the start of what was written."""
        if not len(ends):
            return
        first = (-self.lines) % self.every
        if first < len(ends):
            starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
            self._starts.append(starts[first :: self.every] + self.size)
        self.lines += len(ends)
        self.size += int(ends[-1])

    def state(self, path: Path) -> dict[str, Any]:
        """The index as :meth:`~tokenmill.text.readers.Source.index_state` gives it for ``path``."""
        offsets = np.concatenate([*self._starts, np.array([self.size], dtype=np.int64)])
        return {"path": str(path), "n_lines": self.lines, "size": self.size, "every": self.every,
                "offsets": offsets.tolist(), "compression": None}


def copy_kept_lines(
    path: Path, out: BinaryIO, drop: np.ndarray, want: np.ndarray, index: LineIndexer | None = None
) -> dict[int, bytes]:
    """Append the lines of ``path`` to ``out`` except those at the sorted positions ``drop`` (and to
    ``index``: the lines written); return the bytes (without newline) of the lines at the sorted positions
    ``want``."""
    found: dict[int, bytes] = {}
    with open(path, "rb") as source:
        if not len(drop) and not len(want) and index is None:
            shutil.copyfileobj(source, out, _BLOCK_BYTES)
            return found
        first, rest = 0, b""
        while data := source.read(_BLOCK_BYTES):
            data = rest + data
            cut = data.rfind(b"\n") + 1
            block, rest = data[:cut], data[cut:]
            if not block:
                continue
            n = block.count(b"\n")
            lo, hi = np.searchsorted(drop, [first, first + n])
            picked = want[slice(*np.searchsorted(want, [first, first + n]))] - first
            if hi == lo and not len(picked):  # nothing to drop or pick out: copied as it is
                out.write(block)
                if index is not None:
                    index.add_block(block)
                first += n
                continue
            raw = np.frombuffer(block, dtype=np.uint8)
            ends = np.flatnonzero(raw == 10) + 1
            starts = np.concatenate([[0], ends[:-1]])
            if hi > lo:
                keep = np.ones(n, dtype=bool)
                keep[drop[lo:hi] - first] = False
                out.write(raw[np.repeat(keep, ends - starts)].tobytes())
                if index is not None:
                    index.add_ends(np.cumsum((ends - starts)[keep]))
            else:
                out.write(block)
                if index is not None:
                    index.add_ends(ends)
            for position in picked.tolist():
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


__all__ = ["LineIndexer", "copy_kept_lines", "renumbered_unknowns"]
