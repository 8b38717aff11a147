"""Stage ``binarize.{split}.{lang}``: work ids mapped through the dictionary (one vectorized lookup), the end
token appended, written as ``{split}.{src}-{tgt}.{lang}.bin/.idx`` (train optionally in ``shardNNN/``), or the
tokenizer's own ids as they are. As tasks (train's encoded parts, inside the coordinator's phase): task i
maps part i to the output's ids, drops what the piece filters dropped and appends the end tokens; the merge
copies the parts into the stores (shards cut at the same items), the writer deriving pointers from sizes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill._core.ordered import prefetched
from tokenmill.errors import TokenmillError
from tokenmill.prepare.encoded_parts import (
    IDS,
    binarize_part,
    mask_slice,
    part_lengths,
    part_table,
    surfaces_in_order,
)
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.run.tasking import fresh_plan, run_tasks, task_record
from tokenmill.prepare.sentence_binarize import binarize_sentence_part, merge_sentence_parts, write_sentence_store
from tokenmill.prepare.sentence_split import splits_sentences
from tokenmill.prepare.stages.base import Outputs, TaskedStage
from tokenmill.prepare.stages.cleaned import train_tasked
from tokenmill.prepare.stages.dictionary import end_token
from tokenmill.prepare.stages.encoded import encoded_blocks, keep_file, split_words, unknown_surfaces
from tokenmill.prepare.stages.split_store import Block, SplitWriter, write_split
from tokenmill.prepare.stages.tokenizer import model_path, tokenizer_for
from tokenmill.prepare.state import fingerprint
from tokenmill.prepare.tasks import TaskSet
from tokenmill.prepare.tokenizing import backend_name, piece_filter, piece_lookup, splits_words, stores_tokenizer_ids
from tokenmill.store.format import Layout, token_dtype
from tokenmill.store.index_file import item_blocks
from tokenmill.store.layout import megatron_name, store_name
from tokenmill.store.manifest import file_checksum
from tokenmill.store.meaning import FAIRSEQ, T2T, TOKENIZER, store_meaning
from tokenmill.vocab.dictionary import Dictionary

PART = "part"
COPY_ITEMS = 1 << 16  # items per block copied from a binarized part into the stores
__all__ = ["BinarizeStage", "Block", "SplitWriter", "binarize_key", "binarized_in_encode", "binarized_in_two_passes",
           "output_prefix", "write_split"]


def empty_documents(ctx: RunContext) -> bool:
    """Whether a document without ids is stored as a document without a sequence (no EOD either), as
    Megatron's ``preprocess_data`` does: with its flags (``--output-prefix``); else it is an item of its own."""
    return bool(ctx.config.megatron.output_prefix) and ctx.config.output.layout == "megatron"


def output_prefix(ctx: RunContext, split: str, lang: str, shard: int | None = None) -> Path:
    """The staged store of one side (names from :mod:`tokenmill.store.layout`)."""
    cfg = ctx.config
    if cfg.megatron.output_prefix:  # Megatron's preprocess_data names
        name = megatron_name(os.path.basename(cfg.megatron.output_prefix), cfg.inputs.source_key or "text",
                             "sentence" if splits_sentences(cfg) else "document")
    else:
        name = store_name(split, cfg.inputs.source_lang, cfg.inputs.target_lang, lang)  # type: ignore[arg-type]
    return ctx.folder.staged(name, shard)


def binarized_in_encode(ctx: RunContext, split: str) -> bool:
    """Whether the encode stage writes the split's stores itself as it encodes (one pass: no work-id store
    written and read back), and this stage only takes them over: the tokenizer's own ids are stored (no
    dictionary to count first), every encoded item is kept (no piece filters), no sentences, one process (not
    the encode tasks' parts), not a direction of a many-direction run (whose vocabulary is the run's)."""
    cfg = ctx.config
    return (stores_tokenizer_ids(cfg) and not splits_words(cfg) and not splits_sentences(cfg)
            and piece_filter(cfg) is None and ctx.shared is None and not (split == "train" and train_tasked(ctx)))


def store_settings(ctx: RunContext, split: str, lang: str) -> list[Any]:
    """What the stores depend on besides the work ids (the stage's key; the encode stage's too when it
    writes the stores, see :func:`binarized_in_encode`)."""
    cfg = ctx.config
    own_ids = stores_tokenizer_ids(cfg)
    vocab_path = model_path(ctx, lang) if own_ids else ctx.folder.dict_path(None if cfg.monolingual else lang)
    vocab = ctx.shared.fingerprint if ctx.shared is not None else file_checksum(vocab_path)
    return [vocab, cfg.output.layout, cfg.output.shard_size, cfg.tokenizer.name, cfg.inputs.source_lang,
            cfg.inputs.target_lang, own_ids, end_token(ctx, ctx.dictionaries.get(lang), lang),
            cfg.megatron.output_prefix,
            # a folder binarized before empty documents were written as Megatron does
            *(["empty documents as preprocess_data"] if empty_documents(ctx) else [])]


def binarize_key(ctx: RunContext, split: str, lang: str, encoded: str) -> str:
    """The binarize stage's key over the encoded text's key ``encoded``."""
    return fingerprint("binarize", [encoded, ctx.keys.get(f"pieces.{split}")], *store_settings(ctx, split, lang))


def binarized_in_two_passes(ctx: RunContext, split: str, lang: str, encoded: str) -> bool:
    """Whether the folder holds this side's stores as an earlier version wrote them, in two passes (a work-id
    store under the encode key ``encoded``, then the binarize stage over it), both up to date: such a folder
    stays up to date, not encoded again to be written in one pass (the same bytes)."""
    return (ctx.done(f"encode.{split}.{lang}", encoded)
            and ctx.done(f"binarize.{split}.{lang}", binarize_key(ctx, split, lang, encoded)))


def store_writer(ctx: RunContext, split: str, lang: str) -> SplitWriter:
    """The writer of one side's stores of the tokenizer's own ids (what the encode stage writes into when
    :func:`binarized_in_encode`)."""
    dtype, unk = dtype_and_unk(ctx, lang, None)
    return SplitWriter(ctx, split, lambda shard: output_prefix(ctx, split, lang, shard), dtype,
                       eos=end_token(ctx, None, lang), unk=unk, empty_documents=empty_documents(ctx))


def dtype_and_unk(ctx: RunContext, lang: str, dictionary: Dictionary | None) -> tuple[np.dtype, int]:
    """The stores' id dtype and the unknown id (-1: none) of one side."""
    if dictionary is None:  # the tokenizer's own ids (T2T: <EOS>=1 appended as T2T does)
        tokenizer = tokenizer_for(ctx, lang)
        return token_dtype(tokenizer.vocab_size), tokenizer.special_ids.get("unk", -1)
    return token_dtype(len(dictionary)), dictionary.unk_index


def lookup_of(ctx: RunContext, lang: str, dictionary: Dictionary) -> np.ndarray:
    """Tokenizer id -> dictionary id (one array; a direction of a many-direction run shares the run's)."""
    return ctx.shared.lookup if ctx.shared is not None else piece_lookup(tokenizer_for(ctx, lang), dictionary)


class BinarizeStage(TaskedStage):
    """``binarize.{split}.{lang}`` (see the module's docstring)."""

    def __init__(self, split: str, lang: str) -> None:
        self.split, self.lang = split, lang
        self.name = f"binarize.{split}.{lang}"

    def key(self, ctx: RunContext) -> str:
        split, lang = self.split, self.lang
        return binarize_key(ctx, split, lang, ctx.keys.get(f"encode.{split}.{lang}", ctx.keys[f"clean.{split}"]))

    def tasked(self, ctx: RunContext) -> bool:
        return self.split == "train" and self.lang in ctx.id_parts

    def run(self, ctx: RunContext) -> Outputs:
        split, lang = self.split, self.lang
        dictionary = ctx.dictionaries.get(lang)
        eos = end_token(ctx, dictionary, lang)
        dtype, unk = self._dtype_unk(ctx, dictionary)
        if self.tasked(ctx):
            tasks = self.plan(ctx)
            run_tasks(ctx, tasks, in_phase=True)
            return self.merge(ctx, tasks)
        if binarized_in_encode(ctx, split):
            return self._written_by_encode(ctx)
        if splits_sentences(ctx.config):  # Megatron's --split-sentences: its own writer (one store, own ids)
            return write_sentence_store(ctx, split, lang, output_prefix(ctx, split, lang), end=eos, unk=unk,
                                        dtype=dtype, crash_name=self.name)
        return write_split(
            ctx, split, lambda shard: output_prefix(ctx, split, lang, shard), dtype,
            # the next block is read and mapped on a thread while this one is written (both let go of the GIL)
            prefetched(self._id_blocks(ctx, dictionary)), eos=eos, unk=unk,
            crash_name=self.name, empty_documents=empty_documents(ctx),
        )

    def _dtype_unk(self, ctx: RunContext, dictionary: Dictionary | None) -> tuple[np.dtype, int]:
        return dtype_and_unk(ctx, self.lang, dictionary)

    def _written_by_encode(self, ctx: RunContext) -> Outputs:
        """The stores the encode stage wrote as it encoded (see :func:`binarized_in_encode`), as its record lists
        them, with the counts it recorded: its key holds this stage's settings, so they are this stage's output."""
        name = f"encode.{self.split}.{self.lang}"
        record = ctx.stages.done(ctx.prefix + name, ctx.keys[name])
        if record is None or "binarized" not in record["info"]:
            raise TokenmillError(f"stage {self.name}: the encode stage's record lists no stores; delete "
                                 f"{ctx.root / '.state'} and run prepare again")
        info = record["info"]["binarized"]
        return [ctx.root / relative for relative in info["outputs"]], {k: v for k, v in info.items() if k != "outputs"}

    def after(self, ctx: RunContext, info: dict[str, Any]) -> None:
        if self.split == "train":
            ctx.folder.task_set(self.name, ctx.keys[self.name]).remove()  # recorded: the parts are copies
        ctx.split_info(self.split).setdefault("langs", {})[self.lang] = info
        self._register(ctx, ctx.dictionaries.get(self.lang), info)

    def _register(self, ctx: RunContext, dictionary: Dictionary | None, info: dict[str, Any]) -> None:
        """What the ids of each written store mean (checked by ``tokenmill verify``)."""
        split, lang = self.split, self.lang
        sharded = ctx.config.output.shard_size
        shards = [output_prefix(ctx, split, lang, k) for k in range(info["shards"])] if sharded else []
        eos = end_token(ctx, dictionary, lang)
        for prefix in shards or [output_prefix(ctx, split, lang)]:
            if dictionary is None:
                tokenizer = tokenizer_for(ctx, lang)
                vocab = model_path(ctx, lang)
                kind = T2T if ctx.config.tokenizer.name == "t2t-subword" else TOKENIZER
                symbol = None if eos is None else tokenizer.id_to_token(eos)
                meaning = store_meaning(vocab.relative_to(ctx.out).as_posix(), kind, tokenizer.vocab_size, eos, symbol,
                                        backend=backend_name(ctx.config))
            else:  # the dictionary copy in the store's own folder: what fairseq reads there
                vocab = prefix.parent / ctx.folder.dict_path(None if ctx.config.monolingual else lang).name
                symbol = dictionary.symbols[eos] if eos is not None else None
                meaning = store_meaning(vocab.relative_to(ctx.out).as_posix(), FAIRSEQ, len(dictionary), eos, symbol)
            ctx.register_store(prefix, meaning)

    def _id_blocks(self, ctx: RunContext, dictionary: Dictionary | None) -> Iterator[Block]:
        """(ids, lengths) blocks of one split and side, end-of-sentence not yet appended."""
        split, lang = self.split, self.lang
        lookup = None
        if splits_words(ctx.config):  # work ids are the split's words in order of appearance
            assert dictionary is not None
            index, unk = dictionary.indices.get, dictionary.unk_index
            words = split_words(ctx, split, lang)
            lookup = np.fromiter((index(word, unk) for word in words), dtype=np.int32, count=len(words))
        elif dictionary is not None:
            base = lookup_of(ctx, lang, dictionary)
            extended = unknown_surfaces(ctx, split, lang)
            lookup = np.concatenate([base, np.full(len(extended), dictionary.unk_index, dtype=np.int64)])
            for surface, (work_id, _) in extended.items():
                lookup[work_id] = dictionary.indices.get(surface, dictionary.unk_index)
            lookup = lookup.astype(np.int32)  # dictionary ids: a block of them is half the int64 size
        for block, sizes in encoded_blocks(ctx, split, lang):
            yield (block if lookup is None else lookup[block]), sizes

    # ---------------------------------------------------------------- as tasks
    def plan(self, ctx: RunContext) -> TaskSet:
        """One task per encoded part of train's side; the plan holds the id lookup, the surfaces' ids, end
        token, unknown id, dtype and layout (every task reads them from it)."""
        lang, dictionary = self.lang, ctx.dictionaries.get(self.lang)
        dtype, unk = self._dtype_unk(ctx, dictionary)
        lookup = surfaces = None
        if dictionary is not None:  # as _id_blocks maps them; each task adds its part's surfaces
            lookup = lookup_of(ctx, lang, dictionary).astype(np.int32).tolist()
            surfaces = {surface: dictionary.indices.get(surface, dictionary.unk_index)
                        for surface in unknown_surfaces(ctx, "train", lang)}
        tasks = ctx.folder.task_set(self.name, self.key(ctx))
        if fresh_plan(ctx, tasks):
            lengths = part_lengths(ctx.id_parts[lang])
            firsts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
            tasks.write_plan(len(lengths), lengths=lengths.tolist(), firsts=firsts.tolist(), lookup=lookup,
                             surfaces=surfaces, end=end_token(ctx, dictionary, lang), unk=unk,
                             dtype=np.dtype(dtype).str, layout=ctx.config.output.layout,
                             keep=keep_file(ctx, "train") is not None, empty_documents=empty_documents(ctx))
        return tasks

    def run_task(self, ctx: RunContext, index: int, workers: int) -> dict[str, Any]:
        """Task ``index``: encoded part ``index`` in the output's ids."""
        tasks = ctx.folder.planned_tasks(self.name)
        details = tasks.plan()
        return tasks.run_once(index, lambda folder, attempt: self._part(ctx, details, index, folder, attempt))

    def _part(self, ctx: RunContext, details: dict[str, Any], index: int, folder: Path, attempt: int) -> dict:
        started = time.perf_counter()
        part = ctx.folder.task_set(f"encode.train.{self.lang}", "").folder(index)
        lookup = None
        if details["lookup"] is not None:  # + the part's unknown surfaces, by their own work ids
            surfaces = details["surfaces"]
            extra = [surfaces[surface] for surface in surfaces_in_order(part_table(part))]
            lookup = np.array(details["lookup"] + extra, dtype=np.int32)
        first, length = int(details["firsts"][index]), int(details["lengths"][index])
        kept = mask_slice(ctx.folder.keep_path("train") if details["keep"] else None, first, first + length)
        if splits_sentences(ctx.config):
            counts = binarize_sentence_part(part / IDS, folder / PART, kept=kept, end=details["end"],
                                            unk=details["unk"], dtype=np.dtype(details["dtype"]),
                                            crash_name=f"{self.name}#{index}")
            return task_record(started, length, attempt, **counts)
        counts = binarize_part(part / IDS, folder / PART, lookup=lookup, kept=kept, end=details["end"],
                               unk=details["unk"], dtype=np.dtype(details["dtype"]), layout=Layout(details["layout"]),
                               crash_name=f"{self.name}#{index}",
                               empty_documents=details.get("empty_documents", False))
        return task_record(started, length, attempt, **counts)

    def merge(self, ctx: RunContext, tasks: TaskSet) -> Outputs:
        """The binarized parts copied in task order into the split's stores (shards cut as one process cuts
        them, pointers from the sizes), with the unknown tokens the tasks counted."""
        records = tasks.records()
        started = time.perf_counter()
        blocks = chain.from_iterable(item_blocks(tasks.folder(i) / PART, COPY_ITEMS) for i in range(tasks.count))
        dtype, _ = self._dtype_unk(ctx, ctx.dictionaries.get(self.lang))
        if splits_sentences(ctx.config):  # the parts hold their documents' sentences: copied as they are
            outputs, info = merge_sentence_parts([tasks.folder(i) / PART for i in range(tasks.count)],
                                                 output_prefix(ctx, "train", self.lang), dtype)
        else:
            outputs, info = write_split(ctx, "train", lambda shard: output_prefix(ctx, "train", self.lang, shard),
                                        dtype, blocks, eos=None, unk=-1, crash_name=self.name,
                                        empty_documents=empty_documents(ctx))
        written = (sum(r["sentences"] for r in records), sum(r["tokens"] for r in records))
        if (info["sentences"], info["tokens"]) != written:
            raise TokenmillError(f"stage {tasks.stage}: the parts hold other counts than their tasks wrote; delete "
                                 f"{tasks.root} and run prepare again")
        unknown = sum(int(r["unk"]) for r in records)
        info.update(unk=unknown, unk_percent=round(100.0 * unknown / info["tokens"], 4) if info["tokens"] else 0.0)
        ctx.merge_seconds[tasks.stage] = round(time.perf_counter() - started, 3)
        return outputs, info
