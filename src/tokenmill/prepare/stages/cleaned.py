"""The clean stage's plan and its output as the later stages read it.

:func:`clean_plan` gives the files, clean-up settings and key of ``clean.{split}``; :func:`cleaned_source`
is a split's cleaned text as a source (the cleaned file, train's clean parts, or the input itself when
cleaning keeps every line as read: :func:`reads_input`). Every stage after ``clean`` reads through here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from tokenmill.prepare.clean_parts import PartsSource
from tokenmill.prepare.config import PrepareConfig
from tokenmill.prepare.near_dedup import near_settings, near_sides
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.run.tasking import task_count
from tokenmill.prepare.state import fingerprint
from tokenmill.prepare.tokenizing import piece_filter, samples_by_bytes
from tokenmill.text import CleanConfig, Cleaner, FilterConfig, LeakageFilter, ReadOptions, open_source, resolve_prefix
from tokenmill.text.chunks import byte_bounded_lines
from tokenmill.text.decontaminate import Contamination
from tokenmill.text.filters import with_rule_langs, without_piece_filters
from tokenmill.text.line_block import line_text
from tokenmill.text.readers import Source
from tokenmill.text.sources import expand_inputs, get_format

CLEAN_CHUNK_LINES = 16384  # pairs per cleaning chunk (strings are ~200 bytes each in Python)


@dataclass(frozen=True)
class CleanPlan:
    """What stage ``clean.{split}`` reads and does, and its key."""

    split: str
    files: list[str]
    tgt_files: list[str] | None
    config: CleanConfig
    key: str

    def index_paths(self) -> list[str]:
        """The files a source of this plan indexes, in its order (a parallel corpus: source, target, ...)."""
        if self.tgt_files is None:
            return list(self.files)
        return [path for pair in zip(self.files, self.tgt_files, strict=True) for path in pair]


def input_files(ctx: RunContext, split: str) -> tuple[list[str], list[str] | None]:
    """The source (and target) input files of ``split``, URL inputs staged."""
    cfg = ctx.config
    prefixes = cfg.split_prefixes()[split]
    fmt = get_format(cfg.inputs.input_format)
    if fmt.pairs_in_one_file:  # the prefixes are the files (URLs read in place where the format can)
        listed = ctx.inputs.urls if fmt.reads_urls else ctx.inputs.files
        return expand_inputs(fmt, [path for pattern in prefixes for path in listed(pattern)]), None
    suffixes = cfg.langs + ([cfg.inputs.align_suffix] if cfg.inputs.align_suffix else [])
    prefixes = [ctx.inputs.prefix(p, suffixes) for p in prefixes]
    src = [resolve_prefix(p, cfg.inputs.source_lang) for p in prefixes]  # type: ignore[arg-type]
    tgt = None if cfg.monolingual else [resolve_prefix(p, cfg.inputs.target_lang) for p in prefixes]  # type: ignore[arg-type]
    return src, tgt


def align_files(ctx: RunContext, split: str) -> list[str]:
    """The word-alignment files of a split (``{pref}.{align_suffix}``), if alignments were asked for."""
    suffix = ctx.config.inputs.align_suffix
    prefixes = [ctx.inputs.prefix(p, [suffix]) for p in ctx.config.split_prefixes()[split]] if suffix else []
    return [resolve_prefix(p, suffix) for p in prefixes]  # type: ignore[arg-type]


def open_inputs(ctx: RunContext, files: list[str], tgt_files: list[str] | None) -> Source:
    """The input files as one source: the one call through which the inputs are read."""
    cfg = ctx.config
    return open_source(
        files,
        cfg.inputs.input_format,  # type: ignore[arg-type]
        tgt_files=tgt_files,
        src_key=cfg.inputs.source_key or ("text" if cfg.monolingual else cfg.inputs.source_lang) or "src",
        tgt_key=None if cfg.monolingual else (cfg.inputs.target_key or cfg.inputs.target_lang),
        options=ctx.read_options,
        opener=ctx.inputs.open,
    )


def clean_plan(ctx: RunContext, split: str) -> CleanPlan:
    """The files, clean-up settings and key of stage ``clean.{split}`` (train's key includes the held-out
    splits' keys, computed here too, so a task on another machine finds the same key)."""
    cfg = ctx.config
    files, tgt_files = input_files(ctx, split)
    heldout = split != "train"
    filters = cfg.cleaning.filters if (not heldout or cfg.cleaning.filter_heldout) else FilterConfig(drop_empty=False)
    if piece_filter(cfg) is not None:  # counted in the tokenizer's pieces after encoding instead
        filters = without_piece_filters(filters)
    filters = with_rule_langs(filters, cfg.inputs.source_lang, cfg.inputs.target_lang)
    contamination = Contamination.of_files(cfg.cleaning.decontaminate, cfg.cleaning.decontaminate_ngram) if (
        cfg.cleaning.decontaminate and not heldout) else None
    clean_config = CleanConfig(normalize=cfg.cleaning.normalize, filters=filters,
                               dedup=cfg.cleaning.dedup and not heldout, decontaminate=contamination)
    leakage_refs = [] if heldout or cfg.cleaning.leakage == "off" else [
        clean_plan(ctx, s).key for s in ("valid", "test") if s in cfg.split_prefixes()
    ]
    near = near_settings(cfg) if not heldout else None
    key = fingerprint(
        "clean", split, [ctx.inputs.identity(f) for f in files + (tgt_files or []) + align_files(ctx, split)],
        cfg.inputs.input_format, cfg.inputs.source_key, cfg.inputs.target_key, repr(ctx.read_options),
        repr(clean_config), cfg.cleaning.leakage, leakage_refs,
        *([cfg.inputs.documents] if cfg.inputs.documents != "line" else []),
        *([repr(near), near_sides(cfg)] if near else []),  # only when asked: earlier keys stay as they were
    )
    return CleanPlan(split, files, tgt_files, clean_config, key)


def train_tasked(ctx: RunContext) -> bool:
    """Whether the training split goes through tasks: on a cluster engine, with --tasks given (even 1), in a
    --phase, or when the input asks for more than one task; else the plain one-process path."""
    cfg = ctx.config
    if cfg.inputs.align_suffix or cfg.inputs.documents == "blank-line":
        return False  # alignments and blank-line documents are cleaned in one piece (see config)
    if ctx.engine.is_cluster or cfg.engine.tasks >= 1 or ctx.phase is not None or cfg.cleaning.near_dedup:
        return True  # near-dedup settles its clusters over the tasks' parts (one task is one part)
    return task_count(ctx, train_input_bytes(ctx)) > 1


def train_input_bytes(ctx: RunContext) -> int:
    """The training input's size: local files' sizes, or an object's size as its listing gives it (URL
    inputs read in place have no local copy)."""
    plan = clean_plan(ctx, "train")
    return sum(int(ctx.inputs.identity(f)["bytes"]) for f in plan.files + (plan.tgt_files or []))


def reads_input(ctx: RunContext, split: str) -> bool:
    """Whether ``split`` goes to the tokenizer straight from the input files: cleaning would keep every line
    as read (Megatron's flags: nothing normalized, filtered, leak-checked or deduplicated), so no cleaned
    copy is written and read back. The clean stage then writes only its (empty) drop sample, the encode
    stage reads the input and counts what the clean stage would have, and :func:`cleaned_source` is the
    input. One side only, no alignments or blank-line documents, not cut into tasks, and not a tokenizer
    whose vocabulary builder reads the cleaned files by path (T2T)."""
    cfg = ctx.config
    if not ctx.direct_input or len(cfg.langs) != 1 or cfg.inputs.align_suffix or cfg.inputs.documents != "line":
        return False
    if samples_by_bytes(cfg) or train_tasked(ctx):
        return False
    if split == "train" and cfg.cleaning.leakage != "off":  # train is checked against the held-out splits
        return False
    return Cleaner(clean_plan(ctx, split).config).keeps_everything


def quoted_clean(config: PrepareConfig) -> bool:
    """Whether the cleaned files hold JSON objects (lines that may hold a newline: JSONL kept as it is)."""
    collapsed = config.cleaning.normalize.collapse_whitespace
    return get_format(config.inputs.input_format).newlines_in_items and not collapsed


def clean_text(ctx: RunContext, lines: list[str]) -> str:
    """Lines as the cleaned files hold them: plain lines, or JSON objects when a line may hold a newline."""
    return line_text(lines, quoted_clean(ctx.config))


def cleaned_line(ctx: RunContext, raw: bytes) -> str:
    """One line of a cleaned file (as :func:`clean_text` wrote it) back to its text."""
    text = raw.decode("utf-8")
    return json.loads(text)["t"] if quoted_clean(ctx.config) else text


def cleaned_source(ctx: RunContext, split: str, lang: str) -> Source:
    """The cleaned text of one split and side as a source (JSON-quoted on disk when lines may hold
    newlines; the input itself when cleaning keeps everything as read, see :func:`reads_input`)."""
    if reads_input(ctx, split):
        plan = clean_plan(ctx, split)
        return open_inputs(ctx, plan.files, plan.tgt_files)
    if split == "train" and ctx.parts is not None:  # the clean tasks' parts, through their masks
        return PartsSource(ctx.parts, lang)  # type: ignore[return-value]
    path = str(ctx.folder.clean_path(split, lang))
    options = ReadOptions(chunk_lines=ctx.config.run.chunk_lines)
    if quoted_clean(ctx.config):
        return open_source([path], "jsonl", src_key="t", tgt_key=None, options=options)
    return open_source([path], options=options)


def cleaned_chunks(ctx: RunContext, split: str, lang: str) -> Iterator[list[str]]:
    """The cleaned lines of one split and side, chunk by chunk (see :func:`cleaned_source`)."""
    for chunk in cleaned_source(ctx, split, lang).chunks():
        yield chunk.src


def cleaned_pairs(ctx: RunContext, split: str) -> Iterator[tuple[list[str], list[str] | None]]:
    """(source lines, target lines or None) of a cleaned split, chunk by chunk."""
    langs = ctx.config.langs
    if len(langs) == 1:
        yield from ((src, None) for src in cleaned_chunks(ctx, split, langs[0]))
        return
    yield from zip(cleaned_chunks(ctx, split, langs[0]), cleaned_chunks(ctx, split, langs[1]), strict=True)


def leakage_filter(ctx: RunContext, split: str) -> LeakageFilter | None:
    """Train's filter against the cleaned valid/test sets (None for held-out splits or --leakage off)."""
    cfg = ctx.config
    if split != "train" or cfg.cleaning.leakage == "off":
        return None
    leakage = LeakageFilter(cfg.cleaning.leakage)  # type: ignore[arg-type]
    for heldout in ("valid", "test"):
        if heldout in cfg.split_prefixes():
            leakage.add_reference_chunks(cleaned_pairs(ctx, heldout))
    return leakage


def clean_stats(config: PrepareConfig, read: dict[str, int], cleaner: Cleaner, kept: int, pairs: bool) -> dict:
    """The clean stage's counts: what was read, each step's counters, what was kept."""
    stats: dict = {"read": dict(read)}
    stats.update({name: dict(s.counts) for name, s in cleaner.stats.items() if s.counts})
    stats["kept"] = {"pairs" if pairs or config.inputs.input_format != "text" else "lines": kept}
    return stats


def clean_chunk_lines(config: PrepareConfig, source: Source | None = None) -> int:
    """Items a cleaning chunk (or worker range) holds: ``--chunk-lines``, at most :data:`CLEAN_CHUNK_LINES`,
    and fewer when ``source``'s items are long (LM documents) so that a chunk holds about ``CHUNK_BYTES`` of
    input (16,384 documents of 20 kB would be 330 MB of text at once). Chunks change no output."""
    lines = min(config.run.chunk_lines, CLEAN_CHUNK_LINES)
    return lines if source is None else byte_bounded_lines(lines, source.scan(), input_bytes(source))


def input_bytes(source: Source) -> int:
    """About how many bytes of text ``source``'s items hold (:meth:`~tokenmill.text.sources.base.Source.text_bytes`:
    its local files' sizes; Parquet's decoded size; chunks sized by it, never output)."""
    return source.text_bytes()
