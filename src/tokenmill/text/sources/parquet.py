"""Format ``parquet`` (``pip install 'tokenmill[parquet]'``): one item per row, read one row group at a time in
batches of rows (see :mod:`~tokenmill.text.sources.table`).

The counting pass reads each file's footer only. A URL (``s3://...``) is opened by the run's opener and
read by ranged requests: the footer, then each row group's column chunks of the keys' columns in reads of
:data:`READ_BUFFER` bytes, never the whole object.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from tokenmill._core.optional import require
from tokenmill.text.io import Opener
from tokenmill.text.sources.base import Source
from tokenmill.text.sources.registry import OpenRequest
from tokenmill.text.sources.table import TableSource

pq = require("pyarrow.parquet", extra="parquet", needed_by="reading Parquet input")
READ_BUFFER = 1 << 20
"""Bytes per read of a column chunk (one ranged request on object storage)."""


class ParquetTable:
    """One Parquet file (see :class:`~tokenmill.text.sources.table.TableFile`)."""

    def __init__(self, path: str, opener: Opener) -> None:
        self.path = path
        self._handle: BinaryIO = opener(path)
        try:
            # buffered reads of READ_BUFFER bytes, not a whole column chunk at once: a row group is streamed
            self._file = pq.ParquetFile(self._handle, pre_buffer=False, buffer_size=READ_BUFFER)
        except BaseException:
            self._handle.close()
            raise

    def schema(self) -> Any:
        return self._file.schema_arrow

    def group_rows(self) -> list[int]:
        meta = self._file.metadata
        return [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]

    def data_bytes(self) -> int:
        meta = self._file.metadata
        return sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))

    def read_group(self, group: int, columns: list[str]) -> Any:
        return self._file.read_row_group(group, columns=columns, use_threads=False)

    def iter_group(self, group: int, columns: list[str], rows: int) -> Iterator[Any]:
        """Row group ``group`` as record batches of ``rows`` rows, decoded one at a time."""
        return self._file.iter_batches(batch_size=rows, row_groups=[group], columns=columns, use_threads=False)

    def close(self) -> None:
        self._handle.close()


class ParquetSource(TableSource):
    """Rows of Parquet files."""

    format_name = "parquet"


def open_format(request: OpenRequest) -> Source:
    keys = [request.src_key] if request.tgt_key is None else [request.src_key, request.tgt_key]
    return ParquetSource(request.files, keys, lambda path: ParquetTable(path, request.opener), request.options)


__all__ = ["ParquetSource", "ParquetTable", "open_format"]
