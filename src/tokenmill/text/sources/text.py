"""Format ``text``: one item per line; one side (files concatenated in order) or one file per side."""

from __future__ import annotations

from collections.abc import Iterator

from tokenmill.errors import ConfigError
from tokenmill.text.chunks import Block
from tokenmill.text.sources.base import Source
from tokenmill.text.sources.line_source import LineSource
from tokenmill.text.sources.parallel import ParallelFiles
from tokenmill.text.sources.registry import OpenRequest
from tokenmill.text.stats import StepStats


class MonoSource(LineSource):
    """Monolingual plain text: one item per line, files concatenated in order."""

    def _file_blocks(self, i: int, start: int, stop: int, stats: StepStats) -> Iterator[Block]:
        assert self._indexes is not None
        for _, lines in self._lines(self.files[i], self._indexes[i], start, stop, stats):
            yield lines, None


def open_format(request: OpenRequest) -> Source:
    """One side (:class:`MonoSource`), or two with ``tgt_files`` (:class:`ParallelFiles`)."""
    if request.tgt_files is None:
        return MonoSource(request.files, request.options)
    if len(request.tgt_files) != len(request.files):
        raise ConfigError(
            f"{len(request.files)} source files but {len(request.tgt_files)} target files; give them in matching pairs"
        )
    return ParallelFiles(list(zip(request.files, request.tgt_files, strict=True)), request.options)


__all__ = ["MonoSource", "open_format"]
