"""The names this module held before the input formats became :mod:`tokenmill.text.sources` (kept importable).

Where each lives now: compression and opening in :mod:`tokenmill.text.io`; the line index, byte ranges
and decoding in :mod:`tokenmill.text.lines`; chunks and read options in :mod:`tokenmill.text.chunks`; the
sources, one module per format, and :func:`open_source` in :mod:`tokenmill.text.sources`.
"""

from tokenmill.text.chunks import Chunk, OnInvalidUtf8, OnMalformed, ReadOptions
from tokenmill.text.io import COMPRESSED_SUFFIXES, count_lines, detect_compression, open_binary, resolve_prefix
from tokenmill.text.lines import BOM, LineIndex, byte_ranges, iter_byte_range, line_offsets, scan_lines
from tokenmill.text.sources import JsonlSource, MonoSource, ParallelFiles, Source, TsvSource, open_source

__all__ = [
    "BOM",
    "COMPRESSED_SUFFIXES",
    "Chunk",
    "JsonlSource",
    "LineIndex",
    "MonoSource",
    "OnInvalidUtf8",
    "OnMalformed",
    "ParallelFiles",
    "ReadOptions",
    "Source",
    "TsvSource",
    "byte_ranges",
    "count_lines",
    "detect_compression",
    "iter_byte_range",
    "line_offsets",
    "open_binary",
    "open_source",
    "resolve_prefix",
    "scan_lines",
]
