"""Stage ``encode.{split}.{lang}``: the cleaned text through the tokenizer into int32 work-id stores.

One process: batched tokenizer calls (native threads, overlapped for libraries that let go of the GIL),
or worker processes that read their own ranges of the cleaned file (:mod:`~tokenmill.prepare.encode_workers`);
train's work ids are counted for the dictionary. Whitespace-tokenized text is numbered by first appearance.
As tasks (train with clean parts): task i encodes clean part i (through its mask) into a part id store with
its bincount and unknown surfaces; the parts are never joined, the merge only makes the split's table of
unknown surfaces (:mod:`~tokenmill.prepare.part_merge`). The encoder (``--encoder``) is chosen and checked once,
by the coordinator when it plans the tasks; the plan records it and every task runs it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from tokenmill._core.ordered import ordered_map, prefetched
from tokenmill.errors import TokenmillError
from tokenmill.fsutil import write_json
from tokenmill.prepare import encode_workers
from tokenmill.prepare.clean_parts import PartsSource
from tokenmill.prepare.crash import crash_point
from tokenmill.prepare.encode_workers import (
    PROCESS_BACKENDS,
    FirstSeen,
    encoded_ranges,
    forks,
    global_word_ids,
    text_batches,
    word_ids,
)
from tokenmill.prepare.encoded_parts import COUNTS, IDS, UNKNOWN, IdCounts, part_table
from tokenmill.prepare.parallel import reads_in_workers
from tokenmill.prepare.part_merge import renumbered_unknowns
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.run.tasking import fresh_plan, run_tasks, task_record
from tokenmill.prepare.sentence_split import SentenceLengths, sentence_files, sentence_step, splits_sentences
from tokenmill.prepare.stages.base import Outputs, TaskedStage
from tokenmill.prepare.stages.binarize import (
    binarized_in_encode,
    binarized_in_two_passes,
    store_settings,
    store_writer,
)
from tokenmill.prepare.stages.clean import clean_parts
from tokenmill.prepare.stages.cleaned import clean_plan, clean_stats, cleaned_source, input_bytes, reads_input
from tokenmill.prepare.stages.encoded import encode_key
from tokenmill.prepare.stages.split_store import SplitWriter
from tokenmill.prepare.stages.tokenizer import model_path, tokenizer_for
from tokenmill.prepare.state import fingerprint
from tokenmill.prepare.tasks import TaskSet
from tokenmill.prepare.tokenizing import Found, UnknownSurfaces, backend_name, keeps_unknown_surfaces, splits_words
from tokenmill.store import IndexedWriter
from tokenmill.text import Cleaner
from tokenmill.text.chunks import CHUNK_BYTES, byte_bounded_lines
from tokenmill.text.readers import Source
from tokenmill.vocab.encoder_choice import EncoderChoice, choose_encoder, run_checked
from tokenmill.vocab.fast_encoder import Unsupported, fast_encoder
from tokenmill.vocab.tokenizer import Tokenizer

ENCODE_BATCH_CHARS = 4 << 20  # characters per tokenizer call: bounds the library's per-call objects (LM documents)
READ_CHUNK_BYTES = CHUNK_BYTES  # input bytes per chunk the encode stage reads (about): bounds the documents held
# (two chunks at once when the next one is read while this one is encoded)
OVERLAPPED_BATCHES = 2  # tokenizer calls at once (threads), for libraries that encode without the GIL


class EncodeStage(TaskedStage):
    """``encode.{split}.{lang}`` (see the module's docstring)."""

    def __init__(self, split: str, lang: str) -> None:
        self.split, self.lang = split, lang
        self.name = f"encode.{split}.{lang}"

    def key(self, ctx: RunContext) -> str:
        """The encoded text's key; when this stage writes the stores itself (:func:`binarized_in_encode`),
        with the stores' settings too (their binarize stage then only takes them over), unless an earlier
        version's two passes already wrote them (:func:`binarized_in_two_passes`)."""
        split, lang = self.split, self.lang
        key = encode_key(ctx, split, lang)
        if binarized_in_encode(ctx, split) and not binarized_in_two_passes(ctx, split, lang, key):
            return fingerprint(key, "stores written as encoded", store_settings(ctx, split, lang))
        return key

    def tasked(self, ctx: RunContext) -> bool:
        """One encode task per clean part (a model is needed: whitespace words are numbered in one pass)."""
        return self.split == "train" and ctx.parts is not None and not splits_words(ctx.config)

    def task_phase(self, ctx: RunContext) -> str | None:
        return "encode" if self.tasked(ctx) else None

    def run(self, ctx: RunContext) -> Outputs:
        if not self.tasked(ctx):
            return self._one_process(ctx)
        tasks = self.plan(ctx)
        run_tasks(ctx, tasks)
        return self.merge(ctx, tasks)

    def after(self, ctx: RunContext, info: dict[str, Any]) -> None:
        if info.get("encoder") is not None:
            ctx.summary.encoders[self.name] = info["encoder"]
        if info.get("clean") is not None:  # the input was read here (see reads_input)
            ctx.split_info(self.split)["clean"] = info["clean"]
        if self.split != "train":
            return
        tasks = ctx.folder.task_set(self.name, ctx.keys[self.name])
        if info.get("parts"):  # the tasks' part stores are the stage's output
            ctx.id_parts[self.lang] = [tasks.folder(i) for i in range(info["parts"])]
        else:
            tasks.remove()

    # ---------------------------------------------------------------- one process
    def _one_process(self, ctx: RunContext) -> Outputs:
        """The stage in this process, with the encoder ``--encoder`` chooses (see encoder_choice)."""
        cfg = ctx.config
        reference = None if splits_words(cfg) else tokenizer_for(ctx, self.lang)
        choice = choose_encoder(reference, cfg.run.encoder, check_docs=cfg.run.encoder_check_docs, seed=cfg.run.seed)
        (outputs, info), record = run_checked(choice, lambda c: self._encode_with(ctx, c), ctx.summary.warn,
                                              cfg.run.workers)
        return outputs, {**info, "encoder": record}

    def _encode_with(self, ctx: RunContext, choice: EncoderChoice) -> Outputs:
        split, lang, folder = self.split, self.lang, ctx.folder
        prefix = folder.ids_prefix(split, lang)
        stores = store_writer(ctx, split, lang) if binarized_in_encode(ctx, split) else None
        source = cleaned_source(ctx, split, lang)
        cleaner = Cleaner(clean_plan(ctx, split).config) if reads_input(ctx, split) else None
        kept = 0

        def lines() -> Iterator[list[str]]:
            nonlocal kept
            for chunk in source.chunks(**read_chunks(ctx, source)):
                if cleaner is not None:  # counts only: every line is kept as read
                    chunk, _ = cleaner.local(chunk, keys=False)
                kept += len(chunk.src)
                yield chunk.src

        words = splits_words(ctx.config)
        counted = False
        with ctx.bar(source.scan(), f"encode {split}.{lang}") as bar:
            if cleaner is None and choice.fast is None and encodes_in_workers(ctx, source):
                table = self._in_workers(ctx, source, prefix, bar, stores)
                counted = split == "train"  # see _in_workers
            elif words:
                table = None
                write_json(folder.words_path(split, lang), encode_words(lines(), prefix, bar, self.name))
            else:
                table = encode_lines(ctx, lang, choice.tap(lines()), prefix, threads=ctx.config.run.workers, bar=bar,
                                     crash_name=self.name, tokenizer=choice.encoder, writer=stores)
        written = {}
        if stores is not None:  # the stores themselves, for the binarize stage to take over
            outputs = list(stores.outputs)
            written = {"binarized": {**stores.info, "outputs": [str(p.relative_to(ctx.root)) for p in outputs]}}
        else:
            outputs = [Path(f"{prefix}.bin"), Path(f"{prefix}.idx")]
        if splits_sentences(ctx.config):
            outputs += sentence_files(prefix)
        if counted:
            outputs.append(folder.counts_path(split, lang))
        if words:
            outputs.append(folder.words_path(split, lang))
        if table is not None:
            path = folder.unknown_path(split, lang)
            write_json(path, table)
            outputs.append(path)
        if cleaner is None:
            return outputs, written
        return outputs, {**written, "clean": clean_stats(ctx.config, source.stats.counts, cleaner, kept, False),
                         "input_counts": source.file_counts}  # for the provenance maps: no second count

    def _in_workers(self, ctx: RunContext, source: Source, prefix: Path, bar: tqdm,
                    stores: SplitWriter | None) -> dict[str, list[int]] | None:
        """The encode stage on worker processes: ranges come back in input order; unknown surfaces and
        whitespace words are numbered here, in that order, so the store equals a one-process run's (written
        into ``stores`` when given, else the work-id store at ``prefix``)."""
        split, lang = self.split, self.lang
        whitespace = splits_words(ctx.config)
        tokenizer = None if whitespace else tokenizer_for(ctx, lang)
        keep = tokenizer is not None and keeps_unknown_surfaces(ctx.config)
        surfaces = UnknownSurfaces(tokenizer) if keep else None  # type: ignore[arg-type]
        words = FirstSeen()
        counts = IdCounts(0) if split == "train" else None  # the dictionary is counted on train alone
        with stores if stores is not None else IndexedWriter(prefix, dtype=np.dtype(np.int32)) as writer:
            for encoded in encoded_ranges(source, tokenizer, ctx.config.run.workers, keep_surfaces=keep,
                                          max_chars=ENCODE_BATCH_CHARS):
                flat = encoded.flat
                if whitespace:
                    flat = global_word_ids(encoded, words)
                elif surfaces is not None and encoded.found is not None:
                    flat = surfaces.assign(flat, encoded.found)
                writer.add_items(flat, encoded.lengths)
                if counts is not None:
                    counts.add(flat)
                bar.update(encoded.lines)
                crash_point(f"{self.name}:midway")
        if counts is not None:
            counts.save(ctx.folder.counts_path(split, lang))
        if whitespace:
            write_json(ctx.folder.words_path(split, lang), list(words))
            return None
        return None if surfaces is None else surfaces.table()

    # ---------------------------------------------------------------- as tasks
    def plan(self, ctx: RunContext) -> TaskSet:
        """One task per clean part: task i encodes part i's lines that stay (no joined cleaned file)."""
        tasks = ctx.folder.task_set(self.name, self.key(ctx))
        parts = ctx.parts
        assert parts is not None  # encode tasks are planned only over recorded clean parts
        plan = tasks.read_plan()
        if fresh_plan(ctx, tasks) or plan is None or plan["tasks"] != len(parts.folders):
            tasks.write_plan(len(parts.folders), lines=parts.kept_lines(), lang=self.lang,
                             encoder=self._tasks_encoder(ctx))
        return tasks

    def _tasks_encoder(self, ctx: RunContext) -> dict[str, Any]:
        """The encoder the tasks run, chosen once here by the coordinator (see encoder_choice): the fast
        encoder's sample is taken from the clean parts' lines that stay, in input order (the sample a
        one-process run takes), and checked before any task runs; the record goes into the plan, and holds
        for the stage's tasks until the plan is written again (a resumed run keeps it)."""
        cfg = ctx.config
        choice = choose_encoder(tokenizer_for(ctx, self.lang), cfg.run.encoder, check_docs=cfg.run.encoder_check_docs,
                                seed=cfg.run.seed)
        if choice.sample is not None:
            assert ctx.parts is not None
            for chunk in ctx.parts.chunks(self.lang):
                choice.sample.observe(chunk)
            if not choice.check(cfg.run.workers):
                choice = choice.fallback()
                ctx.summary.warn(f"{choice.why_reference}: encoded with {choice.reference.name} instead")  # type: ignore[union-attr]
        return choice.record()

    def run_task(self, ctx: RunContext, index: int, workers: int) -> dict[str, Any]:
        """Task ``index``: clean part ``index`` as a part id store, with its counts and unknown surfaces."""
        lang = self.lang
        if not model_path(ctx, lang).exists():
            raise TokenmillError(
                f"encode task {index}: the tokenizer is not there yet ({model_path(ctx, lang)}); run the plan, "
                "clean and tokenizer phases first (tokenmill prepare ... --phase tokenizer)"
            )
        tasks = ctx.folder.task_set(self.name, self.key(ctx))
        details = tasks.plan()

        def body(folder: Path, attempt: int) -> dict[str, Any]:
            parts = clean_parts(ctx, int(details["tasks"]))
            started = time.perf_counter()
            tokenizer, used = planned_encoder(tokenizer_for(ctx, lang), details.get("encoder"))
            counts = IdCounts(tokenizer.vocab_size)
            table = encode_lines(ctx, lang, parts.part_chunks(index, lang), folder / IDS, threads=workers,
                                 crash_name=f"{self.name}#{index}", counts=counts, tokenizer=tokenizer)
            counts.save(folder / COUNTS)
            write_json(folder / UNKNOWN, table or {})
            return task_record(started, int(details["lines"][index]), attempt, encoder=used)

        return tasks.run_once(index, body)

    def merge(self, ctx: RunContext, tasks: TaskSet) -> Outputs:
        """Record the tasks' parts as the stage's output (they are not joined: the dictionary sums their
        counts, binarize runs on each), with the split's table of unknown surfaces as one process numbers them."""
        tasks.records()
        started = time.perf_counter()
        vocab_size = tokenizer_for(ctx, self.lang).vocab_size
        table: dict[str, list[int]] = {}
        outputs: list[Path] = []
        for i in range(tasks.count):
            folder = tasks.folder(i)
            renumbered_unknowns(table, part_table(folder), vocab_size)
            outputs += [folder / f"{IDS}.bin", folder / f"{IDS}.idx", folder / COUNTS, folder / UNKNOWN]
            if splits_sentences(ctx.config):
                outputs += sentence_files(folder / IDS)
        if keeps_unknown_surfaces(ctx.config):
            path = ctx.folder.unknown_path("train", self.lang)
            write_json(path, table)
            outputs.append(path)
        ctx.merge_seconds[tasks.stage] = round(time.perf_counter() - started, 3)
        encoder = tasks.plan().get("encoder")
        used = sorted({record.get("encoder", "reference") for record in tasks.records()})
        if encoder is not None and used != [encoder["encoder"]]:
            encoder = {**encoder, "tasks_ran": used}  # a task's machine lacked the fast encoder: same ids
        return outputs, {"parts": tasks.count, "encoder": encoder}


def planned_encoder(reference: Tokenizer, record: dict[str, Any] | None) -> tuple[Tokenizer, str]:
    """What an encode task runs, as its plan's encoder record says (the coordinator's check proved the fast
    encoder on the stage's sample), and its name. A task whose machine cannot build the fast encoder (not
    installed there) runs the reference library: the same ids, and its task record says so."""
    if record is None or record.get("encoder", "reference") == "reference":
        return reference, "reference"
    try:
        fast = fast_encoder(reference)
    except Unsupported:
        return reference, "reference"
    return fast, fast.library


def read_chunks(ctx: RunContext, source: Source | PartsSource) -> dict[str, int]:
    """How the encode stage reads ``source``: ``--chunk-lines`` items a chunk, fewer when the files' average
    item is long (LM documents), so that a chunk holds about :data:`READ_CHUNK_BYTES` of input whatever the
    corpus size (65,536 documents of 20 kB would be 1.3 GB of text at once). Chunks change no output."""
    if not isinstance(source, Source):
        return {}
    items, size = source.scan(), input_bytes(source)
    if not items or not size:
        return {}
    return {"chunk_lines": byte_bounded_lines(ctx.config.run.chunk_lines, items, size, READ_CHUNK_BYTES)}


def encodes_in_workers(ctx: RunContext, source: Source | PartsSource) -> bool:
    """Whether the encode stage runs the tokenizer on worker processes that read their own ranges of the
    cleaned ``source``: several workers, a backend that gains from it, a plain file to seek in (not the
    clean tasks' parts), and more than one range of lines (not with --split-sentences: see encode_lines)."""
    return (ctx.config.run.workers > 1 and not splits_sentences(ctx.config)
            and backend_name(ctx.config) in PROCESS_BACKENDS and forks()
            and isinstance(source, Source) and reads_in_workers(source)
            and source.scan() > encode_workers.RANGE_LINES)


def encode_lines(
    ctx: RunContext, lang: str, chunks: Iterator[list[str]], prefix: Path, *, threads: int,
    bar: tqdm | None = None, crash_name: str = "encode", counts: IdCounts | None = None,
    tokenizer: Tokenizer | None = None, writer: SplitWriter | None = None,
) -> dict[str, list[int]] | None:
    """Encode chunks of lines into an int32 work-id store at ``prefix`` (or into ``writer``, the stores
    themselves, when given; and into ``counts``, the work ids' bincount, when given) with ``tokenizer``
    (default: ``lang``'s); returns the unknown surfaces' table (surface -> [work id, count]) when they are kept
    (fairseq fidelity), else None. With --split-sentences each line is encoded as its sentences and their
    lengths go to the sentence-lengths store beside it."""
    tokenizer = tokenizer_for(ctx, lang) if tokenizer is None else tokenizer
    surfaces = UnknownSurfaces(tokenizer) if keeps_unknown_surfaces(ctx.config) else None
    step = sentence_step(ctx.config)

    per_thread = threads > 1 and getattr(tokenizer, "batch_per_thread", False)  # one call per thread, `threads`
    calls = 1 if per_thread else threads  # at once (the fast encoder), else each call spread over `threads`

    def encoded(batch: tuple[list[str], bool]) -> tuple[int, bool, np.ndarray, np.ndarray, Found | None, Any]:
        lines, chunk_ends = batch
        sentences = None
        if step is not None:
            flat, lengths, *sentences = step.encode(tokenizer, lines, calls)
        else:
            flat, lengths = tokenizer.encode_batch(lines, num_threads=calls)
        found = None if surfaces is None else surfaces.find(lines, flat, lengths, threads)
        return len(lines), chunk_ends, flat, lengths, found, sentences

    overlap = OVERLAPPED_BATCHES if threads > 1 and getattr(tokenizer, "overlaps_batches", False) else 1
    overlap = threads if per_thread else overlap
    if threads > 1 and overlap == 1:  # a library that spreads one call over its threads: the next chunk is read
        chunks = prefetched(chunks)  # (and parsed, sampled) on a thread while this one is encoded
    store = writer if writer is not None else IndexedWriter(prefix, dtype=np.dtype(np.int32))
    with store as writer, (SentenceLengths(prefix) if step is not None else nullcontext()) as sentence_lengths:
        for count, chunk_ends, flat, lengths, found, sentences in ordered_map(encoded, chunk_batches(chunks),
                                                                              overlap):
            if surfaces is not None and found is not None:
                flat = surfaces.assign(flat, found)  # work ids in input order
            writer.add_items(flat, lengths)
            if sentences is not None:
                sentence_lengths.add(*sentences)
            if counts is not None:
                counts.add(flat)
            if bar is not None:
                bar.update(count)
            if chunk_ends:
                crash_point(f"{crash_name}:midway")
    return None if surfaces is None else surfaces.table()


def encode_words(chunks: Iterable[list[str]], prefix: Path, bar: tqdm | None, crash_name: str) -> list[str]:
    """Whitespace-tokenized lines as work ids in an int32 store at ``prefix``: each word's id is its place in
    the order of first appearance (the list returned). The text is split once; counting the dictionary and
    binarizing then work on the ids (a bincount, one lookup array)."""
    table = FirstSeen()
    with IndexedWriter(prefix, dtype=np.dtype(np.int32)) as writer:
        for lines in chunks:
            for batch in text_batches(lines, ENCODE_BATCH_CHARS):  # bounds the words held as Python strings
                writer.add_items(*word_ids(batch, table))
            if bar is not None:
                bar.update(len(lines))
            crash_point(f"{crash_name}:midway")
    return list(table)


def chunk_batches(chunks: Iterable[list[str]]) -> Iterator[tuple[list[str], bool]]:
    """The tokenizer calls of a stream of chunks (:func:`text_batches`), each with whether it ends its chunk."""
    for chunk in chunks:
        batches = list(text_batches(chunk, ENCODE_BATCH_CHARS))
        for i, lines in enumerate(batches):
            yield lines, i == len(batches) - 1
