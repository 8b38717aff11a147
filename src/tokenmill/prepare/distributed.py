"""The training split as fixed tasks: cleaned and encoded in parts anywhere, merged into one output.

The stages that do the heavy work per line are cut into tasks by input order; everything else runs
once, in the process that holds the output folder (the coordinator):

* ``clean.train``: the plan counts the inputs (the seek offsets are saved, so a task reads only its own
  lines) and cuts them into N ranges. On a cluster engine the counting pass is two rounds of tasks over
  byte ranges (``count.train``, ``index.train``: :mod:`~tokenmill.prepare.line_count`). Task i normalizes,
  filters and leak-checks its range (held-out sets come cleaned from the coordinator), writes its cleaned
  text with its line index, the dedup keys of what it kept (partitioned by hash on disk) and its counts.
  The duplicates are found partition by partition (:mod:`~tokenmill.prepare.partitioned_dedup`: flat
  memory; on a cluster engine by ``dedup.train`` tasks over ranges of partitions), and the coordinator
  writes each part's duplicate mask and the drop sample (the few duplicates it shows are read through the
  parts' indexes). The parts are never joined: read in task order through their masks they are the cleaned
  file one process writes (:mod:`~tokenmill.prepare.clean_parts`).
* ``sample.train.{langs}`` (a model trained): task i keeps clean part i's lines with the smallest seeded
  hashes of their global line numbers, the coordinator reads the ``--input-sentence-size`` smallest of all
  (:mod:`~tokenmill.prepare.sample_tasks`): the lines one pass over the whole text keeps. T2T's byte-budget
  sample reads the parts through their masks on the coordinator.
* ``encode.train.{lang}``: task i encodes clean part i (through its mask) into a part id store and writes
  the bincount of its ids and its unknown surfaces. The parts are never joined: the coordinator only makes
  the split's table of unknown surfaces (:mod:`~tokenmill.prepare.part_merge`).
* ``dictionary``: the parts' counts summed, less the items the piece filters dropped
  (:func:`~tokenmill.prepare.encoded_parts.summed_counts`): no pass over the ids.
* ``binarize.train.{lang}``: task i maps part i to the dictionary's ids, drops what the piece filters
  dropped, appends the end tokens in the store's dtype; the coordinator copies the parts' tokens and sizes
  into the stores (shards cut at the same items), the writer deriving the pointers from the sizes.

The stages left run as in one process: the output is byte-identical for every task count and engine.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import replace
from itertools import chain
from math import ceil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from tokenmill.errors import TokenmillError
from tokenmill.fsutil import atomic_write, write_json
from tokenmill.prepare import line_count
from tokenmill.prepare.clean_parts import CleanParts, index_path, lines_at, save_gone, text_path
from tokenmill.prepare.config import absolute_paths
from tokenmill.prepare.crash import crash_point
from tokenmill.prepare.encoded_parts import (
    COUNTS,
    IDS,
    UNKNOWN,
    IdCounts,
    binarize_part,
    mask_slice,
    part_lengths,
    part_table,
    surfaces_in_order,
)
from tokenmill.prepare.engines import get_engine
from tokenmill.prepare.heap import release_heap
from tokenmill.prepare.parallel import local_chunks
from tokenmill.prepare.part_merge import LineIndexer, renumbered_unknowns
from tokenmill.prepare.partitioned_dedup import (
    BOUNDS,
    KEYS_RAW,
    duplicates_in,
    find_duplicates,
    join_duplicates,
    partition_count,
    partition_keys,
)
from tokenmill.prepare.sample_tasks import merged_sample, part_candidates
from tokenmill.prepare.state import fingerprint
from tokenmill.prepare.tasks import PLAN, TASKS_DIR, TaskSet
from tokenmill.store.format import Layout
from tokenmill.store.index_file import item_blocks
from tokenmill.text import Cleaner
from tokenmill.text.drop_sample import DropSample, line_keys

if TYPE_CHECKING:
    from tokenmill.prepare.pipeline import CleanPlan, Pipeline

LOCAL_BYTES_PER_TASK = 1 << 30
CLUSTER_BYTES_PER_TASK = 256 << 20
NUMBERS_RAW = "numbers.raw"
DROPPED = "dropped.json"
PART = "part"
COPY_ITEMS = 1 << 16  # items per block copied from a binarized part into the stores
Block = tuple[np.ndarray, np.ndarray]
"""(tokens, item sizes) of consecutive items."""
STEP_ORDER = ("normalize", "filter", "leakage")


CLUSTER_ENGINES = ("ray",)
"""Engines whose runs also count the inputs and settle the dedup partitions by tasks. The local engine runs
tasks one after another, so there one pass in the coordinator costs less than rounds of tasks (each
round starts a helper process); a Slurm run would do them in one job anyway."""
COUNT_STAGES = ("count.train", "index.train")
SAMPLE_STAGE = "sample.train"
"""The tokenizer's sample from the clean parts: stage ``sample.train.{langs}`` (one per model trained)."""
SAMPLE = "sample"
DEDUP_STAGE = "dedup.train"


def index_paths(plan: CleanPlan) -> list[str]:
    """The files a source of ``plan`` indexes, in its order (a parallel corpus: source, target, ...)."""
    if plan.tgt_files is None:
        return list(plan.files)
    return [path for pair in zip(plan.files, plan.tgt_files, strict=True) for path in pair]


class PhaseDone(Exception):
    """Raised when a ``--phase`` run has done its part (the tasks are left to the array jobs)."""


class Tasked:
    """The tasked stages of one :class:`~tokenmill.prepare.pipeline.Pipeline` (composition: it reads the
    pipeline's paths and settings and never imports it)."""

    def __init__(self, pipeline: Pipeline, phase: str | None = None) -> None:
        self.pipeline = pipeline
        self.config = pipeline.config
        self.phase = phase
        self.table: dict[str, list[dict[str, Any]]] = {}
        """stage -> one row per task (lines, seconds, attempts, host) for the summary and the manifest."""
        self.parts: CleanParts | None = None
        """Train's cleaned text as the clean tasks' parts, once a tasked ``clean.train`` is recorded."""
        self.merge_seconds: dict[str, float] = {}
        """stage -> seconds its coordinator spent joining the tasks' parts (dedup included)."""

    # ---------------------------------------------------------------- how many, where
    def input_bytes(self) -> int:
        plan = self.pipeline.clean_settings("train")
        return sum(os.path.getsize(f) for f in plan.files + (plan.tgt_files or []))

    def count(self) -> int:
        """--tasks, or one task per GiB of training input locally (per 256 MiB on a cluster)."""
        if self.config.tasks:
            return self.config.tasks
        per_task = LOCAL_BYTES_PER_TASK if self.config.engine == "local" else CLUSTER_BYTES_PER_TASK
        return max(1, ceil(self.input_bytes() / per_task))

    @property
    def enabled(self) -> bool:
        """Whether the training split goes through tasks: on ray/slurm, with --tasks given (even 1), in a
        --phase, or when the input asks for more than one task; else the plain one-process path."""
        cfg = self.config
        if not self.pipeline.can_use_tasks or cfg.align_suffix or cfg.documents == "blank-line":
            return False  # alignments and blank-line documents are cleaned in one piece (see config)
        return cfg.engine != "local" or cfg.tasks >= 1 or self.phase is not None or self.count() > 1

    def task_set(self, stage: str, key: str) -> TaskSet:
        return TaskSet(self.pipeline.work / TASKS_DIR / stage, stage, key)

    def run(self, tasks: TaskSet, execute: Callable[..., dict[str, Any]], *, in_phase: bool = False) -> None:
        """Run the tasks of ``tasks`` not finished yet on the engine (the coordinator's part); in a ``--phase``
        run only when ``in_phase`` (binarize's tasks run inside the merge phase: no array job of their own)."""
        left = tasks.left()
        if left and self.phase is not None and not in_phase:
            tasks.records()  # raises: the tasks of this stage must have run before this phase
        engine = get_engine(self.config.engine if self.config.engine != "slurm" else "local",
                            ray_address=self.config.ray_address)
        per_task_workers = self.config.workers if engine.name == "local" else 1
        settings = absolute_paths(self.config.to_dict())  # a worker may start in another directory
        finished = tasks.count - len(left)
        with tqdm(total=tasks.count, initial=finished, desc=f"{tasks.stage} tasks ({engine.name})", unit=" task",
                  disable=not self.pipeline.progress, leave=False) as bar:
            lines = [0]

            def done(record: dict[str, Any]) -> None:
                lines[0] += record["lines"]
                bar.set_postfix_str(f"{lines[0] / max(bar.format_dict['elapsed'], 1e-9):,.0f} lines/s")
                bar.update(1)

            calls = [(settings, tasks.stage, index, per_task_workers) for index in left]
            results = engine.run(execute, calls, done)
        nodes = {index: result["node"] for index, result in zip(left, results, strict=True) if "node" in result}
        self.table[tasks.stage] = [
            {"task": i, "lines": r["lines"], "seconds": r["seconds"], "attempts": r["attempt"], "host": r["host"],
             **({"node": nodes[i]} if i in nodes else {})}
            for i, r in enumerate(tasks.records())
        ]

    def record(self, started: float, lines: int, attempt: int, **extra: Any) -> dict[str, Any]:
        return {"lines": int(lines), "seconds": round(time.perf_counter() - started, 3), "attempt": attempt,
                "host": socket.gethostname(), "pid": os.getpid(), **extra}

    # ---------------------------------------------------------------- clean.train
    def plan_clean(self, plan: CleanPlan, execute: Callable[..., dict[str, Any]]) -> TaskSet:
        """The tasks of ``clean.train`` (planned now unless a plan for these inputs exists). The inputs are
        counted here, or on a cluster engine by tasks over byte ranges (:meth:`count_inputs`)."""
        tasks = self.task_set("clean.train", plan.key)
        if tasks.read_plan() is None or self.pipeline.stages.force:
            source = self.pipeline.open_inputs(plan)
            counted = self.config.engine in CLUSTER_ENGINES and source.line_indexed  # a table counts from metadata
            if counted:
                source.restore_index(self.count_inputs(plan, execute))
            total = source.scan()
            count = self.count()
            tasks.write_plan(count, ranges=source.ranges(count), index=source.index_state(), items=total,
                             partitions=partition_count(total))
            if counted:
                for stage in COUNT_STAGES:
                    self.task_set(stage, plan.key).remove()  # the plan holds the index
        return tasks

    # ---------------------------------------------------------------- count.train, index.train
    def count_inputs(self, plan: CleanPlan, execute: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
        """The line index of every training input (what ``Source.index_state`` holds after its counting
        pass), made by two rounds of tasks over byte ranges (:mod:`~tokenmill.prepare.line_count`)."""
        paths = index_paths(plan)
        every = self.pipeline.read_options.index_every
        rounds = [self.task_set(stage, plan.key) for stage in COUNT_STAGES]
        if rounds[0].read_plan() is None or self.pipeline.stages.force:
            ranges = line_count.byte_ranges(paths, self.count())
            rounds[0].write_plan(len(ranges), ranges=ranges, every=every)
        ranges = rounds[0].plan()["ranges"]  # a run resumed with another task count keeps the planned ranges
        self.run(rounds[0], execute, in_phase=True)
        counted = rounds[0].records()
        if rounds[1].read_plan() is None or self.pipeline.stages.force:
            rounds[1].write_plan(len(ranges), ranges=ranges, every=every,
                                 before=line_count.newlines_before(ranges, counted))
        self.run(rounds[1], execute, in_phase=True)
        offsets = [record["offsets"] for record in rounds[1].records()]
        states = line_count.file_indexes(paths, ranges, counted, offsets, every)
        if plan.tgt_files is not None:
            line_count.check_pairs(states)
        return states

    def count_task(self, stage: str, index: int) -> dict[str, Any]:
        """Task ``index`` of ``count.train`` (newlines of one byte range) or ``index.train`` (the offsets of
        the range's indexed lines)."""
        tasks = TaskSet.planned(self.pipeline.work / TASKS_DIR / stage, stage)
        details = tasks.plan()
        paths = index_paths(self.pipeline.clean_settings("train"))

        def body(folder: Path, attempt: int) -> dict[str, Any]:
            started = time.perf_counter()
            where = details["ranges"][index]
            path, every = paths[where["file"]], int(details["every"])
            if stage == COUNT_STAGES[0]:
                found = line_count.count_range(path, where["start"], where["stop"], every)
                lines = found.get("newlines", found.get("index", {}).get("n_lines", 0))
            else:
                offsets = [] if where["stop"] is None else line_count.range_offsets(
                    path, where["start"], where["stop"], int(details["before"][index]), every)
                found, lines = {"offsets": offsets}, len(offsets)
            return self.record(started, lines, attempt, **found)

        return tasks.run_once(index, body)

    def clean_task(self, index: int, workers: int) -> dict[str, Any]:
        """Task ``index`` of ``clean.train``: its cleaned lines, dedup keys and counts, then its marker."""
        pipeline = self.pipeline
        plan = pipeline.clean_settings("train")
        tasks = self.task_set("clean.train", plan.key)
        details = tasks.plan()
        return tasks.run_once(index, lambda folder, attempt: self._clean_part(plan, details, index, workers,
                                                                              folder, attempt))

    def _clean_part(
        self, plan: CleanPlan, details: dict[str, Any], index: int, workers: int, folder: Path, attempt: int
    ) -> dict[str, Any]:
        pipeline, cfg = self.pipeline, self.config
        source = pipeline.open_inputs(plan)
        source.restore_index(details["index"])
        cleaner = Cleaner(replace(plan.config, dedup=False), pipeline.leakage_filter("train"))
        start, stop = details["ranges"][index]
        started = time.perf_counter()
        kept = 0
        indexes = [LineIndexer(pipeline.read_options.index_every) for _ in cfg.langs]
        with ExitStack() as files:
            texts = [files.enter_context(atomic_write(text_path(folder, lang), "wb")) for lang in cfg.langs]
            keys_out = files.enter_context(atomic_write(folder / KEYS_RAW, "wb"))
            numbers_out = files.enter_context(atomic_write(folder / NUMBERS_RAW, "wb"))
            chunks = source.chunks(start, stop, chunk_lines=pipeline.clean_chunk_lines)
            for _, cleaned, keys in local_chunks(chunks, cleaner, pipeline.clean_workers(stop - start, workers)):
                if not len(cleaned):
                    continue
                for handle, lines, indexer in zip(texts, [cleaned.src, cleaned.tgt], indexes, strict=False):
                    data = pipeline.clean_text(lines).encode("utf-8")  # type: ignore[arg-type]
                    handle.write(data)
                    indexer.add_block(data)
                keys_out.write(np.ascontiguousarray(keys, dtype=np.uint64).tobytes())
                numbers_out.write(np.asarray(cleaned.numbers, dtype=np.int64).tobytes())
                kept += len(cleaned)
                crash_point(f"clean.train#{index}:midway")
        for lang, indexer in zip(cfg.langs, indexes, strict=True):
            write_json(index_path(folder, lang), indexer.state(text_path(folder, lang)))
        partition_keys(folder, details["partitions"])
        cleaner.dropped.write(folder / DROPPED)
        stats = {"read": dict(source.stats.counts)}
        stats.update({name: dict(cleaner.stats[name].counts) for name in STEP_ORDER if cleaner.stats[name].counts})
        return self.record(started, stop - start, attempt, kept=kept, stats=stats)

    def merge_clean(
        self, tasks: TaskSet, plan: CleanPlan, execute: Callable[..., dict[str, Any]]
    ) -> tuple[list[Path], dict[str, Any]]:
        """Settle duplicates across tasks and join the parts into the cleaned files (``clean.train``)."""
        started = time.perf_counter()
        outputs, info = self._merge_clean(tasks, plan, execute)
        self.merge_seconds[tasks.stage] = round(time.perf_counter() - started, 3)
        return outputs, info

    def _duplicates(
        self, folders: list[Path], bases: list[int], partitions: int, out: Path, key: str,
        execute: Callable[..., dict[str, Any]],
    ) -> int:
        """Find the duplicates across tasks into ``out``: here, or on a cluster engine by tasks that settle a
        range of partitions each (:data:`DEDUP_STAGE`), whose outputs are then put one after another."""
        if self.config.engine not in CLUSTER_ENGINES:
            return find_duplicates(folders, bases, partitions, out)
        tasks = self.task_set(DEDUP_STAGE, key)
        if tasks.read_plan() is None or self.pipeline.stages.force:
            cuts = (np.arange(min(partitions, self.count()) + 1) * partitions) // min(partitions, self.count())
            tasks.write_plan(len(cuts) - 1, cuts=cuts.tolist(), bases=bases, partitions=partitions)
        self.run(tasks, execute, in_phase=True)
        found = join_duplicates([tasks.folder(i) for i in range(tasks.count)], out)
        tasks.remove()
        return found

    def dedup_task(self, index: int) -> dict[str, Any]:
        """Task ``index`` of :data:`DEDUP_STAGE`: the duplicates in its range of hash partitions."""
        tasks = TaskSet.planned(self.pipeline.work / TASKS_DIR / DEDUP_STAGE, DEDUP_STAGE)
        details = tasks.plan()
        parts = self.task_set("clean.train", "")
        folders = [parts.folder(i) for i in range(len(details["bases"]))]

        def body(folder: Path, attempt: int) -> dict[str, Any]:
            started = time.perf_counter()
            which = range(details["cuts"][index], details["cuts"][index + 1])
            keys = sum(int(b[which.stop] - b[which.start]) for b in (np.load(f / BOUNDS) for f in folders))
            found = find_duplicates(folders, details["bases"], int(details["partitions"]), folder, which)
            return self.record(started, keys, attempt, duplicates=found)

        return tasks.run_once(index, body)

    def _merge_clean(
        self, tasks: TaskSet, plan: CleanPlan, execute: Callable[..., dict[str, Any]]
    ) -> tuple[list[Path], dict[str, Any]]:
        pipeline, cfg = self.pipeline, self.config
        records = tasks.records()
        details = tasks.plan()
        kept = [int(r["kept"]) for r in records]
        bases = np.concatenate([[0], np.cumsum(kept)]).astype(np.int64)
        folders = [tasks.folder(i) for i in range(len(records))]
        dedup_dir = tasks.root / "dedup"
        partitions = int(details["partitions"])
        duplicates = 0
        if plan.config.dedup:
            duplicates = self._duplicates(folders, bases[:-1].tolist(), partitions, dedup_dir, tasks.key, execute)
        dropped = Cleaner(plan.config).dropped
        for folder in folders:
            dropped.merge(DropSample.from_dict(json.loads((folder / DROPPED).read_text(encoding="utf-8")),
                                               dropped.size, dropped.seed))
        outputs: list[Path] = [tasks.root / PLAN]
        for i, folder in enumerate(folders):
            gone = (duplicates_in(dedup_dir, partitions, int(bases[i]), kept[i]) if plan.config.dedup
                    else np.zeros(0, np.int64))
            outputs.append(save_gone(folder, gone))
            outputs += [path(folder, lang) for lang in cfg.langs for path in (text_path, index_path)]
            if len(gone) and dropped.size:  # the input line numbers of the duplicates only (pages of a map)
                numbers = np.array(np.memmap(folder / NUMBERS_RAW, dtype=np.int64, mode="r")[gone])
                sampled = _smallest_keys(numbers, dropped)
                if len(sampled):  # the few duplicates the drop sample may show: read through the part's index
                    sides = [[pipeline.cleaned_line(text) for text in self._part_lines(folder, lang, gone[sampled])]
                             for lang in cfg.langs]
                    dropped.add("dedup", numbers[sampled], sides[0], sides[1] if len(sides) > 1 else None)
            del gone
            release_heap()  # one task's arrays at a time in the coordinator's resident memory
        dropped_file = pipeline.dropped_path("train")
        dropped.write(dropped_file)
        stats: dict[str, Any] = {"read": _summed(r["stats"]["read"] for r in records)}
        for step in STEP_ORDER:
            if any(step in r["stats"] for r in records):
                stats[step] = _summed(r["stats"].get(step, {}) for r in records)
        if plan.config.dedup and sum(int(r["lines"]) for r in records):
            stats["dedup"] = {"pairs": int(bases[-1]), "duplicates": duplicates}
        total = int(bases[-1]) - duplicates
        stats["kept"] = {"pairs" if plan.tgt_files is not None or cfg.input_format != "text" else "lines": total}
        return [*outputs, dropped_file], {"stats": stats, "kept": total, "parts": len(folders)}

    @staticmethod
    def _part_lines(folder: Path, lang: str, positions: np.ndarray) -> list[bytes]:
        """The lines of a clean part at the sorted ``positions``, in that order."""
        index = json.loads(index_path(folder, lang).read_text(encoding="utf-8"))
        found = lines_at(text_path(folder, lang), index, positions)
        return [found[p] for p in positions.tolist()]

    def clean_parts(self, count: int) -> CleanParts:
        """The ``count`` parts of a recorded tasked ``clean.train`` (see :mod:`~tokenmill.prepare.clean_parts`)."""
        tasks = self.task_set("clean.train", "")
        self.parts = CleanParts([tasks.folder(i) for i in range(count)], self.pipeline.quoted_clean,
                                self.config.chunk_lines)
        return self.parts

    # ---------------------------------------------------------------- sample.train.{langs}
    def training_sample(self, langs: list[str], capacity: int, seed: int, execute: Callable[..., dict[str, Any]]
                        ) -> list[str] | None:
        """The tokenizer's sample of ``langs`` (one model) from the clean parts: one task per part writes its
        candidates, the coordinator reads the ``capacity`` with the smallest keys (:mod:`sample_tasks`); None
        when the parts' key limit left too few (the caller then draws it in one pass)."""
        parts = self.parts
        assert parts is not None
        stage = f"{SAMPLE_STAGE}.{'+'.join(langs)}"
        tasks = self.task_set(stage, fingerprint(self.pipeline.keys["clean.train"], langs, capacity, seed))
        if tasks.read_plan() is None or self.pipeline.stages.force:
            kept = parts.kept_lines()
            bases = np.concatenate([[0], np.cumsum(kept)[:-1]]).astype(np.int64).tolist()
            tasks.write_plan(len(kept), langs=langs, bases=bases, kept=kept, total=int(sum(kept)), capacity=capacity,
                             seed=seed)
        self.run(tasks, execute, in_phase=True)
        started = time.perf_counter()
        population = len(langs) * int(tasks.plan()["total"])
        sample = merged_sample([tasks.folder(i) for i in range(tasks.count)], SAMPLE, capacity, population)
        self.merge_seconds[stage] = round(time.perf_counter() - started, 3)
        tasks.remove()  # the sample is in memory now; a run stopped while training draws it again
        return sample

    def sample_task(self, stage: str, index: int) -> dict[str, Any]:
        """Task ``index`` of ``sample.train.{langs}``: clean part ``index``'s candidates for the sample."""
        tasks = TaskSet.planned(self.pipeline.work / TASKS_DIR / stage, stage)
        details = tasks.plan()
        parts = self.clean_parts(int(details["tasks"]))

        def body(folder: Path, attempt: int) -> dict[str, Any]:
            started = time.perf_counter()
            found = part_candidates(parts, index, details["langs"], int(details["bases"][index]),
                                    int(details["total"]), int(details["capacity"]), int(details["seed"]), folder,
                                    SAMPLE)
            return self.record(started, int(details["kept"][index]) * len(details["langs"]), attempt,
                               candidates=found)

        return tasks.run_once(index, body)

    # ---------------------------------------------------------------- encode.train.{lang}
    def plan_encode(self, lang: str, key: str) -> TaskSet:
        """One task per clean part: task i encodes part i's lines that stay (no joined cleaned file)."""
        tasks = self.task_set(f"encode.train.{lang}", key)
        parts = self.parts
        assert parts is not None  # the pipeline plans encode tasks only over recorded clean parts
        plan = tasks.read_plan()
        if plan is None or plan["tasks"] != len(parts.folders) or self.pipeline.stages.force:
            tasks.write_plan(len(parts.folders), lines=parts.kept_lines(), lang=lang)
        return tasks

    def encode_task(self, lang: str, index: int, workers: int) -> dict[str, Any]:
        """Task ``index`` of ``encode.train.{lang}``: range ``index`` of the cleaned text as a part id store."""
        pipeline = self.pipeline
        if not pipeline.model_path(lang).exists():
            raise TokenmillError(
                f"encode task {index}: the tokenizer is not there yet ({pipeline.model_path(lang)}); run the plan, "
                "clean and tokenizer phases first (tokenmill prepare ... --phase tokenizer)"
            )
        tasks = self.task_set(f"encode.train.{lang}", pipeline.encode_key("train", lang))
        details = tasks.plan()
        return tasks.run_once(index, lambda folder, attempt: self._encode_part(lang, details, index, workers,
                                                                               folder, attempt))

    def _encode_part(
        self, lang: str, details: dict[str, Any], index: int, workers: int, folder: Path, attempt: int
    ) -> dict[str, Any]:
        pipeline = self.pipeline
        parts = self.clean_parts(int(details["tasks"]))
        started = time.perf_counter()
        chunks = parts.part_chunks(index, lang)
        counts = IdCounts(pipeline.tokenizer_for(lang).vocab_size)
        table = pipeline.encode_lines(lang, chunks, folder / IDS, threads=workers,
                                      crash_name=f"encode.train.{lang}#{index}", counts=counts)
        counts.save(folder / COUNTS)
        write_json(folder / UNKNOWN, table or {})
        return self.record(started, int(details["lines"][index]), attempt)

    def merge_encoded(self, tasks: TaskSet, lang: str) -> tuple[list[Path], dict[str, Any]]:
        """Record the tasks' parts as the output of ``encode.train.{lang}`` (they are not joined: the dictionary
        sums their counts, binarize runs on each), with the split's table of unknown surfaces as one process
        numbers them."""
        pipeline = self.pipeline
        tasks.records()
        started = time.perf_counter()
        vocab_size = pipeline.tokenizer_for(lang).vocab_size
        table: dict[str, list[int]] = {}
        outputs: list[Path] = []
        for i in range(tasks.count):
            folder = tasks.folder(i)
            renumbered_unknowns(table, part_table(folder), vocab_size)
            outputs += [folder / f"{IDS}.bin", folder / f"{IDS}.idx", folder / COUNTS, folder / UNKNOWN]
        if pipeline.keeps_unknown_surfaces():
            path = pipeline.unknown_path("train", lang)
            write_json(path, table)
            outputs.append(path)
        self.merge_seconds[tasks.stage] = round(time.perf_counter() - started, 3)
        return outputs, {"parts": tasks.count}

    def part_folders(self, stage: str, key: str, count: int) -> list[Path]:
        """The folders of the ``count`` tasks of ``stage`` (whose parts a recorded stage lists)."""
        tasks = self.task_set(stage, key)
        return [tasks.folder(i) for i in range(count)]

    # ---------------------------------------------------------------- binarize.train.{lang}
    def plan_binarize(self, lang: str, key: str, details: dict[str, Any]) -> TaskSet:
        """One task per encoded part of train's side ``lang``; ``details``: the id lookup, surfaces' ids, end
        token, unknown id, dtype and layout (every task reads them from the plan)."""
        tasks = self.task_set(f"binarize.train.{lang}", key)
        if tasks.read_plan() is None or self.pipeline.stages.force:
            lengths = part_lengths(self.pipeline.id_parts[lang])
            firsts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
            tasks.write_plan(len(lengths), lengths=lengths.tolist(), firsts=firsts.tolist(), **details)
        return tasks

    def binarize_task(self, lang: str, index: int) -> dict[str, Any]:
        """Task ``index`` of ``binarize.train.{lang}``: encoded part ``index`` in the output's ids."""
        stage = f"binarize.train.{lang}"
        tasks = TaskSet.planned(self.pipeline.work / TASKS_DIR / stage, stage)
        details = tasks.plan()
        return tasks.run_once(index, lambda folder, attempt: self._binarize_part(lang, details, index, folder,
                                                                                 attempt))

    def _binarize_part(
        self, lang: str, details: dict[str, Any], index: int, folder: Path, attempt: int
    ) -> dict[str, Any]:
        started = time.perf_counter()
        part = self.task_set(f"encode.train.{lang}", "").folder(index)
        lookup = None
        if details["lookup"] is not None:  # + the part's unknown surfaces, by their own work ids
            surfaces = details["surfaces"]
            extra = [surfaces[surface] for surface in surfaces_in_order(part_table(part))]
            lookup = np.array(details["lookup"] + extra, dtype=np.int32)
        first, length = int(details["firsts"][index]), int(details["lengths"][index])
        kept = mask_slice(self.pipeline.keep_path("train") if details["keep"] else None, first, first + length)
        counts = binarize_part(part / IDS, folder / PART, lookup=lookup, kept=kept, end=details["end"],
                               unk=details["unk"], dtype=np.dtype(details["dtype"]), layout=Layout(details["layout"]),
                               crash_name=f"binarize.train.{lang}#{index}",
                               empty_documents=details.get("empty_documents", False))
        return self.record(started, length, attempt, **counts)

    def merge_binarized(
        self, tasks: TaskSet, write: Callable[[Iterator[Block]], tuple[list[Path], dict[str, Any]]]
    ) -> tuple[list[Path], dict[str, Any]]:
        """The binarized parts copied in task order into the split's stores (``write`` cuts the shards and
        writes the indexes: pointers from the sizes), with the unknown tokens the tasks counted."""
        records = tasks.records()
        started = time.perf_counter()
        blocks = chain.from_iterable(item_blocks(tasks.folder(i) / PART, COPY_ITEMS) for i in range(tasks.count))
        outputs, info = write(blocks)
        written = (sum(r["sentences"] for r in records), sum(r["tokens"] for r in records))
        if (info["sentences"], info["tokens"]) != written:
            raise TokenmillError(f"stage {tasks.stage}: the parts hold other counts than their tasks wrote; delete "
                                 f"{tasks.root} and run prepare again")
        unknown = sum(int(r["unk"]) for r in records)
        info.update(unk=unknown, unk_percent=round(100.0 * unknown / info["tokens"], 4) if info["tokens"] else 0.0)
        self.merge_seconds[tasks.stage] = round(time.perf_counter() - started, 3)
        return outputs, info


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


__all__ = ["PhaseDone", "Tasked"]
