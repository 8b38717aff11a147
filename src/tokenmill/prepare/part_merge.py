"""What joins the parts tasks wrote, in task order, into what one process would have made.

* :class:`LineIndexer`: the line index of a clean task's part, made as the task writes it (the encode
  tasks and the drop sample seek through it: no counting pass).
* :func:`renumbered_unknowns`: a task's unknown surfaces added to the split's table, numbered in the order
  of their first appearance in the whole split (what one process assigns).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


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


__all__ = ["LineIndexer", "renumbered_unknowns"]
