"""``--split-sentences`` in the binarize stage: the work-id store's documents cut into their sentences with the
sentence-lengths store beside it (:mod:`~tokenmill.prepare.sentence_split`), written in the Megatron layout as
``tools/preprocess_data.py`` writes them: each sentence with ids one sequence, a sentence without ids left out,
the EOD id (``--append-eod``) at the end of a document's last sentence only, and a document without ids a
document without a sequence (its document index repeats). In one process, or as one part per encode task,
the parts then copied into the store (their document indices offset): the same bytes for every task count.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.prepare.crash import crash_point
from tokenmill.prepare.encoded_parts import BLOCK_ITEMS, ended
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.sentence_split import sentences_prefix
from tokenmill.prepare.sequential import item_blocks, npy_blocks
from tokenmill.prepare.stages.base import Outputs
from tokenmill.prepare.stages.encoded import items_per_block, keep_file
from tokenmill.store import IndexedWriter
from tokenmill.store.format import Layout

SentenceBlock = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""(ids, ids per document, ids per sentence, sentences per document) of consecutive documents."""


def aligned_blocks(prefix: Path, items: int, kept: Iterator[np.ndarray] | np.ndarray | None
                   ) -> Iterator[SentenceBlock]:
    """The work-id store at ``prefix`` and its sentence-lengths store, ``items`` documents at a time, less the
    documents the piece filters dropped (``kept``: the mask, whole or in blocks of ``items``)."""
    first = 0
    pairs = zip(item_blocks(prefix, items), item_blocks(sentences_prefix(prefix), items), strict=True)
    for (flat, sizes), (lengths, counts) in pairs:
        if kept is not None:
            if isinstance(kept, np.ndarray):
                mask, first = kept[first : first + len(sizes)], first + len(sizes)
            else:
                mask = next(kept)
            flat, sizes = flat[np.repeat(mask, sizes)], sizes[mask]
            lengths, counts = lengths[np.repeat(mask, counts)], counts[mask]
        yield flat, sizes, lengths, counts


def sentence_blocks(ctx: RunContext, split: str, lang: str) -> Iterator[SentenceBlock]:
    """The kept documents of one split and side with their sentences (the one joined work-id store)."""
    prefix = ctx.folder.ids_prefix(split, lang)
    items = items_per_block(prefix)
    path = keep_file(ctx, split)
    yield from aligned_blocks(prefix, items, None if path is None else npy_blocks(path, items))


def documents_of(block: SentenceBlock, end: int | None, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids with EOD, ids per stored sentence, stored sentences per document) of a block: sentences without ids
    left out, ``end`` after each document that has ids, counted in its last sentence."""
    flat, sizes, lengths, counts = block
    filled = lengths > 0
    document = np.repeat(np.arange(len(counts)), counts)
    per_document = np.bincount(document[filled], minlength=len(counts)).astype(np.int64)
    stored = lengths[filled].astype(np.int64)
    if end is not None:
        flat, _ = ended(flat, sizes, end, dtype, empty_documents=True)
        stored[np.cumsum(per_document)[per_document > 0] - 1] += 1
    return flat, stored, per_document


def write_documents(out: Path, blocks: Iterator[SentenceBlock], *, end: int | None, unk: int, dtype: np.dtype,
                    crash_name: str) -> dict[str, int]:
    """``blocks`` as one Megatron store at ``out``; its sentences, tokens and unknown tokens."""
    sentences = tokens = unknown = 0
    with IndexedWriter(out, layout=Layout.MEGATRON, dtype=dtype) as writer:
        for block in blocks:
            if unk >= 0:
                unknown += int(np.count_nonzero(block[0] == unk))
            flat, stored, per_document = documents_of(block, end, dtype)
            writer.add_documents_of(flat, stored, per_document)
            sentences += len(stored)
            tokens += len(flat)
            crash_point(f"{crash_name}:midway")
    return {"sentences": sentences, "tokens": tokens, "unk": unknown}


def write_sentence_store(ctx: RunContext, split: str, lang: str, out: Path, *, end: int | None, unk: int,
                         dtype: np.dtype, crash_name: str) -> Outputs:
    """The binarize stage in one process: the split's store of sentences at ``out``."""
    counts = write_documents(out, sentence_blocks(ctx, split, lang), end=end, unk=unk, dtype=dtype,
                             crash_name=crash_name)
    return [Path(f"{out}.bin"), Path(f"{out}.idx")], info_of(counts)


def binarize_sentence_part(part: Path, out: Path, *, kept: np.ndarray | None, end: int | None, unk: int,
                           dtype: np.dtype, crash_name: str) -> dict[str, int]:
    """One encode task's part (``part``: its work-id store) as a Megatron store of sentences at ``out``."""
    return write_documents(out, aligned_blocks(part, BLOCK_ITEMS, kept), end=end, unk=unk, dtype=dtype,
                           crash_name=crash_name)


def merge_sentence_parts(parts: list[Path], out: Path, dtype: np.dtype) -> Outputs:
    """The parts' stores copied in order into the store at ``out`` (document indices offset, bytes as they are)."""
    sentences = tokens = 0
    with IndexedWriter(out, layout=Layout.MEGATRON, dtype=dtype) as writer:
        for part in parts:
            writer.merge(part)
        sentences, tokens = len(writer), writer.num_tokens
    return [Path(f"{out}.bin"), Path(f"{out}.idx")], info_of({"sentences": sentences, "tokens": tokens, "unk": 0})


def info_of(counts: dict[str, int]) -> dict[str, Any]:
    """The binarize stage's info (as ``write_split`` gives it) from the store's counts."""
    tokens, unknown = counts["tokens"], counts["unk"]
    return {"sentences": counts["sentences"], "tokens": tokens, "unk": unknown,
            "unk_percent": round(100.0 * unknown / tokens, 4) if tokens else 0.0, "shards": 0}


__all__ = ["aligned_blocks", "binarize_sentence_part", "documents_of", "merge_sentence_parts", "sentence_blocks",
           "write_documents", "write_sentence_store"]
