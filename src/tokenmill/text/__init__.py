"""The text stage: aligned reading, normalization, pair filters, dedup and leakage removal.

Typical use (single process; see :mod:`~tokenmill.text.cleaner` for splitting it over workers)::

    from tokenmill.text import CleanConfig, Cleaner, FilterConfig, Normalizer, ParallelFiles, ReadOptions

    source = ParallelFiles.from_prefixes("data/train", "en", "zh", ReadOptions(on_invalid_utf8="skip"))
    source.scan()  # counts both sides first; raises naming both files on a mismatch
    cleaner = Cleaner(CleanConfig(Normalizer(fullwidth=True), FilterConfig(max_tokens=250)))
    for chunk in source.chunks():  # or source.chunks(start, stop) for one of source.ranges(k)
        chunk = cleaner(chunk)  # chunk.src[i] pairs with chunk.tgt[i]
    print(format_table([source.stats, *cleaner.stats.values()]))

Modules: :mod:`~tokenmill.text.sources` (the input formats, one module each, and their registry),
:mod:`~tokenmill.text.io` (compression, opening), :mod:`~tokenmill.text.lines` (line index, byte ranges,
decoding), :mod:`~tokenmill.text.chunks` (what a source yields),
:mod:`~tokenmill.text.normalize`, :mod:`~tokenmill.text.cleaner`, :mod:`~tokenmill.text.filters`,
:mod:`~tokenmill.text.dedup`, :mod:`~tokenmill.text.lid` (language-ID backends and labels),
:mod:`~tokenmill.text.langid` (py3langid's model, vectorized), :mod:`~tokenmill.text.charclass`,
:mod:`~tokenmill.text.stats`.
"""

from tokenmill.text.chunks import Chunk, ReadOptions
from tokenmill.text.cleaner import CleanConfig, Cleaner
from tokenmill.text.dedup import Deduplicator, HashSet, LeakageFilter, pair_hashes, side_hashes
from tokenmill.text.filters import (
    FILTER_STEPS,
    FilterConfig,
    FilterResult,
    PairFilter,
    char_lengths,
    whitespace_token_lengths,
)
from tokenmill.text.io import count_lines, detect_compression, open_binary, resolve_prefix
from tokenmill.text.lines import LineIndex, byte_ranges, iter_byte_range, line_offsets, scan_lines
from tokenmill.text.normalize import STEPS as NORMALIZE_STEPS
from tokenmill.text.normalize import Normalizer
from tokenmill.text.sources import (
    FORMATS,
    JsonlSource,
    MonoSource,
    ParallelFiles,
    Source,
    TsvSource,
    detect_format,
    open_source,
)
from tokenmill.text.stats import StepStats, format_table, merge_all

__all__ = [
    "FILTER_STEPS",
    "FORMATS",
    "NORMALIZE_STEPS",
    "Chunk",
    "CleanConfig",
    "Cleaner",
    "Deduplicator",
    "FilterConfig",
    "FilterResult",
    "HashSet",
    "JsonlSource",
    "LeakageFilter",
    "LineIndex",
    "MonoSource",
    "Normalizer",
    "PairFilter",
    "ParallelFiles",
    "ReadOptions",
    "Source",
    "StepStats",
    "TsvSource",
    "byte_ranges",
    "char_lengths",
    "count_lines",
    "detect_compression",
    "detect_format",
    "format_table",
    "iter_byte_range",
    "line_offsets",
    "merge_all",
    "open_binary",
    "open_source",
    "pair_hashes",
    "resolve_prefix",
    "scan_lines",
    "side_hashes",
    "whitespace_token_lengths",
]
