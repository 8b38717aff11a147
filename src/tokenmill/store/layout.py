"""The on-disk names of a prepared data directory, spelled in one place.

Translation stores follow fairseq-preprocess: ``{split}.{src}-{tgt}.{lang}`` with
``dict.{lang}.txt``; monolingual stores follow fairseq's language-model layout (what
``fairseq-preprocess --only-source`` feeds to ``--task language_modeling``): ``{split}`` with
``dict.txt``. Shards are ``shardNNN/`` folders (fairseq's ``data1:data2`` paths, Open-NLLB's
``data_bin/shardNNN``). Writers (prepare) and readers (data, commands) build names here only.
"""

from __future__ import annotations

import re
from pathlib import Path

SHARD_GLOB = "shard[0-9][0-9][0-9]"
SHARED_DICT = "dict.txt"
_SHARD = re.compile(r"shard(\d{3})")


def store_name(split: str, src: str, tgt: str | None, lang: str) -> str:
    """``{split}.{src}-{tgt}.{lang}`` for one side of a pair; ``{split}`` for monolingual data."""
    return split if not tgt else f"{split}.{src}-{tgt}.{lang}"


def megatron_name(output_prefix: str, key: str) -> str:
    """Megatron's ``tools/preprocess_data.py`` output: ``{output_prefix}_{key}_document``."""
    return f"{output_prefix}_{key}_document"


def align_name(split: str, src: str, tgt: str) -> str:
    """fairseq's word-alignment store: ``{split}.align.{src}-{tgt}``."""
    return f"{split}.align.{src}-{tgt}"


def dict_name(lang: str | None) -> str:
    """``dict.{lang}.txt`` for a side of a pair; ``dict.txt`` for monolingual or shared dictionaries."""
    return f"dict.{lang}.txt" if lang else SHARED_DICT


def shard_dir(index: int) -> str:
    """``shardNNN`` (three digits, from 0)."""
    return f"shard{index:03d}"


def shard_index(name: str) -> int | None:
    """The number of a ``shardNNN`` folder name, else None."""
    match = _SHARD.fullmatch(name)
    return int(match.group(1)) if match else None


def dropped_path(root: str | Path, split: str, direction: str | None = None) -> Path:
    """Where prepare keeps the sample of what cleaning dropped in one split (of one direction):
    ``.work/dropped/[{direction}/]{split}.json`` (work files: not data, not in the manifest)."""
    base = Path(root) / ".work" / "dropped"
    return (base / direction / f"{split}.json") if direction else (base / f"{split}.json")
