"""Stage ``provenance.{split}``: beside every store of a split, the map from its items to input file and line.

The map starts from the input item numbers of what the clean stage kept (one process: the numbers file it
writes beside the cleaned text; as tasks: each part's numbers less its ``gone`` mask, the one mask through
which every cross-task drop such as dedup reaches the parts; text read as input: every item). The piece
filters' keep mask (``pieces.{split}``) applies next, then the stores cut the numbers where their items end
(shards). Nothing here depends on the task count, engine or workers: the map is the same bytes for all.

A separate stage with its own key, after ``binarize``: a directory prepared before maps existed keeps its
stage keys and bytes, and a re-run only adds the maps (its clean stage wrote no numbers file: they are
made again by one cleaning pass that writes nothing else). Not made for blank-line documents (their items
are counted file by file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.prepare.clean_parts import load_gone
from tokenmill.prepare.config import PrepareConfig
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.stages.base import Outputs, Stage
from tokenmill.prepare.stages.binarize import output_prefix
from tokenmill.prepare.stages.clean import NAME as CLEAN_TRAIN
from tokenmill.prepare.stages.clean import NUMBERS_RAW
from tokenmill.prepare.stages.cleaned import clean_chunk_lines, clean_plan, leakage_filter, open_inputs, reads_input
from tokenmill.prepare.stages.encoded import keep_file
from tokenmill.prepare.state import fingerprint
from tokenmill.store import IndexedDataset
from tokenmill.store.layout import provenance_path
from tokenmill.store.provenance import InputTable, write_provenance
from tokenmill.text import Cleaner


def makes_provenance(config: PrepareConfig) -> bool:
    """Whether the run's items are numbered over the split's inputs (not for blank-line documents)."""
    return config.inputs.documents == "line"


class ProvenanceStage(Stage):
    """``provenance.{split}`` (see the module's docstring)."""

    def __init__(self, split: str) -> None:
        self.split = split
        self.name = f"provenance.{split}"

    def key(self, ctx: RunContext) -> str:
        split = self.split
        upstream = [ctx.keys[f"binarize.{split}.{lang}"] for lang in ctx.config.langs]
        return fingerprint("provenance", 1, ctx.keys[f"clean.{split}"], upstream)

    def run(self, ctx: RunContext) -> Outputs:
        split = self.split
        table = input_table(ctx, split)
        numbers = kept_numbers(ctx, split, table)
        keep = keep_file(ctx, split)
        if keep is not None:  # the piece filters' mask over the encoded (= cleaned) items
            numbers = numbers[np.load(keep, allow_pickle=False)]
        outputs: list[Path] = []
        for lang in ctx.config.langs:
            outputs += write_maps(ctx, split, lang, numbers, table)
        read = np.asarray(table.counts, dtype=np.int64)
        kept = np.bincount(table.locate(numbers)[0], minlength=len(read)) if len(read) else read
        rows = [{"file": name, "read": int(r), "kept": int(k)} for name, r, k in zip(table.files, read, kept,
                                                                                    strict=True)]
        return outputs, {"inputs": rows, "unit": table.unit}

    def after(self, ctx: RunContext, info: dict[str, Any]) -> None:
        ctx.split_info(self.split)["inputs"] = {"unit": info["unit"], "files": info["inputs"]}


def input_table(ctx: RunContext, split: str) -> InputTable:
    """The split's input files in order (pairs of files for a parallel corpus in two files) and the items
    read from each (the clean stage's count, or its task plan's index, else counted now)."""
    plan = clean_plan(ctx, split)
    files: list[Any] = list(plan.files) if plan.tgt_files is None else [
        [src, tgt] for src, tgt in zip(plan.files, plan.tgt_files, strict=True)]
    source = open_inputs(ctx, plan.files, plan.tgt_files)
    counts = recorded_input_counts(ctx, split)
    if counts is None and split == "train" and ctx.parts is not None:
        source.restore_index(ctx.folder.task_set(CLEAN_TRAIN, plan.key).plan()["index"])
    if counts is None:
        counts = source.file_counts
    return InputTable(files, [int(c) for c in counts], source.unit)


def recorded_input_counts(ctx: RunContext, split: str) -> list[int] | None:
    """The items per input file as the stage that read the inputs recorded them: the clean stage, or the
    encode stage when it read the input as it is (:func:`reads_input`); None when neither did (a directory
    of an earlier release: counted again)."""
    names = [f"clean.{split}"] + [f"encode.{split}.{lang}" for lang in ctx.config.langs]
    for name in names:
        record = ctx.stages.done(ctx.prefix + name, ctx.keys[name]) if name in ctx.keys else None
        if record is not None and record["info"].get("input_counts") is not None:
            return record["info"]["input_counts"]
    return None


def kept_numbers(ctx: RunContext, split: str, table: InputTable) -> np.ndarray:
    """0-based input item numbers of the items the clean stage kept, in order."""
    total = int(sum(table.counts))
    options = ctx.read_options
    skips = "skip" in (options.on_malformed, options.on_invalid_utf8)
    if reads_input(ctx, split) and not skips:  # nothing dropped: every item as read
        return np.arange(total, dtype=np.int64)
    if split == "train" and ctx.parts is not None:  # the tasks' parts, each less its gone mask
        parts = [np.delete(np.fromfile(folder / NUMBERS_RAW, dtype="<i8"), load_gone(folder))
                 for folder in ctx.parts.folders]
        return np.concatenate(parts).astype(np.int64) - 1 if parts else np.zeros(0, np.int64)
    path = ctx.folder.numbers_path(split)
    if path.exists() and not reads_input(ctx, split):
        return np.fromfile(path, dtype="<i8").astype(np.int64) - 1
    return numbering_pass(ctx, split)


def numbering_pass(ctx: RunContext, split: str) -> np.ndarray:
    """The kept items' numbers by cleaning the inputs again in one process, writing nothing: for a clean stage
    recorded before it wrote its numbers (a directory of an earlier release), and for input read as it is
    under a policy that skips bad items (the skipped ones have numbers but no item)."""
    plan = clean_plan(ctx, split)
    source = open_inputs(ctx, plan.files, plan.tgt_files)
    cleaner = Cleaner(plan.config, leakage_filter(ctx, split), sample_size=0)
    found = [cleaner(chunk).numbers for chunk in source.chunks(chunk_lines=clean_chunk_lines(ctx.config, source))]
    numbers = [n for n in found if n is not None]
    return np.concatenate(numbers).astype(np.int64) - 1 if numbers else np.zeros(0, np.int64)


def store_items(prefix: Path) -> int:
    """Items of a written store as prepare numbered them: documents where the store has them (a Megatron
    document without a sequence still counts), else sequences."""
    store = IndexedDataset(prefix, check_pointers=False)
    documents = store.document_indices
    return len(documents) - 1 if documents is not None else len(store)


def write_maps(ctx: RunContext, split: str, lang: str, numbers: np.ndarray, table: InputTable) -> list[Path]:
    """One map per store of ``split`` and ``lang`` (each shard gets its consecutive slice)."""
    shards = int(ctx.split_info(split).get("langs", {}).get(lang, {}).get("shards", 0))
    prefixes = [output_prefix(ctx, split, lang, k) for k in range(shards)] if shards else [
        output_prefix(ctx, split, lang)]
    sizes = [store_items(prefix) for prefix in prefixes]
    if sum(sizes) != len(numbers):
        raise TokenmillError(
            f"stage provenance.{split}: the stores of {lang} hold {sum(sizes)} items but cleaning and the filters "
            f"kept {len(numbers)}; delete {ctx.root / '.state'} and run prepare again")
    cuts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return [write_provenance(provenance_path(prefix), numbers[cuts[i]:cuts[i + 1]], table)
            for i, prefix in enumerate(prefixes)]
