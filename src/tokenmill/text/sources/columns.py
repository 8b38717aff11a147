"""Text columns of Arrow tables by key: a column name or a dotted path into struct fields (``translation.en``).

Used by every table format (Parquet, Arrow, ``datasets`` folders). :func:`resolve` checks a key against a
file's schema once (one error naming the file, the columns there and the fix); :func:`text_values`
turns one row group's column into Python strings, checking nulls and types with Arrow's own kernels:
a null, a number, a list... is one error naming file, row group and row, or :data:`MALFORMED` under
``on_malformed="skip"`` (counted where the chunk is made).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tokenmill._core.optional import require
from tokenmill.errors import TokenmillError
from tokenmill.text.chunks import MALFORMED, MALFORMED_FIX, OnMalformed

pa = require("pyarrow", extra="parquet", needed_by="reading Parquet and Arrow input")
pc = require("pyarrow.compute", extra="parquet", needed_by="reading Parquet and Arrow input")


@dataclass(frozen=True)
class ColumnPath:
    """Where a key's strings are: the top-level column and the struct fields below it (may be empty)."""

    key: str
    column: str
    fields: tuple[str, ...]


def _is_text(arrow_type: Any) -> bool:
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_string_view(
        arrow_type)


def _struct_hint(schema: Any, key: str) -> str:
    """``--...-key translation.de`` when a struct column has a field named ``key`` (the Hub's translation layout)."""
    for field in schema:
        if pa.types.is_struct(field.type) and field.type.get_field_index(key) >= 0:
            return f"; the struct column {field.name!r} has a field {key!r}: give the key as {field.name}.{key}"
    return ""


def resolve(schema: Any, key: str, path: str) -> ColumnPath:
    """The :class:`ColumnPath` of ``key`` in ``schema`` (a column named ``key`` wins over a dotted path)."""
    if schema.get_field_index(key) >= 0:
        return ColumnPath(key, key, ())
    head, *rest = key.split(".")
    if rest and schema.get_field_index(head) >= 0:
        arrow_type = schema.field(head).type
        for depth, name in enumerate(rest):
            if not pa.types.is_struct(arrow_type) or arrow_type.get_field_index(name) < 0:
                where = ".".join([head, *rest[:depth]])
                raise TokenmillError(
                    f"{path}: column {where!r} has no field {name!r} (its type is {arrow_type}); check the key {key!r}"
                )
            arrow_type = arrow_type.field(name).type
        return ColumnPath(key, head, tuple(rest))
    names = ", ".join(schema.names[:20])
    raise TokenmillError(
        f"{path}: no column {key!r} (columns: {names}){_struct_hint(schema, key)}. Name the text column with "
        "--json-keys / --source-key / --target-key (dotted paths reach struct fields, e.g. translation.en)"
    )


def column_of(table: Any, where: ColumnPath) -> Any:
    """The (chunked) array of strings a :class:`ColumnPath` names in ``table``."""
    values = table.column(where.column)
    return pc.struct_field(values, list(where.fields)) if where.fields else values


def _problem(values: Any, row: int) -> str:
    value = values[row].as_py()
    if value is None:
        return "is null"
    return f"is a {type(value).__name__} ({str(value)[:40]!r}), not a string"


def text_values(values: Any, where: ColumnPath, at: tuple[str, int, int], policy: OnMalformed) -> list:
    """Python strings of one column slice; ``at`` = (file, row group, the slice's first row in the file).

    A value that is null or not a string is an error naming the file, row group and row (1-based rows of
    the file), or :data:`MALFORMED` in its place under ``policy="skip"``.
    """
    path, group, first_row = at
    if _is_text(values.type) and values.null_count == 0:
        return values.to_pylist()
    if _is_text(values.type):
        bad = np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))
    else:
        bad = np.arange(len(values))
    if len(bad) and policy == "error":
        row = int(bad[0])
        raise TokenmillError(
            f"{path}: row group {group}, row {first_row + row + 1}: {where.key!r} {_problem(values, row)}. "
            f"{MALFORMED_FIX}"
        )
    out = values.to_pylist() if _is_text(values.type) else [None] * len(values)
    for row in bad.tolist():
        out[row] = MALFORMED
    return out


__all__ = ["ColumnPath", "column_of", "resolve", "text_values"]
