"""The base of the table formats (Parquet, Arrow, ``datasets`` folders): one item per row, read by row group.

A table file is cut into row groups (Parquet's row groups, Arrow's record batches). The counting pass
reads only metadata: rows per group, per file. Reading a range reads each row group it overlaps, one at
a time, in batches of :data:`GROUP_BATCH_ROWS` rows where the format streams them (Parquet: memory bounded
by a batch, not by the file's row group size; Arrow: one record batch), sliced into chunks of
``chunk_lines`` rows. A failed read (a dropped connection to object storage) is retried on a freshly
opened file from the first row not yet given, then one clear error naming the file and row group: a row
is never yielded twice or skipped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from tokenmill._core.optional import require
from tokenmill.errors import TokenmillError
from tokenmill.text.chunks import Block, ReadOptions
from tokenmill.text.io import PathLike
from tokenmill.text.sources.base import Source
from tokenmill.text.sources.columns import ColumnPath, column_of, resolve, text_values
from tokenmill.text.stats import StepStats

pa = require("pyarrow", extra="parquet", needed_by="reading Parquet and Arrow input")

READ_TRIES = 3
"""Attempts at reading one row group (the first and two retries on a fresh connection)."""
GROUP_BATCH_ROWS = 1024
"""Rows a format that can stream a row group (Parquet) decodes at once: a whole 128 MB row group read at once
held ~2.3x its text in memory (decoded pages, the column's buffers), 1,024 rows hold a few MB."""
RETRY_WAIT_S = 0.5
T = TypeVar("T")


class TableFile(Protocol):
    """One open table file: its schema, rows per row group, and one row group's columns."""

    path: str

    def schema(self) -> Any: ...

    def group_rows(self) -> list[int]: ...

    def read_group(self, group: int, columns: list[str]) -> Any: ...

    def data_bytes(self) -> int:
        """The file's data once decoded (all columns), from its metadata."""
        ...

    def close(self) -> None: ...


TableOpener = Callable[[str], TableFile]


class TableSource(Source):
    """Rows of table files; ``keys`` name the text column of each side (dotted paths reach struct fields)."""

    unit = "row"
    line_indexed = False
    format_name = "table"

    def __init__(
        self,
        files: Sequence[PathLike],
        keys: Sequence[str],
        open_table: TableOpener,
        options: ReadOptions | None = None,
    ) -> None:
        super().__init__(files, options)
        self.keys = tuple(keys)
        self.parallel = len(self.keys) > 1
        self._open_table = open_table
        self._groups: list[list[int]] | None = None
        self._where: dict[int, list[ColumnPath]] = {}
        self._open: tuple[int, TableFile] | None = None  # the file being read (one at a time)

    # counting ------------------------------------------------------------------------------------
    def _count(self) -> list[int]:
        groups = []
        for i in range(len(self.files)):
            # a missing column fails here, before anything is read
            groups.append(self._attempt(i, "its metadata", lambda table, i=i: (self._columns(i, table),
                                                                               table.group_rows())[1]))
        self._groups = groups
        return [sum(g) for g in groups]

    def text_bytes(self) -> int:
        """The rows times the first file's decoded bytes per row (its metadata: one footer read, also for
        thousands of files in object storage); a compressed Parquet file holds about twice its size in text."""
        rows = self.scan()
        assert self._groups is not None
        first_rows = sum(self._groups[0])
        if not rows or not first_rows:
            return super().text_bytes()
        decoded = self._attempt(0, "its metadata", lambda table: table.data_bytes())
        self.close()
        return int(rows * decoded / first_rows)

    def index_state(self) -> list[dict[str, Any]]:
        """Per file: rows and rows per row group (``compression`` holds the format's name: such a file is
        read by whole row groups, never by seeking to a line)."""
        self.scan()
        assert self._groups is not None
        return [{"path": path, "rows": sum(groups), "groups": list(groups), "compression": self.format_name}
                for path, groups in zip(self.files, self._groups, strict=True)]

    def restore_index(self, state: Sequence[dict[str, Any]]) -> None:
        paths = [str(d["path"]) for d in state]
        if [_same(p) for p in paths] != [_same(p) for p in self.files]:
            raise TokenmillError(
                "the saved row index is for other files than this source's; re-run the plan step "
                "(tokenmill prepare ... --phase plan)"
            )
        self._groups = [[int(n) for n in d["groups"]] for d in state]
        self._set_counts([sum(g) for g in self._groups])

    # reading -------------------------------------------------------------------------------------
    def _table(self, i: int) -> TableFile:
        if self._open is not None and self._open[0] == i:
            return self._open[1]
        self.close()
        table = self._open_table(self.files[i])
        self._open = (i, table)
        return table

    def close(self) -> None:
        """Close the file being read (a later read opens it again)."""
        if self._open is not None:
            self._open[1].close()
            self._open = None

    def _columns(self, i: int, table: TableFile) -> list[ColumnPath]:
        if i not in self._where:
            schema = table.schema()
            self._where[i] = [resolve(schema, key, self.files[i]) for key in self.keys]
        return self._where[i]

    def _attempt(self, i: int, what: str, action: Callable[[TableFile], T]) -> T:
        """``action`` on file ``i``, retried on a freshly opened file when a read fails (a dropped connection);
        then one error naming the file and ``what`` was read."""
        for attempt in range(1, READ_TRIES + 1):
            try:
                return action(self._table(i))
            except (OSError, pa.ArrowException) as error:
                self._failed_read(i, what, attempt, error)
        raise AssertionError("unreachable")

    def _failed_read(self, i: int, what: str, attempt: int, error: Exception) -> None:
        """After read ``attempt`` of file ``i`` failed: the file closed (the next attempt opens it afresh) and a
        wait before it, or, after the last attempt, one error naming the file and ``what`` was read."""
        self.close()
        if attempt == READ_TRIES:
            raise TokenmillError(
                f"{self.files[i]}: {what}: cannot read it as {self.format_name} after {READ_TRIES} tries "
                f"({error}). Check the connection and that the file is whole, then run prepare again"
            ) from None
        time.sleep(RETRY_WAIT_S * attempt)

    def _group_pieces(self, i: int, group: int, first: int, last: int) -> Iterator[tuple[int, Any, list]]:
        """Rows ``[first, last)`` of row group ``group`` of file ``i`` as (first row, record batch, where) pieces
        of at most :data:`GROUP_BATCH_ROWS` rows (a format without batches gives its whole group). A failed
        read is retried on a freshly opened file from the first row not yet given, then one error naming the
        file and row group: every row once, none skipped."""
        at = first
        for attempt in range(1, READ_TRIES + 1):
            try:
                table = self._table(i)
                where = self._columns(i, table)
                columns = list(dict.fromkeys(w.column for w in where))
                batches = table.iter_group(group, columns, GROUP_BATCH_ROWS) if hasattr(table, "iter_group") \
                    else iter([table.read_group(group, columns)])
                start = 0
                for batch in batches:
                    end = start + len(batch)
                    if end > at:
                        piece = batch.slice(at - start, min(end, last) - at)
                        yield at, piece, where
                        at += len(piece)
                    start = end
                    if at >= last:
                        return
                return
            except (OSError, pa.ArrowException) as error:
                self._failed_read(i, f"row group {group}", attempt, error)

    def _file_blocks(self, i: int, start: int, stop: int, stats: StepStats) -> Iterator[Block]:
        assert self._groups is not None
        n, policy = self.options.chunk_lines, self.options.on_malformed
        lo = 0
        for group, rows in enumerate(self._groups[i]):
            hi = lo + rows
            a, b = max(start, lo), min(stop, hi)
            if a < b:
                for first, batch, where in self._group_pieces(i, group, a - lo, b - lo):
                    for s in range(0, len(batch), n):
                        piece = batch.slice(s, min(n, len(batch) - s))
                        at = (self.files[i], group, lo + first + s)
                        cols = [text_values(column_of(piece, w), w, at, policy) for w in where]
                        yield cols[0], (cols[1] if len(cols) > 1 else None)
            lo = hi
            if lo >= stop:
                break
        self.close()


def _same(path: str) -> str:
    return path if "://" in path else os.path.realpath(path)


__all__ = ["READ_TRIES", "TableFile", "TableOpener", "TableSource"]
