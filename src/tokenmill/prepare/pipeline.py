"""``tokenmill prepare``: raw text -> cleaned text -> tokenizer -> ids -> dictionaries -> stores.

Stages (each restartable, see :mod:`tokenmill.prepare.state`), in order:

1. ``clean.{split}``: read (alignment checked first), normalize, filter, drop held-out leaks,
   dedup; cleaned text goes to ``.work/clean/{split}.{lang}`` (valid/test first: train's leakage
   filter needs them).
2. ``tokenizer``: train SentencePiece on a seeded sample of cleaned train lines (a function of the
   seed and line numbers: :mod:`~tokenmill.prepare.line_sample`), or copy the given ``.model``.
3. ``encode.{split}.{lang}``: batched SentencePiece encoding (native threads) to id stores in
   ``.work/ids``; piece counts of train are kept for the dictionary.
4. ``dictionary``: fairseq ``dict.{lang}.txt`` from those counts (or the given dict files).
5. ``binarize.{split}.{lang}``: ids mapped through the dictionary (one vectorized lookup), ``</s>``
   appended, written as ``{split}.{src}-{tgt}.{lang}.bin/.idx`` (train optionally in ``shardNNN/``).

Then ``preprocess.log`` and ``manifest.json`` are written. Nothing in the outputs depends on time
or worker count, so a killed run that is re-run gives byte-identical files.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from itertools import chain, islice
from operator import methodcaller
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock, Timeout
from tqdm import tqdm

from tokenmill._core.ordered import ordered_map, prefetched
from tokenmill.errors import ConfigError, FormatError, TokenmillError
from tokenmill.fsutil import atomic_path, atomic_write, remove_stale_temps, write_json
from tokenmill.prepare import encode_workers
from tokenmill.prepare.clean_parts import PartsSource
from tokenmill.prepare.config import RUN_ONLY, SPLITS, PrepareConfig, build_config
from tokenmill.prepare.crash import crash_point as _crash_point
from tokenmill.prepare.distributed import COUNT_STAGES, DEDUP_STAGE, SAMPLE_STAGE, PhaseDone, Tasked
from tokenmill.prepare.encode_workers import (
    PROCESS_BACKENDS,
    FirstSeen,
    encoded_ranges,
    forks,
    global_word_ids,
    text_batches,
    word_ids,
)
from tokenmill.prepare.encoded_parts import (
    IDS,
    IdCounts,
    ended,
    item_token_counts,
    regrouped,
    summed_counts,
)
from tokenmill.prepare.heap import release_heap
from tokenmill.prepare.line_sample import SmallestKeys
from tokenmill.prepare.object_storage import (
    INPUTS_DIR,
    StagedInputs,
    check_destination,
    publish_to,
    work_folder,
)
from tokenmill.prepare.parallel import clean_blocks, clean_chunks, reads_in_workers
from tokenmill.prepare.publish import STAGING_DIR, check_owned, prune_staging, publish
from tokenmill.prepare.sequential import item_blocks, npy_blocks, save_npy_blocks, size_blocks, store_length
from tokenmill.prepare.state import StageStore, file_identity, fingerprint
from tokenmill.prepare.tasks import TaskKilled
from tokenmill.prepare.tokenizing import (
    WHITESPACE,
    Found,
    UnknownSurfaces,
    backend_name,
    given_model,
    load_settings,
    piece_lookup,
    spm_options,
    stores_tokenizer_ids,
    train_settings,
)
from tokenmill.store import IndexedWriter
from tokenmill.store.format import token_dtype
from tokenmill.store.layout import (
    align_name,
    dict_name,
    dropped_path,
    megatron_name,
    shard_dir,
    shard_dirs,
    store_name,
)
from tokenmill.store.manifest import build_manifest, file_checksum
from tokenmill.store.meaning import FAIRSEQ, T2T, TOKENIZER, store_meaning
from tokenmill.store.remote import is_url
from tokenmill.text import CleanConfig, Cleaner, FilterConfig, LeakageFilter, ReadOptions, open_source, resolve_prefix
from tokenmill.text.documents import documents_by_file
from tokenmill.text.filters import PairFilter, piece_filters, without_piece_filters
from tokenmill.text.line_block import line_text
from tokenmill.text.readers import Chunk, Source
from tokenmill.text.sources import expand_inputs, get_format
from tokenmill.text.stats import StepStats
from tokenmill.vocab.dictionary import Dictionary
from tokenmill.vocab.sentencepiece import SentencePieceOptions
from tokenmill.vocab.t2t_backend import t2t_sample, t2t_sample_streams
from tokenmill.vocab.tokenizer import Tokenizer, get_backend, load_tokenizer, stable_name, train_tokenizer

log = logging.getLogger("tokenmill.prepare")

SAMPLE_RULE = "smallest-keys"
"""The training sample's rule (:mod:`~tokenmill.prepare.line_sample`), part of the tokenizer stage's key;
earlier versions drew a sequential reservoir sample (no rule in their key)."""
WORK_DIR = ".work"
_PHARAOH = re.compile(r"(?:\d+-\d+(?: \d+-\d+)*)?")
_ITEMS_PER_BLOCK = 1 << 16  # items per binarize block: bounds the temporary id arrays
_MASK_ITEMS = 1 << 22  # piece-filter mask entries read at a time when taking dropped items out of kept counts
_CLEAN_CHUNK_LINES = 16384  # pairs per cleaning chunk (strings are ~200 bytes each in Python)
_PARALLEL_CLEAN_MIN_LINES = 200_000  # below this, starting worker processes costs more than it saves
_ENCODE_BATCH_CHARS = 4 << 20  # characters per tokenizer call: bounds the library's per-call objects (LM documents)
_OVERLAPPED_BATCHES = 2  # tokenizer calls at once (threads), for libraries that encode without the GIL


@dataclass
class PrepareSummary:
    """What a run produced: per split and language counts, filter statistics, vocabularies."""

    destdir: Path
    splits: dict[str, dict[str, Any]] = field(default_factory=dict)
    """split -> {"clean": {step: counts}, "langs": {lang: {"sentences", "tokens", "unk", "unk_percent"}}}."""
    vocab: dict[str, Any] = field(default_factory=dict)
    ran: list[str] = field(default_factory=list)
    """Stages that ran in this invocation (the others were already done)."""
    skipped: list[str] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    """Stage -> wall seconds it took when it ran (in this invocation or the one that made it)."""
    warnings: list[str] = field(default_factory=list)
    """What the user should know about the result (also logged as it happens)."""
    tasks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Tasked stage -> one row per task (lines, seconds, attempts, host), when the run used tasks."""
    merge_seconds: dict[str, float] = field(default_factory=dict)
    """Tasked stage -> seconds spent joining its parts."""

    def ordered(self) -> list[tuple[str, dict[str, Any]]]:
        """Splits in train, valid, test order."""
        return sorted(self.splits.items(), key=lambda item: SPLITS.index(item[0]))

    def to_dict(self) -> dict[str, Any]:
        return {"splits": dict(self.ordered()), "vocab": self.vocab}

    def warn(self, message: str) -> None:
        """Log ``message`` now and keep it for the printed summary and the manifest."""
        log.warning("warning: %s", message)
        if message not in self.warnings:
            self.warnings.append(message)

    def stage_table(self) -> dict[str, dict[str, Any]]:
        """Stage -> {"seconds", "ran"} in the order the stages ran."""
        ran = set(self.ran)
        return {name: {"seconds": seconds, "ran": name in ran} for name, seconds in self.stage_seconds.items()}

    def table(self) -> str:
        """A preprocess.log-style table: one row per split and language, then each cleaning step's drops."""
        lines = [f"{'split':<8}{'lang':<8}{'sentences':>12}{'tokens':>14}{'<unk>':>10}{'% <unk>':>9}"]
        for split, info in self.ordered():
            for lang, row in info.get("langs", {}).items():
                lines.append(
                    f"{split:<8}{lang:<8}{row['sentences']:>12}{row['tokens']:>14}{row['unk']:>10}"
                    f"{row['unk_percent']:>8.2f}%"
                )
        for split, info in self.ordered():
            lines.extend(cleaning_lines(split, info.get("clean", {})))
        eod = self.vocab.get("eod")
        if isinstance(eod, dict):
            lines.append(f"end of document: {eod['symbol']} = id {eod['id']}")
        return "\n".join(lines)

    def report(self) -> str:
        """What the command prints: the table, the stage times and the warnings."""
        lines = [self.table()]
        if self.stage_seconds:
            total = sum(self.stage_seconds.values())
            shown = ", ".join(
                f"{name} {seconds:.1f}s" + ("" if row["ran"] else " (up to date)")
                for name, row in self.stage_table().items()
                for seconds in [row["seconds"]]
                if row["ran"] or seconds >= 0.05
            )
            lines.append(f"stage times ({total:.1f}s in all): {shown}")
        lines.extend(task_lines(self.tasks, self.merge_seconds))
        lines.extend(f"warning: {message}" for message in self.warnings)
        return "\n".join(lines)


def task_lines(tasks: dict[str, list[dict[str, Any]]], merges: dict[str, float]) -> list[str]:
    """One line per tasked stage: tasks, lines, the slowest task, retries and the merge's seconds."""
    out = []
    for stage, rows in tasks.items():
        retries = sum(row["attempts"] - 1 for row in rows)
        slowest = max(rows, key=lambda row: row["seconds"])
        lines = sum(row["lines"] for row in rows)
        out.append(
            f"tasks {stage}: {len(rows)} tasks, {lines:,} lines, slowest #{slowest['task']} {slowest['seconds']:.1f}s, "
            f"{retries} retr{'y' if retries == 1 else 'ies'}"
            + (f", merge {merges[stage]:.1f}s" if stage in merges else "")
        )
    return out


def cleaning_lines(split: str, steps: dict[str, dict[str, int]]) -> list[str]:
    """One line per cleaning step of a split; what a step dropped (and what was kept) also as a share
    of the lines read, so a filter that removes a quarter of the data is seen at a glance."""
    base = steps.get("read", {}).get("read", 0)
    lines = []
    for step, counts in steps.items():
        shown = []
        for key, value in counts.items():
            share = (step not in ("read", "normalize") and key not in ("pairs", "lines")) or step == "kept"
            shown.append(f"{key} {value}" + (f" ({100.0 * value / base:.1f}%)" if share and base else ""))
        lines.append(f"{split} {step}: {', '.join(shown)}")
    return lines


@dataclass(frozen=True)
class CleanPlan:
    """What stage ``clean.{split}`` reads and does, and its key."""

    split: str
    files: list[str]
    tgt_files: list[str] | None
    config: CleanConfig
    key: str


PHASES = ("plan", "clean", "tokenizer", "encode", "merge")
"""Steps of a run cut for a scheduler (Slurm): ``plan`` (held-out splits cleaned, train's tasks planned),
``clean`` (one task, ``--task I``), ``tokenizer`` (dedup, merge, tokenizer, encode tasks planned),
``encode`` (one task), ``merge`` (the rest, published). Without a phase a run does them all."""


class Pipeline:
    """One prepare run over a validated :class:`PrepareConfig`."""

    can_use_tasks = True
    """Whether the training split may be cut into tasks (see :mod:`tokenmill.prepare.distributed`)."""

    def __init__(
        self, config: PrepareConfig, *, force: bool = False, progress: bool | None = None, phase: str | None = None
    ) -> None:
        self.config = config.validate()
        self.url = config.destdir if is_url(config.destdir) else None
        """--destdir as a URL: the run works in a local folder and publishes there at the end."""
        self.root = work_folder(config.destdir) if self.url else Path(config.destdir)
        self.work = self.root / WORK_DIR
        self.stages = StageStore(self.root, force=force)
        self.progress = sys.stderr.isatty() if progress is None else progress
        self.summary = PrepareSummary(self.root)
        self.read_options = ReadOptions(
            on_invalid_utf8=config.on_invalid_utf8,  # type: ignore[arg-type]
            on_malformed=config.on_malformed,  # type: ignore[arg-type]
            chunk_lines=config.chunk_lines,
        )
        self.keys: dict[str, str] = {}
        self.out = self.work / STAGING_DIR
        """Where stages write the directory's outputs; :meth:`publish` puts them in place at the end."""
        self.produced: set[Path] = set()
        self.meanings: dict[str, dict[str, Any]] = {}
        self._tokenizers: dict[str, Tokenizer] = {}
        self.tasked = Tasked(self, phase)
        self.id_parts: dict[str, list[Path]] = {}
        """lang -> the folders of train's encoded parts, when its encode stage was cut into tasks (then no joined
        id store is written: the dictionary and binarize work from the parts)."""
        self.inputs = StagedInputs(self.work / INPUTS_DIR, config.storage_options)
        """Staged store prefix -> what its ids mean (vocabulary file, size, end-of-item id)."""
        """Staged outputs of the stages of this run (ran or up to date): what the directory will hold."""

    # ---------------------------------------------------------------- helpers
    def _stage(self, name: str, key: str, run: Callable[[], tuple[list[Path], dict[str, Any]]]) -> dict[str, Any]:
        record = self.stages.done(name, key)
        if record is None:
            log.info("stage %s: running", name)
            started = time.perf_counter()
            outputs, info = run()
            release_heap()  # the stage's freed temporaries leave the coordinator's resident memory
            _crash_point(f"{name}:before-record")
            record = self.stages.finish(name, key, outputs, info, seconds=time.perf_counter() - started)
            _crash_point(name)
            self.summary.ran.append(name)
        else:
            log.info("stage %s: up to date, skipped", name)
            self.summary.skipped.append(name)
        self.summary.stage_seconds[name] = record.get("seconds", 0.0)
        self.produced.update(self.root / relative for relative in record["outputs"])
        self.keys[name] = key
        return record["info"]

    def _bar(self, total: int | None, desc: str) -> tqdm:
        return tqdm(total=total, desc=desc, unit=" lines", unit_scale=True, disable=not self.progress, leave=False)

    def _input_files(self, split: str) -> tuple[list[str], list[str] | None]:
        cfg = self.config
        prefixes = cfg.split_prefixes()[split]
        fmt = get_format(cfg.input_format)
        if fmt.pairs_in_one_file:  # the prefixes are the files (URLs read in place where the format can)
            listed = self.inputs.urls if fmt.reads_urls else self.inputs.files
            return expand_inputs(fmt, [path for pattern in prefixes for path in listed(pattern)]), None
        suffixes = cfg.langs + ([cfg.align_suffix] if cfg.align_suffix else [])
        prefixes = [self.inputs.prefix(p, suffixes) for p in prefixes]
        src = [resolve_prefix(p, cfg.source_lang) for p in prefixes]  # type: ignore[arg-type]
        tgt = None if cfg.monolingual else [resolve_prefix(p, cfg.target_lang) for p in prefixes]  # type: ignore[arg-type]
        return src, tgt

    def _open(self, files: list[str], tgt_files: list[str] | None) -> Source:
        cfg = self.config
        return open_source(
            files,
            cfg.input_format,  # type: ignore[arg-type]
            tgt_files=tgt_files,
            src_key=cfg.source_key or ("text" if cfg.monolingual else cfg.source_lang) or "src",
            tgt_key=None if cfg.monolingual else (cfg.target_key or cfg.target_lang),
            options=self.read_options,
            opener=self.inputs.open,
        )

    def clean_path(self, split: str, lang: str) -> Path:
        return self.work / "clean" / f"{split}.{lang}"

    def cleaned_pairs(self, split: str) -> Iterator[tuple[list[str], list[str] | None]]:
        """(source lines, target lines or None) of a cleaned split, chunk by chunk."""
        langs = self.config.langs
        if len(langs) == 1:
            yield from ((src, None) for src in self.cleaned_chunks(split, langs[0]))
            return
        yield from zip(self.cleaned_chunks(split, langs[0]), self.cleaned_chunks(split, langs[1]), strict=True)

    def clean_text(self, lines: list[str]) -> str:
        """Lines as the cleaned files hold them: plain lines, or JSON objects when a line may hold a newline."""
        return line_text(lines, self.quoted_clean)

    def output_prefix(self, split: str, lang: str, shard: int | None = None) -> Path:
        """The staged store of one side (names from :mod:`tokenmill.store.layout`)."""
        cfg = self.config
        if cfg.output_prefix:  # Megatron's preprocess_data names
            name = megatron_name(os.path.basename(cfg.output_prefix), cfg.source_key or "text")
        else:
            name = store_name(split, cfg.source_lang, cfg.target_lang, lang)  # type: ignore[arg-type]
        return self.out / (shard_dir(shard) if shard is not None else "") / name

    def dict_path(self, lang: str) -> Path:
        """The staged fairseq dictionary of ``lang`` (``dict.txt`` for monolingual data)."""
        return self.out / dict_name(None if self.config.monolingual else lang)

    # ---------------------------------------------------------------- stage 1: clean
    def clean(self) -> None:
        cfg = self.config
        splits = [s for s in ("valid", "test", "train") if s in cfg.split_prefixes()]
        for split in splits:
            plan = self.clean_settings(split)
            if split == "train" and self.tasked.enabled and self.stages.done("clean.train", plan.key) is None:
                tasks = self.tasked.plan_clean(plan, execute_task)
                if self.tasked.phase == "plan":
                    raise PhaseDone(f"planned {tasks.count} tasks of clean.train")
                run = lambda p=plan, t=tasks: self._run_clean_tasks(p, t)  # noqa: E731
            else:
                run = lambda p=plan: self._run_clean(p.split, p.files, p.tgt_files, p.config)  # noqa: E731
            # A stage that wrote no cleaned copy (the input is read as it is) is not done for a run that reads one.
            key = fingerprint(plan.key, "read as input") if self.reads_input(split) else plan.key
            info = self._stage(f"clean.{split}", key, run)
            if info["stats"] is not None:  # None: the text goes to the tokenizer as read (counted there)
                self.summary.splits.setdefault(split, {})["clean"] = info["stats"]
            if split == "train" and info.get("parts"):  # the tasks' parts are the cleaned text (never joined)
                self.tasked.clean_parts(info["parts"])
            elif split == "train":
                self.tasked.parts = None
                self.tasked.task_set("clean.train", plan.key).remove()

    def clean_settings(self, split: str) -> CleanPlan:
        """The files, clean-up settings and key of stage ``clean.{split}`` (train's key includes the held-out
        splits' keys, computed here too, so a task on another machine finds the same key)."""
        cfg = self.config
        files, tgt_files = self._input_files(split)
        heldout = split != "train"
        filters = cfg.filters if (not heldout or cfg.filter_heldout) else FilterConfig(drop_empty=False)
        if self.piece_filter() is not None:  # counted in the tokenizer's pieces after encoding instead
            filters = without_piece_filters(filters)
        clean_config = CleanConfig(normalize=cfg.normalize, filters=filters, dedup=cfg.dedup and not heldout)
        leakage_refs = [] if heldout or cfg.leakage == "off" else [
            self.clean_settings(s).key for s in ("valid", "test") if s in cfg.split_prefixes()
        ]
        align_files = self._align_files(split)
        key = fingerprint(
            "clean", split, [self.inputs.identity(f) for f in files + (tgt_files or []) + align_files],
            cfg.input_format,
            cfg.source_key, cfg.target_key, repr(self.read_options), repr(clean_config), cfg.leakage, leakage_refs,
            *([cfg.documents] if cfg.documents != "line" else []),
        )
        return CleanPlan(split, files, tgt_files, clean_config, key)

    def open_inputs(self, plan: CleanPlan) -> Source:
        return self._open(plan.files, plan.tgt_files)

    @staticmethod
    def clean_workers(lines: int, workers: int) -> int:
        """Processes to clean ``lines`` with: one below a size where starting workers costs more than it saves."""
        return workers if lines >= _PARALLEL_CLEAN_MIN_LINES else 1

    @property
    def clean_chunk_lines(self) -> int:
        return min(self.config.chunk_lines, _CLEAN_CHUNK_LINES)

    def leakage_filter(self, split: str) -> LeakageFilter | None:
        """Train's filter against the cleaned valid/test sets (None for held-out splits or --leakage off)."""
        cfg = self.config
        if split != "train" or cfg.leakage == "off":
            return None
        leakage = LeakageFilter(cfg.leakage)  # type: ignore[arg-type]
        for heldout in ("valid", "test"):
            if heldout in cfg.split_prefixes():
                leakage.add_reference_chunks(self.cleaned_pairs(heldout))
        return leakage

    def _run_clean_tasks(self, plan: CleanPlan, tasks: Any) -> tuple[list[Path], dict[str, Any]]:
        self.tasked.run(tasks, execute_task)
        return self.tasked.merge_clean(tasks, plan, execute_task)

    def _align_files(self, split: str) -> list[str]:
        """The word-alignment files of a split (``{pref}.{align_suffix}``), if alignments were asked for."""
        suffix = self.config.align_suffix
        prefixes = [self.inputs.prefix(p, [suffix]) for p in self.config.split_prefixes()[split]] if suffix else []
        return [resolve_prefix(p, suffix) for p in prefixes]  # type: ignore[arg-type]

    def _with_alignments(self, split: str, chunks: Iterator[Chunk], pairs: int) -> Iterator[Chunk]:
        """Attach each pair's alignment line (``chunk.extra``) so cleaning keeps or drops them together."""
        files = self._align_files(split)
        if not files:
            yield from chunks
            return
        aligned = open_source(files, options=self.read_options)
        if aligned.scan() != pairs:
            raise TokenmillError(
                f"{', '.join(files)}: {aligned.scan()} alignment lines for {pairs} sentence pairs; "
                "the alignment file must have one line per pair"
            )
        lines = chain.from_iterable(c.src for c in aligned.chunks())
        for chunk in chunks:
            chunk.extra = list(islice(lines, chunk.n_read))
            yield chunk

    def reads_input(self, split: str) -> bool:
        """Whether ``split`` goes to the tokenizer straight from the input files: cleaning would keep every line
        as read (Megatron's flags: nothing normalized, filtered, leak-checked or deduplicated), so no cleaned
        copy is written and read back. The clean stage then writes only its (empty) drop sample, the encode
        stage reads the input and counts what the clean stage would have, and :meth:`cleaned_source` is the
        input. One side only, no alignments or blank-line documents, not cut into tasks, and not T2T (whose
        vocabulary builder reads the cleaned files by path)."""
        cfg = self.config
        if not self.direct_input or len(cfg.langs) != 1 or cfg.align_suffix or cfg.documents != "line":
            return False
        if cfg.tokenizer == "t2t-subword" or self.tasked.enabled:
            return False
        if split == "train" and cfg.leakage != "off":  # train is checked against the held-out splits
            return False
        return Cleaner(self.clean_settings(split).config).keeps_everything

    direct_input = True
    """Whether :meth:`reads_input` may say yes (False: always through a cleaned copy, as tests compare)."""

    def clean_stats(self, read: dict[str, int], cleaner: Cleaner, kept: int, pairs: bool) -> dict[str, Any]:
        """The clean stage's counts: what was read, each step's counters, what was kept."""
        stats: dict[str, Any] = {"read": dict(read)}
        stats.update({name: dict(s.counts) for name, s in cleaner.stats.items() if s.counts})
        stats["kept"] = {"pairs" if pairs or self.config.input_format != "text" else "lines": kept}
        return stats

    def _run_clean(self, split, files, tgt_files, clean_config) -> tuple[list[Path], dict[str, Any]]:
        cfg = self.config
        if self.reads_input(split):
            dropped = self.dropped_path(split)
            Cleaner(clean_config).dropped.write(dropped)  # nothing is dropped: the empty sample a run writes
            return [dropped], {"stats": None, "kept": None, "reads_input": True}
        source = self._open(files, tgt_files)
        total = source.scan()  # alignment is checked here, before anything is written
        cleaner = Cleaner(clean_config, self.leakage_filter(split))
        outputs = [self.clean_path(split, lang) for lang in cfg.langs]
        align_out = self.clean_path(split, "align") if cfg.align_suffix else None
        kept = 0
        per_file: list[Source] = []
        with atomic_write(outputs[0], "wb") as src_out, (
            atomic_write(outputs[1], "wb") if len(outputs) > 1 else _null()
        ) as tgt_out, (atomic_write(align_out, "wb") if align_out else _null()) as extra_out, self._bar(
            total, f"clean {split}"
        ) as bar:
            for n_read, src, tgt, extra, n_kept in self._cleaned_blocks(split, files, source, cleaner, total, per_file):
                src_out.write(src)
                if tgt_out is not None and tgt is not None:
                    tgt_out.write(tgt)
                if extra_out is not None and extra is not None:
                    extra_out.write(extra)
                kept += n_kept
                bar.update(n_read)
                _crash_point(f"clean.{split}:midway")
        dropped = self.dropped_path(split)
        cleaner.dropped.write(dropped)
        read = Counter(source.stats.counts)
        if cfg.documents == "blank-line":
            read = sum((Counter(f.stats.counts) for f in per_file), Counter())
        stats = self.clean_stats(read, cleaner, kept, tgt_files is not None)
        return outputs + ([align_out] if align_out else []) + [dropped], {"stats": stats, "kept": kept}

    def _cleaned_blocks(
        self, split: str, files: list[str], source: Source, cleaner: Cleaner, total: int, per_file: list[Source]
    ) -> Iterator[tuple[int, bytes, bytes | None, bytes | None, int]]:
        """(items read, kept source bytes, target bytes, alignment bytes, pairs kept) per chunk, as the cleaned
        files hold them. With several processes over a plain input the workers read their own ranges (the
        bytes come back as they are written, see :func:`clean_blocks`); else chunks are read here (blank-line
        documents file by file: the sources read go to ``per_file``)."""
        cfg = self.config
        workers = self.clean_workers(total, cfg.workers)
        chunk_lines = self.clean_chunk_lines
        if workers > 1 and cfg.documents == "line" and not self._align_files(split) and reads_in_workers(source):
            for n_read, src, tgt, n_kept in clean_blocks(source, cleaner, workers, chunk_lines, self.quoted_clean):
                yield n_read, src, tgt, None, n_kept
            return
        if cfg.documents == "blank-line":  # file by file: a document never runs into the next file
            per_file.extend(self._open([f], None) for f in files)
            chunks = documents_by_file(per_file, chunk_lines)
        else:
            chunks = self._with_alignments(split, source.chunks(chunk_lines=chunk_lines), total)
        for n_read, cleaned in clean_chunks(chunks, cleaner, workers):
            if not cleaned.src:
                yield n_read, b"", None, None, 0
                continue
            src = self.clean_text(cleaned.src).encode("utf-8")
            tgt = None if cleaned.tgt is None else self.clean_text(cleaned.tgt).encode("utf-8")
            extra = None if cleaned.extra is None else ("\n".join(cleaned.extra) + "\n").encode("utf-8")
            yield n_read, src, tgt, extra, len(cleaned)

    def dropped_path(self, split: str) -> Path:
        """The sample of what cleaning dropped in ``split`` (read by ``tokenmill report``)."""
        return dropped_path(self.root, split)

    # ---------------------------------------------------------------- stage 2: tokenizer
    def model_path(self, lang: str) -> Path:
        """The staged model file of ``lang``'s tokenizer (one shared file with a joint model)."""
        backend = get_backend(backend_name(self.config))
        return self.out / stable_name(backend.filename, None if self.config.joint_spm else lang)

    def spm_options(self) -> SentencePieceOptions:
        return spm_options(self.config)

    def t2t_vocab_path(self, lang: str) -> Path:
        return self.model_path(lang)

    def tokenizer_for(self, lang: str) -> Tokenizer:
        """``lang``'s tokenizer, loaded once from the staged model."""
        if lang not in self._tokenizers:
            self._tokenizers[lang] = load_tokenizer(
                backend_name(self.config), self.model_path(lang), load_settings(self.config)
            )
        return self._tokenizers[lang]

    def tokenizer(self) -> None:
        cfg = self.config
        name = backend_name(cfg)
        if name == WHITESPACE:
            return
        models = sorted({self.model_path(lang) for lang in cfg.langs})
        given = given_model(cfg)
        if cfg.vocab_file and cfg.merge_file:  # Megatron's GPT2BPETokenizer: vocab.json + merges.txt
            key = fingerprint("tokenizer-gpt2", file_identity(cfg.vocab_file), file_identity(cfg.merge_file))
            self._stage("tokenizer", key, lambda: self._gpt2_model(models[0]))
        elif given:
            key = fingerprint("tokenizer", name, file_identity(given), load_settings(cfg), [str(m) for m in models])
            self._stage("tokenizer", key, lambda: self._copy_model(name, given, models))
        else:
            settings = train_settings(cfg)
            info = self._stage("tokenizer", self.train_key(name, settings), lambda: self._train_models(name, settings))
            if name == "sentencepiece":
                self.warn_small_vocabulary(info)
        self._tokenizers.clear()

    def train_key(self, name: str, settings: Any) -> str:
        """The key of a trained tokenizer: the cleaned text, the settings and the sample (its size, seed and
        rule: :data:`SAMPLE_RULE`, so a model an earlier version trained on its reservoir sample is trained
        again rather than kept, and a folder's output does not depend on the version that began it)."""
        cfg = self.config
        sample_key = (cfg.file_byte_budget,) if name == "t2t-subword" else (cfg.input_sentence_size, cfg.seed,
                                                                              SAMPLE_RULE)
        return fingerprint("tokenizer", name, self.keys["clean.train"], _jsonable(settings), cfg.joint_spm,
                           sample_key)

    def _copy_model(self, name: str, given: str, models: list[Path]) -> tuple[list[Path], dict[str, Any]]:
        tokenizer = load_tokenizer(name, given, load_settings(self.config))
        written: list[Path] = []
        for model in models:
            tag = None if model.name == get_backend(name).filename else model.name.split(".")[1]
            written += tokenizer.save(self.out, tag)
        return written, {"trained": False, "source": given, "vocab_size": tokenizer.vocab_size}

    def _gpt2_model(self, model: Path) -> tuple[list[Path], dict[str, Any]]:
        cfg = self.config
        get_backend("hf").from_gpt2_files(cfg.vocab_file, cfg.merge_file, model)  # type: ignore[attr-defined]
        return [model], {"trained": False, "source": [cfg.vocab_file, cfg.merge_file]}

    def warn_small_vocabulary(self, info: dict[str, Any]) -> None:
        """SentencePiece stops short of --vocab-size when the text has too few distinct pieces: say so."""
        for model, pieces in (info.get("pieces") or {}).items():
            if pieces < self.config.vocab_size:
                self.summary.warn(
                    f"{model} has {pieces} pieces, not the {self.config.vocab_size} asked for with --vocab-size: "
                    "the training text has too few distinct pieces (a smaller --vocab-size gives the same model)"
                )

    def trained_sentencepiece(self, lines: list[str], model: Path, options: SentencePieceOptions) -> list[Path]:
        """Train one SentencePiece model (showing the elapsed time: it reports no progress) -> its files."""
        with self._elapsed(f"training {model.name} on {len(lines):,} lines"):
            tokenizer = train_tokenizer("sentencepiece", lines, options, model)
        return [path for path, _ in tokenizer.model_files()]  # type: ignore[attr-defined]

    @contextmanager
    def _elapsed(self, desc: str) -> Iterator[None]:
        """A progress line counting seconds while a long call without its own progress runs."""
        bar = tqdm(desc=desc, unit="s", bar_format="{desc}: {elapsed}", disable=not self.progress, leave=False)
        done = threading.Event()

        def tick() -> None:
            while not done.wait(0.5):
                bar.refresh()

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()
            bar.close()

    def training_sample(self, name: str, langs: list[str]) -> list[str]:
        """The lines a tokenizer learns from: T2T's byte-budget sample of each cleaned file, else the
        --input-sentence-size cleaned lines whose line numbers (over ``langs``' files one after another) have
        the smallest hashes seeded by --seed (:mod:`~tokenmill.prepare.line_sample`): the same lines however
        the cleaned text is cut into parts."""
        cfg = self.config
        parts = self.tasked.parts
        if name == "t2t-subword":
            if parts is None:
                return t2t_sample([self.clean_path("train", lang) for lang in langs], cfg.file_byte_budget)
            streams = [(f"{lang} (clean parts)", parts.raw_size(lang), parts.raw_lines(lang)) for lang in langs]
            return t2t_sample_streams(streams, cfg.file_byte_budget)
        if parts is not None:  # candidates per part in tasks, the smallest keys merged here
            merged = self.tasked.training_sample(langs, cfg.input_sentence_size, cfg.seed, execute_task)
            if merged is not None:
                return merged
            log.warning("the sample tasks found fewer lines under their key limit than the sample holds; drawing "
                        "it in one pass over the clean parts (the same lines)")
        sample = SmallestKeys(cfg.input_sentence_size, cfg.seed)
        for lang in langs:
            for lines in self.cleaned_chunks("train", lang):
                sample.add(lines)
        log.info("sampled %d of %d lines", min(sample.seen, sample.capacity), sample.seen)
        return sample.sample()

    def _train_models(self, name: str, settings: Any) -> tuple[list[Path], dict[str, Any]]:
        cfg = self.config
        groups = {self.model_path(lang): (cfg.langs if cfg.joint_spm else [lang]) for lang in cfg.langs}
        written: list[Path] = []
        sizes = {}
        for model, langs in groups.items():
            sample = self.training_sample(name, langs)
            if name == "sentencepiece":
                written += self.trained_sentencepiece(sample, model, settings)
            else:
                with self._elapsed(f"training {model.name} on {len(sample):,} lines"):
                    train_tokenizer(name, sample, settings, model)
                written.append(model)
            trained = load_tokenizer(name, model, load_settings(cfg))
            tag = None if model.name == get_backend(name).filename else model.name.split(".")[1]
            written += [path for path in trained.save(self.out, tag) if path not in written]  # + its manifest
            sizes[model.name] = trained.vocab_size
        sampled = {m.name: langs for m, langs in groups.items()}
        return written, {"trained": True, "sampled_from": sampled, "pieces": sizes}

    # ---------------------------------------------------------------- cleaned text
    def cleaned_chunks(self, split: str, lang: str) -> Iterator[list[str]]:
        """The cleaned lines of one split and side, chunk by chunk (see :meth:`cleaned_source`)."""
        for chunk in self.cleaned_source(split, lang).chunks():
            yield chunk.src

    def cleaned_source(self, split: str, lang: str) -> Source:
        """The cleaned text of one split and side as a source (JSON-quoted on disk when lines may hold
        newlines: JSONL input whose whitespace is kept as it is; the input itself when cleaning keeps
        everything as read, see :meth:`reads_input`)."""
        if self.reads_input(split):
            plan = self.clean_settings(split)
            return self._open(plan.files, plan.tgt_files)
        if split == "train" and self.tasked.parts is not None:  # the clean tasks' parts, through their masks
            return PartsSource(self.tasked.parts, lang)  # type: ignore[return-value]
        path = str(self.clean_path(split, lang))
        options = ReadOptions(chunk_lines=self.config.chunk_lines)
        if self.quoted_clean:
            return open_source([path], "jsonl", src_key="t", tgt_key=None, options=options)
        return open_source([path], options=options)

    def cleaned_line(self, raw: bytes) -> str:
        """One line of a cleaned file (as :meth:`clean_text` wrote it) back to its text."""
        text = raw.decode("utf-8")
        return json.loads(text)["t"] if self.quoted_clean else text

    @property
    def quoted_clean(self) -> bool:
        cfg = self.config
        return get_format(cfg.input_format).newlines_in_items and not cfg.normalize.collapse_whitespace

    # ---------------------------------------------------------------- stage 3: encode
    def ids_prefix(self, split: str, lang: str) -> Path:
        return self.work / "ids" / f"{split}.{lang}"

    def keeps_unknown_surfaces(self) -> bool:
        """fairseq-preprocess reads spm_encode's piece text, where a piece SentencePiece calls unknown is its
        surface text: those become words of the dictionary (fairseq's ids), so we keep them too."""
        return self.config.tokenizer == "sentencepiece" and not stores_tokenizer_ids(self.config)

    def encode_key(self, split: str, lang: str) -> str:
        if backend_name(self.config) == WHITESPACE:
            return fingerprint("encode-words", self.clean_settings(split).key)
        return fingerprint("encode", self.clean_settings(split).key, file_checksum(self.model_path(lang)),
                           load_settings(self.config), self.keeps_unknown_surfaces())

    def encode(self) -> None:
        cfg = self.config
        planned = {}
        if self.tasked.parts is not None and backend_name(cfg) != WHITESPACE:  # one encode task per clean part
            for lang in cfg.langs:
                key = self.encode_key("train", lang)
                if self.stages.done(f"encode.train.{lang}", key) is None:
                    planned[lang] = self.tasked.plan_encode(lang, key)
            if self.tasked.phase == "tokenizer":
                raise PhaseDone("planned the encode tasks")
        for split in cfg.split_prefixes():
            for lang in cfg.langs:
                key = self.encode_key(split, lang)
                if split == "train" and lang in planned:
                    run = lambda la=lang, t=planned[lang]: self._run_encode_tasks(la, t)  # noqa: E731
                else:
                    run = lambda s=split, la=lang: self._run_encode(s, la)  # noqa: E731
                info = self._stage(f"encode.{split}.{lang}", key, run)
                if info.get("clean") is not None:  # the input was read here (see reads_input)
                    self.summary.splits.setdefault(split, {})["clean"] = info["clean"]
                if split == "train" and info.get("parts"):  # the tasks' part stores are the stage's output
                    self.id_parts[lang] = self.tasked.part_folders(f"encode.train.{lang}", key, info["parts"])
                elif split == "train":
                    self.tasked.task_set(f"encode.train.{lang}", key).remove()

    def _run_encode_tasks(self, lang: str, tasks: Any) -> tuple[list[Path], dict[str, Any]]:
        self.tasked.run(tasks, execute_task)
        return self.tasked.merge_encoded(tasks, lang)

    def _run_encode(self, split: str, lang: str) -> tuple[list[Path], dict[str, Any]]:
        prefix = self.ids_prefix(split, lang)
        source = self.cleaned_source(split, lang)
        direct = self.reads_input(split)
        cleaner = Cleaner(self.clean_settings(split).config) if direct else None
        kept = 0

        def lines() -> Iterator[list[str]]:
            nonlocal kept
            for chunk in source.chunks():
                if cleaner is not None:  # counts only: every line is kept as read
                    chunk, _ = cleaner.local(chunk, keys=False)
                kept += len(chunk.src)
                yield chunk.src

        crash_name = f"encode.{split}.{lang}"
        counted = False
        with self._bar(source.scan(), f"encode {split}.{lang}") as bar:
            if cleaner is None and self.encodes_in_workers(source):
                table = self._encode_in_workers(split, lang, source, prefix, bar, crash_name)
                counted = split == "train"  # see _encode_in_workers
            elif backend_name(self.config) == WHITESPACE:
                table = None
                write_json(self.words_path(split, lang), encode_words(lines(), prefix, bar, crash_name))
            else:
                table = self.encode_lines(lang, lines(), prefix, threads=self.config.workers, bar=bar,
                                          crash_name=crash_name)
        outputs = [Path(f"{prefix}.bin"), Path(f"{prefix}.idx")]
        if counted:
            outputs.append(self.counts_path(split, lang))
        if backend_name(self.config) == WHITESPACE:
            outputs.append(self.words_path(split, lang))
        if table is not None:
            path = self.unknown_path(split, lang)
            write_json(path, table)
            outputs.append(path)
        if cleaner is None:
            return outputs, {}
        return outputs, {"clean": self.clean_stats(source.stats.counts, cleaner, kept, False)}

    def encodes_in_workers(self, source: Source | PartsSource) -> bool:
        """Whether the encode stage runs the tokenizer on worker processes that read their own ranges of the
        cleaned ``source`` (see :mod:`~tokenmill.prepare.encode_workers`): several workers, a backend that
        gains from it, a plain file to seek in (not the clean tasks' parts), and more than one range of lines."""
        return (self.config.workers > 1 and backend_name(self.config) in PROCESS_BACKENDS and forks()
                and isinstance(source, Source) and reads_in_workers(source)
                and source.scan() > encode_workers.RANGE_LINES)

    def _encode_in_workers(
        self, split: str, lang: str, source: Source, prefix: Path, bar: tqdm, crash_name: str
    ) -> dict[str, list[int]] | None:
        """The encode stage on worker processes: ranges come back in input order; unknown surfaces and
        whitespace words are numbered here, in that order, so the store equals a one-process run's."""
        whitespace = backend_name(self.config) == WHITESPACE
        tokenizer = None if whitespace else self.tokenizer_for(lang)
        keep = tokenizer is not None and self.keeps_unknown_surfaces()
        surfaces = UnknownSurfaces(tokenizer) if keep else None  # type: ignore[arg-type]
        words = FirstSeen()
        counts = IdCounts(0) if split == "train" else None  # the dictionary is counted on train alone
        with IndexedWriter(prefix, dtype=np.dtype(np.int32)) as writer:
            for encoded in encoded_ranges(source, tokenizer, self.config.workers, keep_surfaces=keep,
                                          max_chars=_ENCODE_BATCH_CHARS):
                flat = encoded.flat
                if whitespace:
                    flat = global_word_ids(encoded, words)
                elif surfaces is not None and encoded.found is not None:
                    flat = surfaces.assign(flat, encoded.found)
                writer.add_items(flat, encoded.lengths)
                if counts is not None:
                    counts.add(flat)
                bar.update(encoded.lines)
                _crash_point(f"{crash_name}:midway")
        if counts is not None:
            counts.save(self.counts_path(split, lang))
        if whitespace:
            write_json(self.words_path(split, lang), list(words))
            return None
        return None if surfaces is None else surfaces.table()

    def encode_lines(
        self, lang: str, chunks: Iterator[list[str]], prefix: Path, *, threads: int, bar: tqdm | None = None,
        crash_name: str = "encode", counts: IdCounts | None = None,
    ) -> dict[str, list[int]] | None:
        """Encode chunks of lines into an int32 work-id store at ``prefix`` (and into ``counts``, the work ids'
        bincount, when given); returns the unknown surfaces' table (surface -> [work id, count]) when they are
        kept (fairseq fidelity), else None."""
        tokenizer = self.tokenizer_for(lang)
        surfaces = UnknownSurfaces(tokenizer) if self.keeps_unknown_surfaces() else None

        def encoded(batch: tuple[list[str], bool]) -> tuple[int, bool, np.ndarray, np.ndarray, Found | None]:
            lines, chunk_ends = batch
            flat, lengths = tokenizer.encode_batch(lines, num_threads=threads)
            found = None if surfaces is None else surfaces.find(lines, flat, lengths, threads)
            return len(lines), chunk_ends, flat, lengths, found

        overlap = _OVERLAPPED_BATCHES if threads > 1 and getattr(tokenizer, "overlaps_batches", False) else 1
        with IndexedWriter(prefix, dtype=np.dtype(np.int32)) as writer:
            for count, chunk_ends, flat, lengths, found in ordered_map(encoded, chunk_batches(chunks), overlap):
                if surfaces is not None and found is not None:
                    flat = surfaces.assign(flat, found)  # work ids in input order
                writer.add_items(flat, lengths)
                if counts is not None:
                    counts.add(flat)
                if bar is not None:
                    bar.update(count)
                if chunk_ends:
                    _crash_point(f"{crash_name}:midway")
        return None if surfaces is None else surfaces.table()

    def words_path(self, split: str, lang: str) -> Path:
        """The words of whitespace-tokenized text in one split and side, in order of first appearance: word
        ``i`` is work id ``i`` in its id store."""
        return self.ids_prefix(split, lang).with_name(f"{split}.{lang}.words.json")

    def split_words(self, split: str, lang: str) -> list[str]:
        return json.loads(self.words_path(split, lang).read_text(encoding="utf-8"))

    def counts_path(self, split: str, lang: str) -> Path:
        """The bincount of one split and side's work ids, when the encode stage counted them as it wrote them
        (then the dictionary stage does not read the ids again)."""
        return self.ids_prefix(split, lang).with_name(f"{split}.{lang}.counts.npy")

    def unknown_path(self, split: str, lang: str) -> Path:
        """Surface text -> [work id, count] of the pieces SentencePiece called unknown in one split and side."""
        return self.ids_prefix(split, lang).with_name(f"{split}.{lang}.unknown.json")

    def unknown_surfaces(self, split: str, lang: str) -> dict[str, list[int]]:
        path = self.unknown_path(split, lang)
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    # ---------------------------------------------------------------- stage 3b: length filters in pieces
    def piece_filter(self) -> FilterConfig | None:
        """The token-count and ratio filters, when they count the tokenizer's pieces (as fairseq's max
        positions do) rather than whitespace words: every subword tokenizer. None when there are none."""
        cfg = self.config
        if backend_name(cfg) == WHITESPACE:
            return None
        return piece_filters(cfg.filters)

    def keep_path(self, split: str) -> Path:
        return self.ids_prefix(split, "keep").with_name(f"{split}.keep.npy")

    def filter_pieces(self) -> None:
        """Per filtered split: which pairs pass the token-count and ratio filters in pieces (a mask over the
        encoded items, applied when counting the dictionary and binarizing), drops counted per filter."""
        cfg = self.config
        config = self.piece_filter()
        if config is None:
            return
        for split in cfg.split_prefixes():
            if split != "train" and not cfg.filter_heldout:
                continue
            upstream = [self.keys[f"encode.{split}.{lang}"] for lang in cfg.langs]
            key = fingerprint("pieces", upstream, repr(config))
            info = self._stage(f"pieces.{split}", key, lambda s=split: self._run_piece_filter(s, config))
            self.summary.splits.setdefault(split, {}).setdefault("clean", {})["pieces"] = info["stats"]

    def encoded_prefixes(self, split: str, lang: str) -> list[Path]:
        """The id stores of one split and side, in order: train's parts when its encode stage was cut into
        tasks, else the one joined store."""
        if split == "train" and lang in self.id_parts:
            return [folder / IDS for folder in self.id_parts[lang]]
        return [self.ids_prefix(split, lang)]

    def _run_piece_filter(self, split: str, config: FilterConfig) -> tuple[list[Path], dict[str, Any]]:
        sides = [self.encoded_prefixes(split, lang) for lang in self.config.langs]
        stats = StepStats("pieces")
        check = PairFilter(config)

        def side_sizes(prefixes: list[Path]) -> Iterator[np.ndarray]:
            return regrouped(chain.from_iterable(size_blocks(p, _ITEMS_PER_BLOCK) for p in prefixes), _ITEMS_PER_BLOCK)

        def kept() -> Iterator[np.ndarray]:
            for block in zip(*(side_sizes(prefixes) for prefixes in sides), strict=True):
                placeholders = [[""] * len(block[0]) for _ in block]
                tokens = {"src_tokens": block[0], **({"tgt_tokens": block[1]} if len(block) > 1 else {})}
                yield check(placeholders[0], placeholders[1] if len(block) > 1 else None, stats=stats, **tokens).keep

        path = self.keep_path(split)
        save_npy_blocks(path, kept(), sum(store_length(p) for p in sides[0]), np.dtype(bool))
        return [path], {"stats": dict(stats.counts)}

    def keep_file(self, split: str) -> Path | None:
        """The piece filters' mask of a split (None: every encoded item is kept)."""
        path = self.keep_path(split)
        if self.piece_filter() is None or not path.exists() or f"pieces.{split}" not in self.keys:
            return None
        return path

    def kept_items(self, split: str) -> Iterator[np.ndarray] | None:
        """The piece filters' mask of a split, ``_ITEMS_PER_BLOCK`` items at a time (None: every encoded item
        is kept)."""
        path = self.keep_file(split)
        return None if path is None else npy_blocks(path, _ITEMS_PER_BLOCK)

    def encoded_blocks(self, split: str, lang: str) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(work ids as stored: int32, int64 lengths) of the kept items of one split and side, block by block,
        read with plain reads (no memory map: the process's memory must not grow with the corpus)."""
        keep = self.kept_items(split)
        for block, sizes in item_blocks(self.ids_prefix(split, lang), _ITEMS_PER_BLOCK):
            if keep is not None:
                kept = next(keep)
                block, sizes = block[np.repeat(kept, sizes)], sizes[kept]
            yield block, sizes

    # ---------------------------------------------------------------- stage 4: dictionaries
    def dictionary(self) -> dict[str, Dictionary]:
        cfg = self.config
        langs = cfg.langs
        if stores_tokenizer_ids(cfg):  # the tokenizer's own ids are stored: no dictionary remap
            tokenizers = {lang: self.tokenizer_for(lang) for lang in langs}
            first = tokenizers[langs[0]]
            self.summary.vocab = {
                "tokenizer": backend_name(cfg),
                "models": {lang: self.model_path(lang).name for lang in langs},
                "size": {lang: t.vocab_size for lang, t in tokenizers.items()},
                "special": first.special_ids,
            }
            if self.end_token(None, langs[0]) is not None and self._appends_eod():
                eod = self.end_token(None, langs[0])
                self.summary.vocab["eod"] = {"symbol": first.id_to_token(eod), "id": eod}  # type: ignore[arg-type]
            return {}
        given = {langs[0]: cfg.srcdict, **({langs[1]: cfg.tgtdict} if len(langs) > 1 else {})}
        if cfg.joined_dictionary:
            shared = cfg.srcdict or cfg.tgtdict
            given = {lang: shared for lang in langs}
        upstream = [self.keys.get(f"encode.train.{lang}", self.keys["clean.train"]) for lang in langs]
        upstream.append(self.keys.get("pieces.train"))
        given_ids = {lang: file_identity(p) if p else None for lang, p in given.items()}
        limits = (cfg.nwordssrc, cfg.nwordstgt, cfg.thresholdsrc, cfg.thresholdtgt, cfg.padding_factor)
        key = fingerprint("dictionary", upstream, given_ids, limits, cfg.joined_dictionary, cfg.user_defined_symbols,
                          cfg.tokenizer, *([cfg.eod_symbol] if self._distinct_eod() else []))
        paths = {lang: self.dict_path(lang) for lang in langs}
        self._stage("dictionary", key, lambda: self._build_dictionaries(given, paths))
        dictionaries = {lang: Dictionary.load(path) for lang, path in paths.items()}
        self.summary.vocab = {
            "dictionaries": {lang: {"file": paths[lang].name, "size": len(d)} for lang, d in dictionaries.items()},
            "special": Dictionary().special_ids,
            "tokenizer": cfg.tokenizer,
            "spm_models": (
                sorted({self.model_path(lang).name for lang in langs}) if cfg.tokenizer == "sentencepiece" else []
            ),
        }
        if cfg.append_eod:
            self.summary.vocab["eod"] = {"symbol": cfg.eod_symbol, "id": dictionaries[langs[0]].index(cfg.eod_symbol)}
        return dictionaries

    def _distinct_eod(self) -> bool:
        """Whether --append-eod asks for a token of its own (not fairseq's </s>)."""
        return self.config.append_eod and self.config.eod_symbol != "</s>"

    def _appends_eod(self) -> bool:
        return self.config.append_eod or (self.config.monolingual and not self.config.output_prefix)

    def _counts(self, lang: str) -> Counter[str]:
        """Token counts of the training side ``lang``: pieces (and unknown surfaces) of the tokenizer, or
        words of whitespace-tokenized text."""
        if backend_name(self.config) != WHITESPACE:
            tokenizer = self.tokenizer_for(lang)
            if lang in self.id_parts:  # the encode tasks' bincounts, summed (no pass over the ids)
                array, found = summed_counts(self.id_parts[lang], tokenizer.vocab_size, self.keep_file("train"))
            else:
                surfaces = self.unknown_surfaces("train", lang)
                array = self.work_id_counts(lang, tokenizer.vocab_size + len(surfaces))
                found = {surface: int(array[work_id]) for surface, (work_id, _) in surfaces.items()}
            skip = set(tokenizer.special_ids.values())
            text_piece = getattr(tokenizer, "is_text_piece", lambda i: i not in skip)
            counts = Counter({
                tokenizer.id_to_token(i): int(array[i])
                for i in np.flatnonzero(array[: tokenizer.vocab_size]).tolist()
                if text_piece(i)
            })
            for surface, count in found.items():
                if count:
                    counts[surface] += count
            return counts
        words = self.split_words("train", lang)
        array = self.work_id_counts(lang, len(words))
        return Counter({words[i]: int(array[i]) for i in np.flatnonzero(array).tolist()})

    def work_id_counts(self, lang: str, size: int) -> np.ndarray:
        """Occurrences of each of train's ``size`` work ids of side ``lang`` in the kept items: the counts the
        encode stage kept as it wrote the ids (worker processes), less the tokens of the items the piece filters
        dropped; else one pass over the ids."""
        counted = self.counts_path("train", lang)
        keep = self.keep_file("train")
        stored = self._stored_counts(counted, size) if counted in self.produced else None  # this run's encode stage
        if stored is not None:
            array = np.zeros(size, dtype=np.int64)
            array[: len(stored)] = stored
            if keep is not None:  # the mask a block at a time: memory does not grow with the items
                start = 0
                for kept in npy_blocks(keep, _MASK_ITEMS):
                    array -= item_token_counts(self.ids_prefix("train", lang), start + np.flatnonzero(~kept), size)
                    start += len(kept)
            return array
        array = np.zeros(size, dtype=np.int64)
        for block, _ in self.encoded_blocks("train", lang):
            array += np.bincount(block, minlength=size)
        return array

    @staticmethod
    def _stored_counts(path: Path, size: int) -> np.ndarray | None:
        """The encode stage's counts file, or None (with a warning) when it cannot be read as at most ``size``
        integer counts: the dictionary is then counted from the ids themselves, which gives the same result."""
        try:
            stored = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as error:
            log.warning("%s cannot be read (%s); counting the ids again", path, error)
            return None
        if stored.ndim != 1 or len(stored) > size or not np.issubdtype(stored.dtype, np.integer):
            log.warning("%s holds %s counts of %s, not at most %d integers; counting the ids again",
                        path, stored.shape, stored.dtype, size)
            return None
        return stored

    def _build_dictionaries(self, given: dict[str, str | None], paths: dict[str, Path]):
        cfg = self.config
        langs = cfg.langs
        limits = {langs[0]: (cfg.nwordssrc, cfg.thresholdsrc)}
        if len(langs) > 1:
            limits[langs[1]] = (cfg.nwordstgt, cfg.thresholdtgt)
        extra = list(cfg.user_defined_symbols) + ([cfg.eod_symbol] if self._distinct_eod() else [])
        built: dict[str, Dictionary] = {}
        if cfg.joined_dictionary and not any(given.values()):
            total: Counter[str] = Counter()
            for lang in langs:
                total.update(self._counts(lang))
            shared = Dictionary.from_counts(total, threshold=cfg.thresholdsrc, nwords=cfg.nwordssrc,
                                            padding_factor=cfg.padding_factor, extra_symbols=extra)
            built = dict.fromkeys(langs, shared)
        else:
            for lang in langs:
                if given.get(lang):
                    built[lang] = Dictionary.load(given[lang])  # type: ignore[arg-type]
                else:
                    nwords, threshold = limits[lang]
                    built[lang] = Dictionary.from_counts(self._counts(lang), threshold=threshold, nwords=nwords,
                                                         padding_factor=cfg.padding_factor, extra_symbols=extra)
        if self._distinct_eod() and cfg.eod_symbol not in built[langs[0]]:
            raise ConfigError(
                f"--eod-symbol {cfg.eod_symbol} is not in the dictionary {given.get(langs[0])}; add it there "
                "(a line '<symbol> 1') or leave --append-eod off"
            )
        for lang, dictionary in built.items():
            dictionary.save(paths[lang])
        return list(paths.values()), {lang: len(d) for lang, d in built.items()}

    # ---------------------------------------------------------------- stage 5: binarize
    def binarize(self, dictionaries: dict[str, Dictionary]) -> None:
        cfg = self.config
        for split in cfg.split_prefixes():
            for lang in cfg.langs:
                own_ids = stores_tokenizer_ids(cfg)
                vocab_path = self.model_path(lang) if own_ids else self.dict_path(lang)
                upstream = [self.keys.get(f"encode.{split}.{lang}", self.keys[f"clean.{split}"]),
                            self.keys.get(f"pieces.{split}")]
                key = fingerprint("binarize", upstream, self.vocab_fingerprint(lang, vocab_path), cfg.layout,
                                  cfg.shard_size, cfg.tokenizer, cfg.source_lang, cfg.target_lang, own_ids,
                                  self.end_token(dictionaries.get(lang), lang), cfg.output_prefix,
                                  # a folder binarized before empty documents were written as Megatron does
                                  *(["empty documents as preprocess_data"] if self.empty_documents else []))
                info = self._stage(
                    f"binarize.{split}.{lang}", key,
                    lambda s=split, la=lang, k=key: self._run_binarize(s, la, dictionaries.get(la), k),
                )
                if split == "train":
                    self.tasked.task_set(f"binarize.train.{lang}", key).remove()  # recorded: the parts are copies
                self.summary.splits.setdefault(split, {}).setdefault("langs", {})[lang] = info
                self._register_side(split, lang, dictionaries.get(lang), info)

    def end_token(self, dictionary: Dictionary | None, lang: str) -> int | None:
        """The id every stored item ends with: fairseq's </s> or the EOD symbol in the dictionary; the
        tokenizer's own end-of-document (LM) or end-of-sentence token; None with Megatron's flags and
        no --append-eod (preprocess_data appends nothing then)."""
        cfg = self.config
        if dictionary is not None:
            return dictionary.index(cfg.eod_symbol if cfg.append_eod else "</s>")
        if cfg.output_prefix and not cfg.append_eod:
            return None
        special = self.tokenizer_for(lang).special_ids
        order = ("eod", "eos") if self._appends_eod() else ("eos", "eod")
        found = next((special[k] for k in order if k in special), None)
        if found is None:
            raise ConfigError(
                f"{self.model_path(lang).name} has no end-of-sentence or end-of-document token to end items with; "
                "name one with --tokenizer-options eod_token=... (tiktoken) or specials (hf)"
            )
        return found

    def _register_side(self, split: str, lang: str, dictionary: Dictionary | None, info: dict[str, Any]) -> None:
        shards = [self.output_prefix(split, lang, k) for k in range(info["shards"])] if self.config.shard_size else []
        eos = self.end_token(dictionary, lang)
        for prefix in shards or [self.output_prefix(split, lang)]:
            if dictionary is None:
                tokenizer = self.tokenizer_for(lang)
                vocab = self.model_path(lang)
                kind = T2T if self.config.tokenizer == "t2t-subword" else TOKENIZER
                symbol = None if eos is None else tokenizer.id_to_token(eos)
                meaning = store_meaning(vocab.relative_to(self.out).as_posix(), kind, tokenizer.vocab_size, eos, symbol,
                                        backend=backend_name(self.config))
            else:  # the dictionary copy in the store's own folder: what fairseq reads there
                vocab = prefix.parent / self.dict_path(lang).name
                symbol = dictionary.symbols[eos] if eos is not None else None
                meaning = store_meaning(vocab.relative_to(self.out).as_posix(), FAIRSEQ, len(dictionary), eos, symbol)
            self.register_store(prefix, meaning)

    def piece_lookup(self, tokenizer: Tokenizer, dictionary: Dictionary) -> np.ndarray:
        """Tokenizer id -> dictionary id for binarizing (see :func:`piece_lookup`)."""
        return piece_lookup(tokenizer, dictionary)

    def vocab_fingerprint(self, lang: str, vocab_path: Path) -> str:
        """What a binarized side depends on in its vocabulary file (here: all of it)."""
        return file_checksum(vocab_path)

    def _id_blocks(
        self, split: str, lang: str, dictionary: Dictionary | None
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(ids, lengths) blocks of one split and side, end-of-sentence not yet appended."""
        lookup = None
        if backend_name(self.config) == WHITESPACE:  # work ids are the split's words in order of appearance
            assert dictionary is not None
            index, unk = dictionary.indices.get, dictionary.unk_index
            words = self.split_words(split, lang)
            lookup = np.fromiter((index(word, unk) for word in words), dtype=np.int32, count=len(words))
        elif dictionary is not None:
            base = self.piece_lookup(self.tokenizer_for(lang), dictionary)
            extended = self.unknown_surfaces(split, lang)
            lookup = np.concatenate([base, np.full(len(extended), dictionary.unk_index, dtype=np.int64)])
            for surface, (work_id, _) in extended.items():
                lookup[work_id] = dictionary.indices.get(surface, dictionary.unk_index)
            lookup = lookup.astype(np.int32)  # dictionary ids: a block of them is half the int64 size
        for block, sizes in self.encoded_blocks(split, lang):
            yield (block if lookup is None else lookup[block]), sizes

    def _run_binarize(
        self, split: str, lang: str, dictionary: Dictionary | None, key: str
    ) -> tuple[list[Path], dict[str, Any]]:
        eos = self.end_token(dictionary, lang)
        if dictionary is None:  # the tokenizer's own ids (T2T: <EOS>=1 appended as T2T does)
            tokenizer = self.tokenizer_for(lang)
            vocab_size, unk = tokenizer.vocab_size, tokenizer.special_ids.get("unk", -1)
        else:
            vocab_size, unk = len(dictionary), dictionary.unk_index
        if split == "train" and lang in self.id_parts:
            return self._run_binarize_tasks(lang, key, dictionary, eos, unk, token_dtype(vocab_size))
        return self._write_split(
            split, lambda shard: self.output_prefix(split, lang, shard), token_dtype(vocab_size),
            # the next block is read and mapped on a thread while this one is written (both let go of the GIL)
            prefetched(self._id_blocks(split, lang, dictionary)), eos=eos, unk=unk,
            crash_name=f"binarize.{split}.{lang}", empty_documents=self.empty_documents,
        )

    @property
    def empty_documents(self) -> bool:
        """Whether a document without ids is stored as a document without a sequence (no EOD either), as
        Megatron's ``preprocess_data`` does: with its flags (``--output-prefix``); else it is an item of its own."""
        return bool(self.config.output_prefix) and self.config.layout == "megatron"

    def _run_binarize_tasks(
        self, lang: str, key: str, dictionary: Dictionary | None, eos: int | None, unk: int, dtype: np.dtype
    ) -> tuple[list[Path], dict[str, Any]]:
        """Train's side ``lang`` from its encoded parts: one task per part writes it in the output's ids, then
        the parts are copied into the stores (shards cut as one process cuts them)."""
        lookup = surfaces = None
        if dictionary is not None:  # as _id_blocks maps them; each task adds its part's surfaces
            lookup = self.piece_lookup(self.tokenizer_for(lang), dictionary).astype(np.int32).tolist()
            surfaces = {surface: dictionary.indices.get(surface, dictionary.unk_index)
                        for surface in self.unknown_surfaces("train", lang)}
        details = {"lookup": lookup, "surfaces": surfaces, "end": eos, "unk": unk, "dtype": np.dtype(dtype).str,
                   "layout": self.config.layout, "keep": self.keep_file("train") is not None,
                   "empty_documents": self.empty_documents}
        tasks = self.tasked.plan_binarize(lang, key, details)
        self.tasked.run(tasks, execute_task, in_phase=True)
        return self.tasked.merge_binarized(tasks, lambda blocks: self._write_split(
            "train", lambda shard: self.output_prefix("train", lang, shard), dtype, blocks, eos=None, unk=-1,
            crash_name=f"binarize.train.{lang}", empty_documents=self.empty_documents,
        ))

    def _write_split(
        self,
        split: str,
        prefix_of: Callable[[int | None], Path],
        dtype: np.dtype,
        blocks: Iterator[tuple[np.ndarray, np.ndarray]],
        *,
        eos: int | None,
        unk: int,
        crash_name: str,
        empty_documents: bool = False,
    ) -> tuple[list[Path], dict[str, Any]]:
        """Write (flat, lengths) blocks as one store, or as shardNNN/ stores of ``shard_size`` items
        (``empty_documents``: see :attr:`empty_documents`; ``sentences`` counts the items stored)."""
        cfg = self.config
        megatron = cfg.layout == "megatron"
        shard_size = cfg.shard_size if (cfg.shard_size and split == "train") else 0
        shard = 0 if cfg.shard_size else None
        writers: list[IndexedWriter] = []

        def open_writer(index: int | None) -> IndexedWriter:
            writer = IndexedWriter(prefix_of(index), layout=cfg.layout, dtype=dtype)
            writers.append(writer)
            return writer

        writer = open_writer(shard)
        sentences = tokens = unknown = 0
        try:
            for flat, lengths in blocks:
                if unk >= 0:
                    unknown += int(np.count_nonzero(flat == unk))
                flat, lengths = ended(flat, lengths, eos, dtype, empty_documents=empty_documents)
                while len(lengths):
                    room = shard_size - (len(writer)) if shard_size else len(lengths)
                    if room == 0 and empty_documents and lengths[0] == 0:
                        # documents without a sequence stay with the full shard: a new shard starts at a
                        # sequence, so no shard is left holding none (a 0-token dataset to Megatron)
                        empty = int(np.argmax(lengths != 0)) if lengths.any() else len(lengths)
                        writer.add_documents(flat[:0], lengths[:empty])
                        lengths = lengths[empty:]
                        continue
                    if room == 0:
                        shard = (shard or 0) + 1
                        writer = open_writer(shard)
                        continue
                    take = min(room, len(lengths))
                    cut = int(lengths[:take].sum())
                    if empty_documents:
                        writer.add_documents(flat[:cut], lengths[:take])
                        sentences += int(np.count_nonzero(lengths[:take]))
                    else:
                        writer.add_items(flat[:cut], lengths[:take], documents=megatron)
                        sentences += take
                    tokens += cut
                    flat, lengths = flat[cut:], lengths[take:]
                _crash_point(f"{crash_name}:midway")
        except BaseException:
            for open_one in writers:
                open_one.abort()
            raise
        outputs = []
        for done in writers:
            done.finalize()
            outputs += [done.bin_file, done.idx_file]
        info = {
            "sentences": sentences,
            "tokens": tokens,
            "unk": unknown,
            "unk_percent": round(100.0 * unknown / tokens, 4) if tokens else 0.0,
            "shards": len(writers) if cfg.shard_size else 0,
        }
        return outputs, info

    # ---------------------------------------------------------------- alignments
    def alignments(self) -> None:
        """``{split}.align.{src}-{tgt}.bin/.idx`` (fairseq's name): flat int64 ``s0 t0 s1 t1 ...`` per pair."""
        cfg = self.config
        if not cfg.align_suffix:
            return
        for split in cfg.split_prefixes():
            path = self.clean_path(split, "align")
            key = fingerprint("alignments", self.keys[f"clean.{split}"], cfg.layout, cfg.shard_size)
            name = align_name(split, cfg.source_lang, cfg.target_lang)  # type: ignore[arg-type]
            self._stage(
                f"binarize.{split}.align", key,
                lambda s=split, p=path, n=name: self._write_split(
                    s, lambda shard, n=n: self.out / (shard_dir(shard) if shard is not None else "") / n,
                    np.dtype(np.int64), _alignment_blocks(p), eos=None, unk=-1, crash_name=f"binarize.{s}.align",
                ),
            )

    # ---------------------------------------------------------------- finishing
    def staged_shards(self) -> list[Path]:
        """The ``shardNNN/`` folders this run's stores are in (after :func:`prune_staging`)."""
        return shard_dirs(self.out)

    def stage_file(self, path: Path) -> Path:
        """Count a file written outside the stages (log, dictionary copies) as this run's output."""
        self.produced.add(path)
        return path

    def copy_into_shards(self, files: list[Path]) -> list[Path]:
        """fairseq reads the dictionaries from every data path: a copy of each in every shard folder."""
        shards = self.staged_shards()
        for shard in shards:
            for source in files:
                target = self.stage_file(shard / source.name)
                if not target.exists() or target.read_bytes() != source.read_bytes():
                    with atomic_path(target) as tmp:
                        shutil.copyfile(source, tmp)
        return shards

    def register_store(self, prefix: Path, meaning: dict[str, Any]) -> None:
        """Record what the ids of a staged store mean (checked by ``tokenmill verify``)."""
        self.meanings[prefix.relative_to(self.out).as_posix()] = meaning

    def write_log(self, title: str) -> None:
        with atomic_write(self.stage_file(self.out / "preprocess.log")) as handle:
            handle.write(f"{title}\n{self.summary.table()}\n")

    def publish(self, summary: dict[str, Any]) -> None:
        """Put this run's outputs (and nothing else) in place and write the manifest (see publish.py)."""
        settings = self.config.to_dict()
        how = {name: settings.pop(name) for name in RUN_ONLY}
        manifest = build_manifest(
            self.out, settings=_jsonable(settings), vocab=self.summary.vocab,
            summary=_jsonable(summary), meanings=self.meanings,
            run={"stages": self.summary.stage_table(), "warnings": self.summary.warnings, **how,
                 "tasks": self.tasked.table, "merge_seconds": self.tasked.merge_seconds},
        )
        publish(self.root, self.out, manifest, before_manifest=lambda: _crash_point("publish:before-manifest"))
        if self.url:
            publish_to(self.url, self.root, self.config.storage_options)

    def finish(self) -> None:
        cfg = self.config
        prune_staging(self.out, self.produced)
        # stores of the tokenizer's own ids have no fairseq dictionary (the manifest names the model instead)
        dictionaries = [] if stores_tokenizer_ids(cfg) else sorted({self.dict_path(x) for x in cfg.langs})
        self.copy_into_shards(dictionaries)
        name = f"{cfg.source_lang}-{cfg.target_lang}" if cfg.target_lang else f"{cfg.source_lang} (monolingual)"
        self.write_log(f"tokenmill prepare: {name} -> {self.root}")
        self.publish(self.summary.to_dict())

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold ``DESTDIR/.lock`` (another prepare on the same folder fails at once, no waiting), remove a
        killed run's temporaries, and refuse a folder holding files tokenmill did not write.

        A first run that fails with an error leaves no directory behind (a re-run that fails leaves the
        previous output untouched: nothing is published before every stage has finished). A run stopped
        by a killed task keeps what it finished, as a killed run does."""
        created = not self.root.exists()
        fresh = created or not any(self.root.iterdir())
        check_owned(self.root, self.out)
        self.root.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.root / ".lock"))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise TokenmillError(
                f"{self.root} is being written by another tokenmill prepare (lock {self.root / '.lock'}); "
                "wait for it to finish or use another --destdir"
            ) from None
        failed = False
        try:
            for directory in [self.root, *(p for p in self.root.rglob("*") if p.is_dir())]:
                remove_stale_temps(directory)
            yield
        except (PhaseDone, TaskKilled):
            raise
        except Exception:
            failed = True
            raise
        finally:
            lock.release()
            if failed and fresh:
                _remove_run(self.root, remove_folder=created)

    def check_inputs(self) -> None:
        """Settings are validated when the config is built; here: the destination is usable."""
        if self.root.exists() and not self.root.is_dir():
            raise ConfigError(f"--destdir {self.root} is a file; give a directory")
        if self.url and self.tasked.phase in (None, "plan"):
            check_destination(self.url, self.config.storage_options)

    def warn_no_validation(self, missing: list[str]) -> None:
        """Training without a validation split is usually a mistake: say so once."""
        if missing:
            self.summary.warn(
                f"no validation data for {', '.join(missing)}: give --validpref (fairseq-train needs a valid split "
                "unless --disable-validation)"
            )

    def warn_untasked(self) -> None:
        """--tasks 1 with an input that is not cut into tasks yet (config refuses more tasks): say that the
        training split runs the plain one-process path instead of silently doing so."""
        cfg = self.config
        what = ("--align-suffix" if cfg.align_suffix else
                "--documents blank-line" if cfg.documents == "blank-line" else None)
        if what and cfg.tasks == 1:
            self.summary.warn(f"{what} is not cut into tasks yet: --tasks 1 runs the training split without tasks "
                              "(one process, the same output)")

    def run(self) -> PrepareSummary:
        """The whole run, or (with a ``phase``) the coordinator's part of one phase: ``plan``, ``tokenizer``
        or ``merge`` (see :data:`PHASES`); a phase that ends early returns the summary so far."""
        self.check_inputs()
        if not self.config.output_prefix and self.tasked.phase in (None, "merge"):
            self.warn_no_validation([] if self.config.validpref else [self.config.source_lang or "this run"])
        self.warn_untasked()
        self.inputs.refresh = self.tasked.phase in (None, "plan")  # the coordinator checks URL inputs once
        try:
            with self.exclusive():
                self.clean()
                self.tokenizer()
                self.encode()
                self.filter_pieces()
                dictionaries = self.dictionary()
                self.binarize(dictionaries)
                self.alignments()
                self.finish()
        except PhaseDone as done:
            log.info("phase %s done: %s", self.tasked.phase, done)
        self.summary.tasks = self.tasked.table
        self.summary.merge_seconds = self.tasked.merge_seconds
        return self.summary

    def run_task(self, stage: str, index: int, workers: int) -> dict[str, Any]:
        """Task ``index`` of a tasked stage (``clean.train`` or ``encode.train.{lang}``), as a task process
        runs it: without the folder's lock (tasks of one stage run side by side), its own lock instead."""
        if stage == "clean.train":
            return self.tasked.clean_task(index, workers)
        if stage.startswith("encode.train."):
            return self.tasked.encode_task(stage.rsplit(".", 1)[1], index, workers)
        if stage.startswith("binarize.train."):
            return self.tasked.binarize_task(stage.rsplit(".", 1)[1], index)
        if stage in COUNT_STAGES:
            return self.tasked.count_task(stage, index)
        if stage == DEDUP_STAGE:
            return self.tasked.dedup_task(index)
        if stage.startswith(f"{SAMPLE_STAGE}."):
            return self.tasked.sample_task(stage, index)
        raise TokenmillError(
            f"stage {stage!r} is not cut into tasks (clean.train, encode.train.LANG, binarize.train.LANG and, on a "
            "cluster, count.train, index.train and dedup.train are)")


def execute_task(settings: dict[str, Any], stage: str, index: int, workers: int) -> dict[str, Any]:
    """Run one task anywhere (a Ray worker, a Slurm array task): plain settings in, its record out."""
    return Pipeline(build_config(settings), progress=False).run_task(stage, index, workers)


def encode_words(chunks: Iterable[list[str]], prefix: Path, bar: tqdm | None, crash_name: str) -> list[str]:
    """Whitespace-tokenized lines as work ids in an int32 store at ``prefix``: each word's id is its place in
    the order of first appearance (the list returned). The text is split once; counting the dictionary and
    binarizing then work on the ids (a bincount, one lookup array)."""
    table = FirstSeen()
    with IndexedWriter(prefix, dtype=np.dtype(np.int32)) as writer:
        for lines in chunks:
            writer.add_items(*word_ids(lines, table))
            if bar is not None:
                bar.update(len(lines))
            _crash_point(f"{crash_name}:midway")
    return list(table)


def chunk_batches(chunks: Iterable[list[str]]) -> Iterator[tuple[list[str], bool]]:
    """The tokenizer calls of a stream of chunks (:func:`text_batches`), each with whether it ends its chunk."""
    for chunk in chunks:
        batches = list(text_batches(chunk, _ENCODE_BATCH_CHARS))
        for i, lines in enumerate(batches):
            yield lines, i == len(batches) - 1


def _remove_run(root: Path, *, remove_folder: bool) -> None:
    """Delete what a failed first run created: its files, and the folder if the run made it."""
    for entry in list(root.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    if remove_folder:
        with suppress(OSError):
            root.rmdir()


def _alignment_blocks(path: Path) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Pharaoh lines (``0-0 1-2``) of a cleaned file as (flat s/t positions, values per line) blocks."""
    for chunk in open_source([str(path)]).chunks():
        lines = chunk.src
        pairs = np.fromiter(map(methodcaller("count", "-"), lines), dtype=np.int64, count=len(lines))
        fields = " ".join(lines).replace("-", " ").split()
        try:
            flat = np.array(fields, dtype=np.int64) if fields else np.empty(0, dtype=np.int64)
        except ValueError:
            flat = None
        if flat is None or len(flat) != 2 * int(pairs.sum()) or (len(flat) and int(flat.min()) < 0):
            bad = next(i for i, line in enumerate(lines) if not _PHARAOH.fullmatch(line))
            raise FormatError(
                f"{path}: line {chunk.start + bad + 1} of the cleaned alignments is not Pharaoh 'i-j i-j ...': "
                f"{lines[bad][:80]!r}; fix the --align-suffix file (one line per sentence pair)"
            )
        yield flat, 2 * pairs


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
