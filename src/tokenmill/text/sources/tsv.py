"""Format ``tsv``: one pair per line as ``source<TAB>target``."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import repeat
from operator import itemgetter

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.text.chunks import MALFORMED, MALFORMED_FIX, Block
from tokenmill.text.sources.base import Source
from tokenmill.text.sources.line_source import LineSource
from tokenmill.text.sources.registry import OpenRequest
from tokenmill.text.stats import StepStats


class TsvSource(LineSource):
    """One pair per line as ``source<TAB>target``; a row without exactly one tab is malformed."""

    parallel = True

    def _file_blocks(self, i: int, start: int, stop: int, stats: StepStats) -> Iterator[Block]:
        assert self._indexes is not None
        path = self.files[i]
        for line0, lines in self._lines(path, self._indexes[i], start, stop, stats):
            yield self._split(lines, path, line0)

    def _split(self, lines: list[str | None], path: str, line0: int) -> Block:
        if None not in lines:
            tabs = np.fromiter(map(str.count, lines, repeat("\t")), dtype=np.int64, count=len(lines))
            if (tabs == 1).all():
                parts = list(map(str.partition, lines, repeat("\t")))
                return list(map(itemgetter(0), parts)), list(map(itemgetter(2), parts))
        src: list = []
        tgt: list = []
        for j, line in enumerate(lines):
            if line is None:
                src.append(None)
                tgt.append(None)
                continue
            tabs = line.count("\t")
            if tabs == 1:
                a, _, b = line.partition("\t")
                src.append(a)
                tgt.append(b)
                continue
            if self.options.on_malformed == "error":
                raise TokenmillError(
                    f"{path}:{line0 + j + 1}: expected 2 tab-separated columns (source<TAB>target), "
                    f"found {tabs + 1}. {MALFORMED_FIX}"
                )
            src.append(MALFORMED)
            tgt.append(MALFORMED)
        return src, tgt


def open_format(request: OpenRequest) -> Source:
    return TsvSource(request.files, request.options)


__all__ = ["TsvSource", "open_format"]
