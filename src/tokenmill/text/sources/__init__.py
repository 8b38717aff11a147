"""Input formats as a registry of small parts: one module per format, one :class:`Source` protocol.

``open_source(files, fmt, ...)`` opens any registered format (:data:`FORMATS`); ``detect_format(path)`` says
which table format a file or folder is by its content. The line formats (text, parallel files, TSV,
JSONL) are imported here; the table formats (Parquet, Arrow, ``datasets`` folders) only when opened, since
they need pyarrow (``pip install 'tokenmill[parquet]'``).
"""

from tokenmill.text.sources.base import Source
from tokenmill.text.sources.jsonl import JsonlSource
from tokenmill.text.sources.line_source import LineSource
from tokenmill.text.sources.parallel import ParallelFiles
from tokenmill.text.sources.registry import (
    FORMATS,
    OpenRequest,
    SourceFormat,
    detect_format,
    expand_inputs,
    get_format,
    open_source,
    register,
)
from tokenmill.text.sources.text import MonoSource
from tokenmill.text.sources.tsv import TsvSource

__all__ = [
    "FORMATS",
    "JsonlSource",
    "LineSource",
    "MonoSource",
    "OpenRequest",
    "ParallelFiles",
    "Source",
    "SourceFormat",
    "TsvSource",
    "detect_format",
    "expand_inputs",
    "get_format",
    "open_source",
    "register",
]
