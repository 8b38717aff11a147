"""The base of the line formats (text, parallel files, TSV, JSONL): one item per line, a sparse line index.

The counting pass is :func:`~tokenmill.text.lines.scan_lines` per file; reading a range seeks to the
nearest indexed line (plain files) or decompresses up to it (compressed files cannot seek).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.text.lines import LineIndex, decoded_lines, scan_lines
from tokenmill.text.sources.base import Source
from tokenmill.text.stats import StepStats


class LineSource(Source):
    """A :class:`Source` whose items are the lines of its files (see :mod:`tokenmill.text.lines`)."""

    _indexes: list[LineIndex] | None = None

    def _scan_files(self) -> list[LineIndex]:
        return [scan_lines(p, self.options.index_every) for p in self.files]

    def _count(self) -> list[int]:
        self._indexes = self._scan_files()
        return [ix.n_lines for ix in self._indexes]

    def _all_indexes(self) -> list[LineIndex]:
        assert self._indexes is not None
        return list(self._indexes)

    def _set_indexes(self, indexes: list[LineIndex]) -> None:
        self._indexes = indexes

    def index_state(self) -> list[dict[str, Any]]:
        """The counting pass as JSON-able data (per file: lines, size, seek offsets), so a process on
        another machine can read a range with :meth:`restore_index` instead of counting every file again."""
        self.scan()
        return [
            {"path": ix.path, "n_lines": ix.n_lines, "size": ix.size, "every": ix.every,
             "offsets": ix.offsets.tolist(), "compression": ix.compression}
            for ix in self._all_indexes()
        ]

    def restore_index(self, state: Sequence[dict[str, Any]]) -> None:
        """Take a counting pass saved by :meth:`index_state` (for the same files, in the same order)."""
        indexes = [
            LineIndex(str(d["path"]), int(d["n_lines"]), int(d["size"]), int(d["every"]),
                      np.asarray(d["offsets"], dtype=np.int64), d["compression"])
            for d in state
        ]
        if [os.path.realpath(ix.path) for ix in indexes] != [os.path.realpath(p) for p in self._index_paths()]:
            raise TokenmillError(
                "the saved line index is for other files than this source's; re-run the plan step "
                "(tokenmill prepare ... --phase plan)"
            )
        self._set_indexes(indexes)
        self._set_counts([ix.n_lines for ix in self._indexes or []])

    def _index_paths(self) -> list[str]:
        return list(self.files)

    @property
    def seeks_ranges(self) -> bool:
        """Plain files seek to a range through the line index; a compressed one is decompressed up to it."""
        return all(state["compression"] is None for state in self.index_state())

    def _lines(self, path: str, index: LineIndex, a: int, b: int, stats: StepStats):
        stop = None if b >= index.n_lines else b  # to the end: no need to count newlines on the way
        return decoded_lines(path, self.options, stats, start_line=a, stop_line=stop, index=index)


__all__ = ["LineSource"]
