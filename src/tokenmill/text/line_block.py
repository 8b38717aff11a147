"""Cleaned lines as one UTF-8 block, as the cleaned files hold them.

A cleaning worker hands its kept lines back as one block of bytes per side instead of a list of
``str``: sending bytes between processes is one copy (a list of strings is pickled and rebuilt item
by item), and the block is what the cleaned file holds, so the parent writes it as it is. Lines are
plain (one per ``\\n``) or, when a line may hold a newline, JSON objects ``{"t": line}``; either way
every line ends with the block's only kind of ``\\n``. The parent drops duplicates by a mask over
the lines (:meth:`LineBlock.kept`) and reads back the text of a few lines only (the drop sample).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


def line_text(lines: Sequence[str], quoted: bool) -> str:
    """Lines as the cleaned files hold them: plain lines, or JSON objects when a line may hold a newline."""
    if quoted:
        lines = [json.dumps({"t": line}, ensure_ascii=False) for line in lines]
    return "\n".join(lines) + "\n"


def newline_offsets(data: bytes) -> np.ndarray:
    """Offsets of the ``\\n`` bytes of ``data``: int32 below 2 GiB (half the bytes to send), else int64."""
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    return ends.astype(np.int32) if len(data) < 1 << 31 else ends


@dataclass
class LineBlock:
    """``data``: ``\\n``-terminated UTF-8 lines (JSON-quoted when ``quoted``)."""

    data: bytes
    quoted: bool
    _ends: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def from_lines(cls, lines: Sequence[str], quoted: bool) -> LineBlock:
        """The block of ``lines``, with its line ends found here: a worker builds it, so the parent that drops
        duplicates from it does not scan the bytes for newlines (the ends travel with the block)."""
        block = cls(line_text(lines, quoted).encode("utf-8") if len(lines) else b"", quoted)
        block._ends = newline_offsets(block.data)
        return block

    @property
    def ends(self) -> np.ndarray:
        """Offset of each line's ``\\n`` (int32 while the block is under 2 GiB; found once, when first asked for)."""
        if self._ends is None:
            self._ends = newline_offsets(self.data)
        return self._ends

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, i: int) -> str:
        """The text of line ``i`` (as the cleaner kept it)."""
        start = int(self.ends[i - 1]) + 1 if i else 0
        text = self.data[start : int(self.ends[i])].decode("utf-8")
        return json.loads(text)["t"] if self.quoted else text

    def kept(self, keep: np.ndarray) -> bytes:
        """The bytes of the lines where ``keep`` is True, in order."""
        if keep.all():
            return self.data
        return b"".join(self.kept_runs(keep))  # views: the bytes are copied once

    def kept_runs(self, keep: np.ndarray) -> list[memoryview]:
        """The lines where ``keep`` is True as views of the block's runs of kept lines, in order (one view per
        run, about as many as lines dropped): a file's ``writelines`` writes them without building ``kept``."""
        if keep.all():
            return [memoryview(self.data)]
        ends = self.ends
        edges = np.diff(keep.view(np.int8), prepend=0, append=0)  # +1 where a run of kept lines starts, -1 after it
        first, last = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
        starts = np.zeros(len(first), dtype=np.int64)
        inside = first > 0
        starts[inside] = ends[first[inside] - 1] + 1
        runs = map(slice, starts.tolist(), (ends[last] + 1).tolist())
        return list(map(memoryview(self.data).__getitem__, runs))


__all__ = ["LineBlock", "line_text", "newline_offsets"]
