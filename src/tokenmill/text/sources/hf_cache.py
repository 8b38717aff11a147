"""Folders of the ``datasets`` library's cache: what ``load_dataset`` writes (``~/.cache/huggingface/datasets/
{builder}/{config}/{version}/{hash}/``): ``dataset_info.json`` and one Arrow stream per split, or several
shards of it (``{builder}-{split}.arrow``, ``{builder}-{split}-00000-of-00004.arrow`` ...).

Read without importing ``datasets``: the split's files are read as format ``arrow``, shards in their order.
A folder of one split is that split; a folder of several is one error that lists them and gives the exact
files to pass instead (a glob of one split's shards).
"""

from __future__ import annotations

import json
import os
import re

from tokenmill.errors import TokenmillError

INFO = "dataset_info.json"
STATE = "state.json"  # a save_to_disk folder (see hf_dataset), not a cache folder
_SHARD = re.compile(r"-(\d{5})-of-(\d{5})$")


def is_cache_folder(path: str) -> bool:
    """Whether ``path`` is a folder of the ``datasets`` cache: its info file and Arrow files, and not a
    ``save_to_disk`` folder."""
    if not os.path.isfile(os.path.join(path, INFO)) or os.path.isfile(os.path.join(path, STATE)):
        return False
    return any(name.endswith(".arrow") for name in os.listdir(path))


def _splits(folder: str) -> list[str]:
    """The split names ``dataset_info.json`` lists."""
    path = os.path.join(folder, INFO)
    try:
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError) as error:
        raise TokenmillError(f"{path}: cannot read it as JSON ({error}); the cache folder is damaged") from None
    splits = info.get("splits") if isinstance(info, dict) else None
    if not isinstance(splits, dict) or not splits:
        raise TokenmillError(f"{path}: lists no splits; is this a folder of the datasets cache?")
    return sorted(map(str, splits))


def _split_of(stem: str, splits: list[str]) -> tuple[str, int, int] | None:
    """(split, shard, shards) of an Arrow file's name without ``.arrow``, or None when it names no split."""
    shard = _SHARD.search(stem)
    base = stem[: shard.start()] if shard else stem
    for split in splits:
        if base.endswith(f"-{split}"):
            return (split, int(shard.group(1)), int(shard.group(2))) if shard else (split, 0, 1)
    return None


def split_files(folder: str) -> dict[str, list[str]]:
    """Split -> its Arrow files in shard order (every shard present)."""
    splits = _splits(folder)
    found: dict[str, list[tuple[int, int, str]]] = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".arrow") and (where := _split_of(name[: -len(".arrow")], splits)):
            found.setdefault(where[0], []).append((where[1], where[2], os.path.join(folder, name)))
    files: dict[str, list[str]] = {}
    for split, shards in found.items():
        shards.sort()
        count = shards[0][1]
        if [s[0] for s in shards] != list(range(count)) or any(s[1] != count for s in shards):
            raise TokenmillError(f"{folder}: split {split} has shards {[s[0] for s in shards]} of {count}; the "
                                 "cache folder is incomplete: load the dataset again")
        files[split] = [s[2] for s in shards]
    if not files:
        raise TokenmillError(f"{folder}: no Arrow file names a split of {INFO} ({', '.join(splits)})")
    return files


def cache_files(folder: str) -> list[str]:
    """The Arrow files of the folder's one split (several splits: one error naming the files of each)."""
    files = split_files(folder)
    if len(files) == 1:
        return next(iter(files.values()))
    choices = "; ".join(f"{split}: '{_pattern(paths)}'" for split, paths in sorted(files.items()))
    raise TokenmillError(f"{folder}: a datasets cache folder with splits {', '.join(sorted(files))}; give one "
                         f"split's files as the input ({choices})")


def _pattern(paths: list[str]) -> str:
    """The glob of one split's files (its one file, or its shards)."""
    if len(paths) == 1:
        return paths[0]
    first = paths[0][: -len(".arrow")]
    shard = _SHARD.search(first)
    assert shard is not None
    return f"{first[: shard.start()]}-*-of-{shard.group(2)}.arrow"


__all__ = ["cache_files", "is_cache_folder", "split_files"]
