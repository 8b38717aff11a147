"""The encode stage's output as the later stages read it: work-id stores (train's parts when its encode
stage ran as tasks), the words or unknown surfaces behind the work ids, the piece filters' mask."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from tokenmill.prepare.encoded_parts import IDS
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.sentence_split import sentence_key
from tokenmill.prepare.sequential import item_blocks, npy_blocks
from tokenmill.prepare.stages.cleaned import clean_plan
from tokenmill.prepare.stages.tokenizer import model_path
from tokenmill.prepare.state import fingerprint
from tokenmill.prepare.tokenizing import keeps_unknown_surfaces, load_settings, piece_filter, splits_words
from tokenmill.store.index_file import read_header
from tokenmill.store.manifest import file_checksum

ITEMS_PER_BLOCK = 1 << 16  # items per block read from a work-id store: bounds the temporary id arrays...
IDS_PER_BLOCK = 1 << 22  # ...and ids per block on average (16 MB as int32): 65,536 LM documents are ~50M ids


def encode_key(ctx: RunContext, split: str, lang: str) -> str:
    """The key of ``encode.{split}.{lang}``: the cleaned text's key, the model's bytes and its settings."""
    if splits_words(ctx.config):
        return fingerprint("encode-words", clean_plan(ctx, split).key)
    return fingerprint("encode", clean_plan(ctx, split).key, file_checksum(model_path(ctx, lang)),
                       load_settings(ctx.config), keeps_unknown_surfaces(ctx.config), *sentence_key(ctx.config))


def split_words(ctx: RunContext, split: str, lang: str) -> list[str]:
    return json.loads(ctx.folder.words_path(split, lang).read_text(encoding="utf-8"))


def unknown_surfaces(ctx: RunContext, split: str, lang: str) -> dict[str, list[int]]:
    path = ctx.folder.unknown_path(split, lang)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def encoded_prefixes(ctx: RunContext, split: str, lang: str) -> list[Path]:
    """The id stores of one split and side, in order: train's parts when its encode stage was cut into
    tasks, else the one joined store."""
    if split == "train" and lang in ctx.id_parts:
        return [folder / IDS for folder in ctx.id_parts[lang]]
    return [ctx.folder.ids_prefix(split, lang)]


def keep_file(ctx: RunContext, split: str) -> Path | None:
    """The piece filters' mask of a split (None: every encoded item is kept)."""
    path = ctx.folder.keep_path(split)
    if piece_filter(ctx.config) is None or not path.exists() or f"pieces.{split}" not in ctx.keys:
        return None
    return path


def items_per_block(prefix: Path) -> int:
    """Items per block of the work-id store at ``prefix``: :data:`ITEMS_PER_BLOCK`, fewer when its items hold
    more than :data:`IDS_PER_BLOCK` / :data:`ITEMS_PER_BLOCK` ids on average (long documents), so that a block's
    arrays stay near :data:`IDS_PER_BLOCK` ids whatever the corpus (the blocks' cut changes no output)."""
    _, dtype, items, _ = read_header(Path(f"{prefix}.idx"))
    ids = Path(f"{prefix}.bin").stat().st_size // dtype.itemsize
    return int(min(ITEMS_PER_BLOCK, max(1, IDS_PER_BLOCK * items // max(ids, 1))))


def encoded_blocks(ctx: RunContext, split: str, lang: str) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(work ids as stored: int32, int64 lengths) of the kept items of one split and side, block by block,
    read with plain reads (no memory map: the process's memory must not grow with the corpus)."""
    path = keep_file(ctx, split)
    prefix = ctx.folder.ids_prefix(split, lang)
    items = items_per_block(prefix)
    keep = None if path is None else npy_blocks(path, items)
    for block, sizes in item_blocks(prefix, items):
        if keep is not None:
            kept = next(keep)
            block, sizes = block[np.repeat(kept, sizes)], sizes[kept]
        yield block, sizes
