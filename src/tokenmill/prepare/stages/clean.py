"""Stage ``clean.{split}``: read (alignment checked first), normalize, filter, drop held-out leaks, dedup.

One process: the cleaned text goes to ``.work/clean/{split}.{lang}`` (valid/test first: train's leakage
filter needs them). As tasks (the training split, see :func:`~.cleaned.train_tasked`): the plan counts
the inputs (the seek offsets are saved, so a task reads only its own lines; on an engine that
``counts_in_tasks`` by two rounds of tasks: :mod:`.count`) and cuts them into N ranges. Task i
normalizes, filters and leak-checks its range (held-out sets come cleaned from the coordinator), writes
its cleaned text with its line index, the dedup keys of what it kept (partitioned by hash on disk) and its
counts. The merge finds the duplicates partition by partition (:mod:`.dedup`), writes each part's
duplicate mask and the drop sample. The parts are never joined: read in task order through their masks
they are the cleaned file one process writes (:mod:`~tokenmill.prepare.clean_parts`).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, nullcontext
from dataclasses import replace
from itertools import chain, islice
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.fsutil import atomic_write, write_json
from tokenmill.prepare.clean_parts import CleanParts, index_path, lines_at, save_gone, text_path
from tokenmill.prepare.crash import crash_point
from tokenmill.prepare.heap import release_heap
from tokenmill.prepare.near_dedup import (
    NEAR,
    near_partition_count,
    near_settings,
    near_sides,
    partition_band_keys,
    write_band_keys,
)
from tokenmill.prepare.parallel import clean_blocks, clean_chunks, local_chunks, reads_in_workers
from tokenmill.prepare.part_merge import LineIndexer
from tokenmill.prepare.partitioned_dedup import KEYS_RAW, duplicates_in, partition_count, partition_keys
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.run.tasking import fresh_plan, run_tasks, task_count, task_record
from tokenmill.prepare.stages import count, dedup
from tokenmill.prepare.stages.base import Outputs, TaskedStage
from tokenmill.prepare.stages.cleaned import (
    CleanPlan,
    align_files,
    clean_chunk_lines,
    clean_plan,
    clean_stats,
    clean_text,
    cleaned_line,
    leakage_filter,
    open_inputs,
    quoted_clean,
    reads_input,
    train_input_bytes,
    train_tasked,
)
from tokenmill.prepare.stages.near_merge import audit_path, near_clusters
from tokenmill.prepare.stages.near_one_piece import near_in_one_piece
from tokenmill.prepare.state import fingerprint
from tokenmill.prepare.tasks import PLAN, TaskSet
from tokenmill.text import Cleaner, open_source
from tokenmill.text.documents import documents_by_file
from tokenmill.text.drop_sample import DropSample, line_keys
from tokenmill.text.readers import Chunk, Source

PARALLEL_CLEAN_MIN_LINES = 200_000  # below this, starting worker processes costs more than it saves
NUMBERS_RAW = "numbers.raw"
DROPPED = "dropped.json"
STEP_ORDER = ("normalize", "filter", "decontaminate", "leakage")
NAME = "clean.train"


def clean_workers(lines: int, workers: int) -> int:
    """Processes to clean ``lines`` with: one below a size where starting workers costs more than it saves."""
    return workers if lines >= PARALLEL_CLEAN_MIN_LINES else 1


def clean_parts(ctx: RunContext, count: int) -> CleanParts:
    """The ``count`` parts of a recorded tasked ``clean.train`` (see :mod:`~tokenmill.prepare.clean_parts`)."""
    tasks = ctx.folder.task_set(NAME, "")
    folders = [tasks.folder(i) for i in range(count)]
    ctx.parts = CleanParts(folders, quoted_clean(ctx.config), ctx.config.run.chunk_lines)
    return ctx.parts


class CleanStage(TaskedStage):
    """``clean.{split}`` (see the module's docstring)."""

    def __init__(self, split: str) -> None:
        self.split = split
        self.name = f"clean.{split}"

    def tasked(self, ctx: RunContext) -> bool:
        return self.split == "train" and train_tasked(ctx)

    def key(self, ctx: RunContext) -> str:
        # A stage that wrote no cleaned copy (the input is read as it is) is not done for a run that reads one.
        key = clean_plan(ctx, self.split).key
        return fingerprint(key, "read as input") if reads_input(ctx, self.split) else key

    def task_phase(self, ctx: RunContext) -> str | None:
        return "clean" if self.tasked(ctx) and not ctx.done(self.name, self.key(ctx)) else None

    def run(self, ctx: RunContext) -> Outputs:
        if not self.tasked(ctx):
            return self._one_process(ctx, clean_plan(ctx, self.split))
        tasks = self.plan(ctx)
        run_tasks(ctx, tasks)
        started = time.perf_counter()
        outputs, info = self.merge(ctx, tasks)
        ctx.merge_seconds[tasks.stage] = round(time.perf_counter() - started, 3)
        return outputs, info

    def after(self, ctx: RunContext, info: dict[str, Any]) -> None:
        if info["stats"] is not None:  # None: the text goes to the tokenizer as read (counted there)
            ctx.split_info(self.split)["clean"] = info["stats"]
        if self.split == "train" and info.get("parts"):  # the tasks' parts are the cleaned text (never joined)
            clean_parts(ctx, info["parts"])
        elif self.split == "train":
            ctx.parts = None
            ctx.folder.task_set(NAME, clean_plan(ctx, "train").key).remove()

    # ---------------------------------------------------------------- one process
    def _one_process(self, ctx: RunContext, plan: CleanPlan) -> Outputs:
        cfg, split = ctx.config, self.split
        if reads_input(ctx, split):
            dropped = ctx.folder.dropped_path(split)
            Cleaner(plan.config).dropped.write(dropped)  # nothing is dropped: the empty sample a run writes
            return [dropped], {"stats": None, "kept": None, "reads_input": True}
        source = open_inputs(ctx, plan.files, plan.tgt_files)
        total = source.scan()  # alignment is checked here, before anything is written
        cleaner = Cleaner(plan.config, leakage_filter(ctx, split))
        outputs = [ctx.folder.clean_path(split, lang) for lang in cfg.langs]
        align_out = ctx.folder.clean_path(split, "align") if cfg.inputs.align_suffix else None
        numbers_path = ctx.folder.numbers_path(split)
        kept = 0
        per_file: list[Source] = []
        with atomic_write(outputs[0], "wb") as src_out, (
            atomic_write(outputs[1], "wb") if len(outputs) > 1 else nullcontext()
        ) as tgt_out, (atomic_write(align_out, "wb") if align_out else nullcontext()) as extra_out, atomic_write(
            numbers_path, "wb"
        ) as numbers_out, ctx.bar(total, f"clean {split}") as bar:
            for n_read, src, tgt, extra, n_kept, numbers in self._blocks(ctx, plan, source, cleaner, total, per_file):
                if numbers is not None:  # the kept items' input numbers: the provenance maps start here
                    numbers_out.write(np.asarray(numbers, dtype="<i8").tobytes())
                src_out.write(src)
                if tgt_out is not None and tgt is not None:
                    tgt_out.write(tgt)
                if extra_out is not None and extra is not None:
                    extra_out.write(extra)
                kept += n_kept
                bar.update(n_read)
                crash_point(f"clean.{split}:midway")
        dropped = ctx.folder.dropped_path(split)
        near = None
        if split == "train" and near_settings(cfg) is not None and kept:  # alignments, blank-line documents
            near = near_in_one_piece(ctx, outputs + ([align_out] if align_out else []), numbers_path, kept,
                                     cleaner.dropped, audit_path(dropped), _sample_duplicates, _part_lines)
            kept -= near["near_duplicates"]
        cleaner.dropped.write(dropped)
        read = Counter(source.stats.counts)
        if cfg.inputs.documents == "blank-line":
            read = sum((Counter(f.stats.counts) for f in per_file), Counter())
        stats = clean_stats(cfg, read, cleaner, kept, plan.tgt_files is not None)
        if near is not None:  # before "kept", as the tasks' merge orders them
            stats = {**{k: v for k, v in stats.items() if k != "kept"}, "near_dedup": near, "kept": stats["kept"]}
        info = {"stats": stats, "kept": kept, "input_counts": source.file_counts}
        return outputs + ([align_out] if align_out else []) + [numbers_path, dropped] + (
            [audit_path(dropped)] if near is not None else []), info

    def _blocks(
        self, ctx: RunContext, plan: CleanPlan, source: Source, cleaner: Cleaner, total: int, per_file: list[Source]
    ) -> Iterator[tuple[int, bytes, bytes | None, bytes | None, int, np.ndarray | None]]:
        """(items read, kept source bytes, target bytes, alignment bytes, pairs kept, their 1-based input item
        numbers) per chunk, as the cleaned files hold them. With several processes over a plain input the
        workers read their own ranges (the bytes come back as they are written, see :func:`clean_blocks`);
        else chunks are read here (blank-line
        documents file by file: the sources read go to ``per_file``)."""
        cfg = ctx.config
        workers = clean_workers(total, cfg.run.workers)
        chunk_lines = clean_chunk_lines(cfg, source)
        quoted = quoted_clean(cfg)
        by_lines = cfg.inputs.documents == "line" and not align_files(ctx, self.split)
        if workers > 1 and by_lines and reads_in_workers(source):
            for n_read, src, tgt, n_kept, numbers in clean_blocks(source, cleaner, workers, chunk_lines, quoted):
                yield n_read, src, tgt, None, n_kept, numbers
            return
        if cfg.inputs.documents == "blank-line":  # file by file: a document never runs into the next file
            per_file.extend(open_inputs(ctx, [f], None) for f in plan.files)
            chunks = documents_by_file(per_file, chunk_lines)
        else:
            chunks = self._with_alignments(ctx, source.chunks(chunk_lines=chunk_lines), total)
        for n_read, cleaned in clean_chunks(chunks, cleaner, workers):
            numbers = getattr(cleaned, "numbers", None)
            if not cleaned.src:
                yield n_read, b"", None, None, 0, numbers
                continue
            src = clean_text(ctx, cleaned.src).encode("utf-8")
            tgt = None if cleaned.tgt is None else clean_text(ctx, cleaned.tgt).encode("utf-8")
            extra = None if cleaned.extra is None else ("\n".join(cleaned.extra) + "\n").encode("utf-8")
            yield n_read, src, tgt, extra, len(cleaned), numbers

    def _with_alignments(self, ctx: RunContext, chunks: Iterator[Chunk], pairs: int) -> Iterator[Chunk]:
        """Attach each pair's alignment line (``chunk.extra``) so cleaning keeps or drops them together."""
        files = align_files(ctx, self.split)
        if not files:
            yield from chunks
            return
        aligned = open_source(files, options=ctx.read_options)
        if aligned.scan() != pairs:
            raise TokenmillError(
                f"{', '.join(files)}: {aligned.scan()} alignment lines for {pairs} sentence pairs; "
                "the alignment file must have one line per pair"
            )
        lines = chain.from_iterable(c.src for c in aligned.chunks())
        for chunk in chunks:
            chunk.extra = list(islice(lines, chunk.n_read))
            yield chunk

    # ---------------------------------------------------------------- as tasks
    def plan(self, ctx: RunContext) -> TaskSet:
        """The tasks of ``clean.train`` (planned now unless a plan for these inputs exists). The inputs are
        counted here, or by tasks over byte ranges on an engine that counts in tasks (:mod:`.count`)."""
        plan = clean_plan(ctx, "train")
        tasks = ctx.folder.task_set(NAME, plan.key)
        if fresh_plan(ctx, tasks):
            source = open_inputs(ctx, plan.files, plan.tgt_files)
            counted = ctx.engine.counts_in_tasks and source.line_indexed  # a table counts from metadata
            if counted:
                source.restore_index(count.count_inputs(ctx, plan))
            total = source.scan()
            n = task_count(ctx, train_input_bytes(ctx))
            near = near_settings(ctx.config)
            tasks.write_plan(n, ranges=source.ranges(n), index=source.index_state(), items=total,
                             partitions=partition_count(total),
                             **({"near_partitions": near_partition_count(total, near)} if near else {}))
            if counted:
                count.remove_rounds(ctx, plan.key)  # the plan holds the index
        return tasks

    def run_task(self, ctx: RunContext, index: int, workers: int) -> dict[str, Any]:
        """Task ``index`` of ``clean.train``: its cleaned lines, dedup keys and counts, then its marker."""
        plan = clean_plan(ctx, "train")
        tasks = ctx.folder.task_set(NAME, plan.key)
        details = tasks.plan()
        return tasks.run_once(index, lambda folder, attempt: _clean_part(ctx, plan, details, index, workers,
                                                                         folder, attempt))

    def merge(self, ctx: RunContext, tasks: TaskSet) -> Outputs:
        """Settle duplicates across tasks, write each part's mask and the drop sample; the counts summed."""
        cfg, plan = ctx.config, clean_plan(ctx, "train")
        records = tasks.records()
        kept = [int(r["kept"]) for r in records]
        bases = np.concatenate([[0], np.cumsum(kept)]).astype(np.int64)
        folders = [tasks.folder(i) for i in range(len(records))]
        dedup_dir = tasks.root / "dedup"
        partitions = int(tasks.plan()["partitions"])
        duplicates = 0
        if plan.config.dedup:
            duplicates = dedup.duplicates(ctx, folders, bases[:-1].tolist(), partitions, dedup_dir, tasks.key)
        near = near_clusters(ctx, folders, bases, tasks, _sample_duplicates, _part_lines)
        dropped = Cleaner(plan.config).dropped
        for folder in folders:
            dropped.merge(DropSample.from_dict(json.loads((folder / DROPPED).read_text(encoding="utf-8")),
                                               dropped.size, dropped.seed))
        outputs: list[Path] = [tasks.root / PLAN]
        for i, folder in enumerate(folders):
            gone = (duplicates_in(dedup_dir, partitions, int(bases[i]), kept[i]) if plan.config.dedup
                    else np.zeros(0, np.int64))
            if near is not None:
                gone = near.add_part(ctx, folder, gone, int(bases[i]), kept[i], dropped)
            outputs.append(save_gone(folder, gone))
            outputs += [path(folder, lang) for lang in cfg.langs for path in (text_path, index_path)]
            if len(gone) and dropped.size:
                _sample_duplicates(ctx, folder, gone, dropped)
            del gone
            release_heap()  # one task's arrays at a time in the coordinator's resident memory
        dropped_file = ctx.folder.dropped_path("train")
        dropped.write(dropped_file)
        if near is not None:
            near.write_audit(ctx, dropped, audit_path(dropped_file))
            outputs.append(audit_path(dropped_file))
        stats = _merged_stats(records, plan.config.dedup, int(bases[-1]), duplicates)
        total = int(bases[-1]) - duplicates
        if near is not None:
            stats["near_dedup"] = near.stats(total)
            total -= near.dropped
        stats["kept"] = {"pairs" if plan.tgt_files is not None or cfg.inputs.input_format != "text" else "lines": total}
        source = open_inputs(ctx, plan.files, plan.tgt_files)
        source.restore_index(tasks.plan()["index"])  # items per input file, for the manifest and provenance
        info = {"stats": stats, "kept": total, "parts": len(folders), "input_counts": source.file_counts}
        return [*outputs, dropped_file], info


def _sample_duplicates(ctx: RunContext, folder: Path, gone: np.ndarray, dropped: DropSample,
                       reason: str = "dedup") -> None:
    """Offer a part's duplicates (or near-duplicates: ``reason``) to the drop sample: their input line numbers
    only (pages of a map), and the text of the few that could enter it, read through the part's index."""
    numbers = np.array(np.memmap(folder / NUMBERS_RAW, dtype=np.int64, mode="r")[gone])
    sampled = _smallest_keys(numbers, dropped)
    if len(sampled):
        sides = [[cleaned_line(ctx, text) for text in _part_lines(folder, lang, gone[sampled])]
                 for lang in ctx.config.langs]
        dropped.add(reason, numbers[sampled], sides[0], sides[1] if len(sides) > 1 else None)


def _merged_stats(records: list[dict[str, Any]], dedup: bool, pairs: int, duplicates: int) -> dict[str, Any]:
    """The clean tasks' counts summed, step by step in the one-process order, with the dedup's."""
    stats: dict[str, Any] = {"read": _summed(r["stats"]["read"] for r in records)}
    for step in STEP_ORDER:
        if any(step in r["stats"] for r in records):
            stats[step] = _summed(r["stats"].get(step, {}) for r in records)
    if dedup and sum(int(r["lines"]) for r in records):
        stats["dedup"] = {"pairs": pairs, "duplicates": duplicates}
    return stats


def _clean_part(
    ctx: RunContext, plan: CleanPlan, details: dict[str, Any], index: int, workers: int, folder: Path, attempt: int
) -> dict[str, Any]:
    """One clean task's work in its folder: cleaned text with line index, dedup keys, line numbers, counts."""
    cfg = ctx.config
    source = open_inputs(ctx, plan.files, plan.tgt_files)
    source.restore_index(details["index"])
    cleaner = Cleaner(replace(plan.config, dedup=False), leakage_filter(ctx, "train"))
    near, sides = near_settings(cfg), near_sides(cfg)
    start, stop = details["ranges"][index]
    started = time.perf_counter()
    kept = 0
    indexes = [LineIndexer(ctx.read_options.index_every) for _ in cfg.langs]
    with ExitStack() as files:
        texts = [files.enter_context(atomic_write(text_path(folder, lang), "wb")) for lang in cfg.langs]
        keys_out = files.enter_context(atomic_write(folder / KEYS_RAW, "wb"))
        numbers_out = files.enter_context(atomic_write(folder / NUMBERS_RAW, "wb"))
        near_out = files.enter_context(atomic_write(folder / f"{NEAR}{KEYS_RAW}", "wb")) if near else None
        chunks = source.chunks(start, stop, chunk_lines=clean_chunk_lines(cfg, source))
        for _, cleaned, keys in local_chunks(chunks, cleaner, clean_workers(stop - start, workers)):
            if not len(cleaned):
                continue
            for handle, lines, indexer in zip(texts, [cleaned.src, cleaned.tgt], indexes, strict=False):
                data = clean_text(ctx, lines).encode("utf-8")  # type: ignore[arg-type]
                handle.write(data)
                indexer.add_block(data)
            keys_out.write(np.ascontiguousarray(keys, dtype=np.uint64).tobytes())
            numbers_out.write(np.asarray(cleaned.numbers, dtype=np.int64).tobytes())
            if near_out is not None:
                write_band_keys(near_out, cleaned.src, cleaned.tgt, sides, near)  # type: ignore[arg-type]
            kept += len(cleaned)
            crash_point(f"clean.train#{index}:midway")
    for lang, indexer in zip(cfg.langs, indexes, strict=True):
        write_json(index_path(folder, lang), indexer.state(text_path(folder, lang)))
    partition_keys(folder, details["partitions"])
    if near:
        partition_band_keys(folder, details["near_partitions"])
    cleaner.dropped.write(folder / DROPPED)
    stats = {"read": dict(source.stats.counts)}
    stats.update({name: dict(cleaner.stats[name].counts) for name in STEP_ORDER if cleaner.stats[name].counts})
    return task_record(started, stop - start, attempt, kept=kept, stats=stats)


def _part_lines(folder: Path, lang: str, positions: np.ndarray) -> list[bytes]:
    """The lines of a clean part at the sorted ``positions``, in that order."""
    index = json.loads(index_path(folder, lang).read_text(encoding="utf-8"))
    found = lines_at(text_path(folder, lang), index, positions)
    return [found[p] for p in positions.tolist()]


def _smallest_keys(numbers: np.ndarray, sample: DropSample) -> np.ndarray:
    """Of the duplicates' input line ``numbers``, the sorted places of the few that could enter the drop
    sample (its ``size`` smallest seeded keys): only their text is read back."""
    keys = line_keys(numbers, sample.seed)
    which = np.arange(len(keys))
    if len(keys) > sample.size:
        which = np.argpartition(keys, sample.size - 1)[: sample.size]
    return np.sort(which)


def _summed(rows: Any) -> dict[str, int]:
    total: dict[str, int] = {}
    for row in rows:
        for name, value in row.items():
            total[name] = total.get(name, 0) + int(value)
    return total
