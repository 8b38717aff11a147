"""Formats ``arrow`` and ``hf-dataset``: Arrow IPC files and streams, one item per row, one record batch at a time.

An IPC file (``ARROW1`` magic) has random access to its record batches; a stream (what
``datasets.save_to_disk`` writes as ``data-*.arrow``) is read through in order. Both are memory-mapped:
counting rows touches only batch headers, and a batch is a zero-copy view until its strings are made.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenmill._core.optional import require
from tokenmill.errors import TokenmillError
from tokenmill.text.sources.base import Source
from tokenmill.text.sources.registry import OpenRequest
from tokenmill.text.sources.table import TableSource

pa = require("pyarrow", extra="parquet", needed_by="reading Arrow input")


class ArrowTable:
    """One Arrow IPC file or stream, memory-mapped (see :class:`~tokenmill.text.sources.table.TableFile`)."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._map = pa.memory_map(path, "r")
        except OSError as error:
            raise TokenmillError(f"{path}: cannot open it ({error})") from None
        self._file: Any = None
        self._stream: Iterator[Any] | None = None
        self._next = 0  # the stream's next batch
        try:
            self._file = pa.ipc.open_file(self._map)
        except pa.ArrowInvalid:
            self._map.seek(0)
            try:
                self._schema = pa.ipc.open_stream(self._map).schema
            except pa.ArrowInvalid as error:
                self._map.close()
                raise TokenmillError(f"{path}: cannot read it as an Arrow file or stream ({error})") from None
        else:
            self._schema = self._file.schema

    def schema(self) -> Any:
        return self._schema

    def _batches(self) -> Iterator[Any]:
        self._map.seek(0)
        return iter(pa.ipc.open_stream(self._map))

    def group_rows(self) -> list[int]:
        if self._file is not None:
            return [self._file.get_batch(g).num_rows for g in range(self._file.num_record_batches)]
        return [batch.num_rows for batch in self._batches()]

    def data_bytes(self) -> int:
        return int(self._map.size())  # Arrow IPC keeps its buffers as they are read (uncompressed here)

    def read_group(self, group: int, columns: list[str]) -> Any:
        if self._file is not None:
            batch = self._file.get_batch(group)
        else:
            if self._stream is None or group < self._next:
                self._stream, self._next = self._batches(), 0
            while self._next <= group:
                batch = next(self._stream)
                self._next += 1
        return pa.Table.from_batches([batch]).select(columns)

    def close(self) -> None:
        self._stream = None
        self._file = None
        self._map.close()


class ArrowSource(TableSource):
    """Rows of Arrow IPC files or streams."""

    format_name = "arrow"


def open_format(request: OpenRequest) -> Source:
    keys = [request.src_key] if request.tgt_key is None else [request.src_key, request.tgt_key]
    return ArrowSource(request.files, keys, ArrowTable, request.options)


__all__ = ["ArrowSource", "ArrowTable", "open_format"]
