"""Format ``text``, two sides: one file per language (fairseq prefixes), the pairs aligned line by line."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from tokenmill.errors import TokenmillError
from tokenmill.text.chunks import Block, ReadOptions, rechunk
from tokenmill.text.io import PathLike, resolve_prefix
from tokenmill.text.lines import LineIndex, scan_lines
from tokenmill.text.sources.line_source import LineSource
from tokenmill.text.stats import StepStats


class ParallelFiles(LineSource):
    """Two files per side (fairseq prefixes: ``train.en`` + ``train.zh``); several pairs concatenated.

    Each pair must have equal line counts; otherwise scanning raises an error naming both files
    and both counts, before anything is yielded.
    """

    parallel = True

    def __init__(self, pairs: Sequence[tuple[PathLike, PathLike]], options: ReadOptions | None = None) -> None:
        pairs = [(str(a), str(b)) for a, b in pairs]
        super().__init__([a for a, _ in pairs], options)
        self.pairs = pairs

    @classmethod
    def from_prefixes(
        cls,
        prefixes: Sequence[PathLike] | PathLike,
        src_lang: str,
        tgt_lang: str,
        options: ReadOptions | None = None,
    ) -> ParallelFiles:
        """``prefix.{src_lang}`` + ``prefix.{tgt_lang}`` for each prefix (a compressed suffix is found)."""
        if isinstance(prefixes, (str, os.PathLike)):
            prefixes = [prefixes]
        return cls([(resolve_prefix(p, src_lang), resolve_prefix(p, tgt_lang)) for p in prefixes], options)

    def _scan_files(self) -> list[LineIndex]:
        out = []
        for src, tgt in self.pairs:
            a = scan_lines(src, self.options.index_every)
            b = scan_lines(tgt, self.options.index_every)
            if a.n_lines != b.n_lines:
                raise TokenmillError(
                    f"line counts differ: {src} has {a.n_lines:,} lines but {tgt} has {b.n_lines:,}. "
                    "The two sides must align line by line: check for a truncated or wrong file. "
                    "(Only \\n and \\r\\n end a line here; U+2028, U+0085, \\x0b, \\x0c stay inside it.)"
                )
            out.append((a, b))
        self._pair_indexes = out
        return [a for a, _ in out]

    def _all_indexes(self) -> list[LineIndex]:
        return [ix for pair in self._pair_indexes for ix in pair]

    def _set_indexes(self, indexes: list[LineIndex]) -> None:
        self._pair_indexes = list(zip(indexes[::2], indexes[1::2], strict=True))
        self._indexes = indexes[::2]

    def _index_paths(self) -> list[str]:
        return [path for pair in self.pairs for path in pair]

    def _file_blocks(self, i: int, start: int, stop: int, stats: StepStats) -> Iterator[Block]:
        (src, tgt), (ia, ib) = self.pairs[i], self._pair_indexes[i]
        n = self.options.chunk_lines
        left = rechunk(((x, None) for _, x in self._lines(src, ia, start, stop, stats)), n)
        right = rechunk(((x, None) for _, x in self._lines(tgt, ib, start, stop, stats)), n)
        for (s, _), (t, _) in zip(left, right, strict=True):
            yield s, t


__all__ = ["ParallelFiles"]
