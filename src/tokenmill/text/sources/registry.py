"""The input formats: one :class:`SourceFormat` per format, registered by name; :func:`open_source` opens one.

A format is a small module (``text``, ``tsv``, ``jsonl``, ``parquet``, ``arrow``...) with one function,
``open_format(request: OpenRequest) -> Source``, and one registry line here saying what the core needs to
know about it without importing it (Parquet and Arrow need pyarrow, an extra): how to recognize its
files by content, whether one file holds both sides, whether an item may hold a newline, whether it reads
URLs itself by ranged requests. Adding a format = a new module + :func:`register`; nothing else branches
on its name.

The format of a run is the one given (``--input-format``), except that content wins for the table formats:
a file starting with Parquet's ``PAR1`` or Arrow's magic, or a folder written by ``datasets.save_to_disk``,
is read as such whatever was given (see :func:`detect_format`; URLs go by their extension).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.text.chunks import ReadOptions
from tokenmill.text.io import Opener, PathLike, open_local, read_head
from tokenmill.text.sources import hf_cache, hf_dataset
from tokenmill.text.sources.base import Source


@dataclass(frozen=True)
class OpenRequest:
    """Everything a format needs to open a source: the files, the sides' keys, the read options."""

    files: list[str]
    tgt_files: list[str] | None = None
    src_key: str = "src"
    tgt_key: str | None = "tgt"
    options: ReadOptions = field(default_factory=ReadOptions)
    opener: Opener = open_local


@dataclass(frozen=True)
class SourceFormat:
    """One input format, as the registry and the prepare stages see it."""

    name: str
    module: str
    """The module whose ``open_format(request)`` makes the :class:`Source` (imported when first used)."""
    summary: str
    magic: tuple[bytes, ...] = ()
    """Prefixes its files start with (content detection); empty for the text formats."""
    extensions: tuple[str, ...] = ()
    """Name endings of its files (how a URL is recognized without reading it)."""
    is_folder: Callable[[str], bool] | None = None
    """Whether a local folder is one input of this format."""
    folder_files: Callable[[str], list[str]] | None = None
    """The data files of such a folder, in order."""
    pairs_in_one_file: bool = True
    """Both sides in one file (the prefixes are the files), versus one file per language (text)."""
    newlines_in_items: bool = False
    """An item may hold ``\\n`` (JSON strings, table cells): a cleaned copy must quote its lines."""
    reads_urls: bool = False
    """Reads ``s3://``... URLs itself by ranged requests (else an object is copied to local disk first)."""
    extra: str | None = None
    """The pip extra its module needs."""

    def open(self, request: OpenRequest) -> Source:
        try:
            module = importlib.import_module(self.module)
        except ModuleNotFoundError as error:
            if self.extra is None or error.name is None or error.name.startswith("tokenmill"):
                raise
            raise ConfigError(f"--input-format {self.name} needs {error.name.split('.')[0]}: "
                              f"pip install 'tokenmill[{self.extra}]'") from None
        return module.open_format(request)


FORMATS: dict[str, SourceFormat] = {}


def register(fmt: SourceFormat) -> SourceFormat:
    """Add (or replace) a format under its name; returns it."""
    FORMATS[fmt.name] = fmt
    return fmt


def get_format(name: str) -> SourceFormat:
    """The registered format ``name``, or one error listing the formats there are."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ConfigError(f"unknown input format {name!r}: choose one of {', '.join(map(repr, FORMATS))}") from None


def detect_format(path: str) -> str | None:
    """The table format ``path`` is by its content (a URL: by its extension), or None (a text format, or
    nothing there to look at: the given format stands)."""
    if "://" in path:
        base = path.rsplit("/", 1)[-1].lower()
        return next((f.name for f in FORMATS.values() if f.extensions and base.endswith(f.extensions)), None)
    if os.path.isdir(path):
        return next((f.name for f in FORMATS.values() if f.is_folder is not None and f.is_folder(path)), None)
    if not os.path.isfile(path):
        return None
    head = read_head(path, 16)
    return next((f.name for f in FORMATS.values() if f.magic and head.startswith(f.magic)), None)


def expand_inputs(fmt: SourceFormat, paths: Sequence[str]) -> list[str]:
    """The files of ``paths`` for ``fmt``: a folder of the format becomes its data files."""
    out: list[str] = []
    for path in paths:
        if fmt.folder_files is not None and "://" not in path and os.path.isdir(path):
            out.extend(fmt.folder_files(path))
        else:
            out.append(path)
    return out


def open_source(
    files: Sequence[PathLike],
    fmt: str = "text",
    *,
    tgt_files: Sequence[PathLike] | None = None,
    src_key: str = "src",
    tgt_key: str | None = "tgt",
    options: ReadOptions | None = None,
    opener: Opener | None = None,
) -> Source:
    """One entry point for every format: plain text (mono, or parallel with ``tgt_files``), TSV, JSONL,
    Parquet, Arrow, ``datasets`` folders (see :data:`FORMATS`). ``opener`` opens URL inputs of a format that
    reads them itself (Parquet)."""
    chosen = get_format(fmt)
    if tgt_files is not None and chosen.pairs_in_one_file:
        raise ConfigError(f"format {fmt!r} holds both sides in one file; do not pass target files")
    request = OpenRequest(
        expand_inputs(chosen, [str(p) for p in files]),
        None if tgt_files is None else [str(p) for p in tgt_files],
        src_key, tgt_key, options or ReadOptions(), opener or open_local,
    )
    if not request.files:
        raise TokenmillError(f"{', '.join(map(str, files))}: no input files found")
    return chosen.open(request)


_TEXT = "tokenmill.text.sources."
register(SourceFormat("text", _TEXT + "text", "one file per language, one item per line", pairs_in_one_file=False))
register(SourceFormat("tsv", _TEXT + "tsv", "source<TAB>target, one pair per line"))
register(SourceFormat("jsonl", _TEXT + "jsonl", "one JSON object per line", newlines_in_items=True))
register(SourceFormat("parquet", _TEXT + "parquet", "Parquet files, one item per row", magic=(b"PAR1",),
                      extensions=(".parquet", ".pq"), newlines_in_items=True, reads_urls=True, extra="parquet"))
register(SourceFormat("arrow", _TEXT + "arrow", "Arrow IPC files or streams, one item per row",
                      magic=(b"ARROW1", b"\xff\xff\xff\xff"), extensions=(".arrow", ".feather", ".ipc"),
                      newlines_in_items=True, extra="parquet"))
register(SourceFormat("hf-dataset", _TEXT + "arrow", "a folder written by datasets' save_to_disk",
                      is_folder=hf_dataset.is_saved_dataset, folder_files=hf_dataset.data_files,
                      newlines_in_items=True, extra="parquet"))
register(SourceFormat("hf-cache", _TEXT + "arrow", "a split in the datasets library's cache (load_dataset)",
                      is_folder=hf_cache.is_cache_folder, folder_files=hf_cache.cache_files,
                      newlines_in_items=True, extra="parquet"))


__all__ = ["FORMATS", "OpenRequest", "SourceFormat", "detect_format", "expand_inputs", "get_format", "open_source",
           "register"]
