"""Finding translation directions and their shards on disk (Open-NLLB / fairseq multilingual layout).

A data directory ``data_bin/`` holds ``shard000/``, ``shard001/``, ... (or is itself the only
shard), or the data are given as several directories (fairseq's ``a:b:c``, or a list). Each shard
folder has ``{split}.{src}-{tgt}.{src}.bin/.idx`` and ``{split}.{src}-{tgt}.{tgt}.bin/.idx`` for the
directions it holds. Directions and shards are found from the file names, read back with
:mod:`tokenmill.store.layout` (``manifest.json`` is optional: when it lists directions, a listed one
without files is an error).

Shard rotation follows fairseq (``MultilingualDatasetManager``): direction ``d`` found in ``k_d``
shard folders reads, in data epoch ``e``, the ``((e - 1) mod k_d)``-th of them (fairseq indexes the
first ``k_d`` paths, which is the same when, as prepare writes them, a small direction fills the
first shards). Splits other than the training split are read from the first shard only.
A direction asked for as ``tgt-src`` when only ``src-tgt`` files exist reads those files with the
sides swapped (fairseq's tradition).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tokenmill.errors import ConfigError, FormatError, TokenmillError
from tokenmill.store.layout import (
    SHARED_DICT,
    dict_name,
    pair_prefix,
    parse_direction,
    read_manifest_hints,
    shard_dirs,
    stores_in,
)

DataPaths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
"""One data directory (with or without ``shardNNN/`` folders), fairseq's ``a:b:c``, or a list of folders."""


@dataclass
class DirectionFiles:
    """Where one direction's pairs live: one store prefix per shard, in rotation order."""

    name: str
    """``src-tgt`` as asked for."""
    src: str
    """Source language code."""
    tgt: str
    """Target language code."""
    shards: list[int] = field(default_factory=list)
    """Index (into :attr:`Layout.folders`) of each shard folder holding this direction."""
    prefixes: list[Path] = field(default_factory=list)
    """``{folder}/{split}.{a}-{b}`` per shard (``a-b`` is ``src-tgt``, or ``tgt-src`` when reversed)."""


@dataclass
class Layout:
    """The shard folders of a multilingual data set and the directions found in them."""

    folders: list[Path]
    """Shard folders in rotation order (only the first for non-training splits)."""
    root: Path | None
    """The ``data_bin`` holding ``shardNNN/`` folders or the single data directory; None for ``a:b:c``."""
    split: str
    """Split the directions were found for."""
    directions: list[DirectionFiles]
    """Directions in the order asked for (else sorted by name)."""

    def dictionary_file(self, lang: str) -> Path | None:
        """``dict.{lang}.txt`` (else ``dict.txt``) from the first shard folder, else the root."""
        places = [self.folders[0]] + ([self.root] if self.root is not None else [])
        for name in (dict_name(lang), SHARED_DICT):
            for place in places:
                if (place / name).is_file():
                    return place / name
        return None


def shard_folders(paths: DataPaths) -> tuple[list[Path], Path | None]:
    """The shard folders of ``paths`` in order, and the root directory when there is one."""
    if isinstance(paths, (str, os.PathLike)):
        text = os.fspath(paths)
        if ":" in text and not Path(text).exists():
            listed = [Path(p) for p in text.split(":") if p]
            root = None
        else:
            root = Path(text)
            if not root.is_dir():
                raise TokenmillError(f"{root} is not a directory (expected a prepared multilingual data directory)")
            return (shard_dirs(root) or [root]), root
    else:
        listed = [Path(p) for p in paths]
        root = None
    if not listed:
        raise ConfigError("no data directories given (an empty list or 'a:b:c' string)")
    for folder in listed:
        if not folder.is_dir():
            raise TokenmillError(f"data directory {folder} does not exist (one of the shard paths given)")
    return listed, root


def _scan(folder: Path, split: str) -> dict[tuple[str, str], set[str]]:
    """``{(a, b): {languages with an .idx}}`` for the ``{split}.a-b.lang.idx`` stores in ``folder``.

    Pairs whose codes hold ``-`` (``zh-Hans``) are not directions (``src-tgt`` names split at the one
    ``-``): they are left out, as fairseq's multilingual task cannot name them either."""
    found: dict[tuple[str, str], set[str]] = {}
    for store in stores_in(folder, split):
        if store.src is None or store.tgt is None or "-" in f"{store.src}{store.tgt}{store.lang}":
            continue
        found.setdefault((store.src, store.tgt), set()).add(store.lang or "")
    return found


def manifest_lang_token_format(root: Path | None) -> str | None:
    """The language-token format ``prepare --directions`` recorded (``vocab.lang_token_format``)."""
    return read_manifest_hints(root).lang_token_format


def discover(
    paths: DataPaths,
    split: str = "train",
    directions: Sequence[str] | None = None,
    *,
    first_shard_only: bool | None = None,
) -> Layout:
    """Find ``split``'s directions and their shards under ``paths``.

    ``directions``: the ``src-tgt`` names to use (default: every direction ``manifest.json`` lists
    for ``split``, else every one on disk, sorted). ``first_shard_only`` (default: ``split != "train"``) reads
    only the first shard folder, as fairseq does for valid and test.
    """
    folders, root = shard_folders(paths)
    if first_shard_only is None:
        first_shard_only = split != "train"
    if first_shard_only:
        folders = folders[:1]
    scans = [_scan(folder, split) for folder in folders]
    for folder, found in zip(folders, scans, strict=True):
        _check_both_sides(folder, split, found)
    on_disk = sorted({pair for found in scans for pair in found})
    listed = read_manifest_hints(root).directions_for(split) if directions is None else None
    wanted = _wanted(split, folders, directions, listed, on_disk)
    available = ", ".join(f"{a}-{b}" for a, b in on_disk) or "none"
    where = "manifest.json lists it but it" if listed is not None else "it"
    result = []
    for name in wanted:
        files = _direction_files(name, split, folders, scans)
        if not files.shards:
            src, tgt = files.src, files.tgt
            raise ConfigError(
                f"direction {name}: {where} has no {split} files ({split}.{src}-{tgt}.{src}.bin/.idx and "
                f"{split}.{src}-{tgt}.{tgt}.bin/.idx) in {', '.join(map(str, folders))}; "
                f"directions on disk: {available}"
            )
        result.append(files)
    return Layout(folders, root, split, result)


def _check_both_sides(folder: Path, split: str, found: dict[tuple[str, str], set[str]]) -> None:
    """Refuse a direction of which the folder holds one side only."""
    for (a, b), langs in found.items():
        for lang in (a, b):
            if lang not in langs:
                other = b if lang == a else a
                raise FormatError(
                    f"shard folder {folder}: direction {a}-{b} has {split}.{a}-{b}.{other}.idx but "
                    f"{split}.{a}-{b}.{lang}.bin/.idx is missing (both sides are needed); re-run prepare for "
                    "this shard or remove the direction's files from it"
                )


def _wanted(
    split: str, folders: list[Path], directions: Sequence[str] | None, listed: list[str] | None,
    on_disk: list[tuple[str, str]],
) -> list[str]:
    """The direction names to open: those asked for, else the manifest's, else every one on disk."""
    wanted = list(directions) if directions is not None else listed
    if wanted is None:
        wanted = [f"{a}-{b}" for a, b in on_disk]
    if not wanted:
        raise ConfigError(f"no {split} data in {', '.join(map(str, folders))}: no {split}.src-tgt.lang.idx files")
    if len(set(wanted)) != len(wanted):
        repeated = sorted(n for n in set(wanted) if wanted.count(n) > 1)
        raise ConfigError(f"directions are listed more than once: {repeated}")
    return wanted


def _direction_files(
    name: str, split: str, folders: list[Path], scans: list[dict[tuple[str, str], set[str]]]
) -> DirectionFiles:
    """The shard folders holding direction ``name`` (its own files, else the reverse direction's)."""
    src, tgt = parse_direction(name)
    pair = (src, tgt) if any((src, tgt) in found for found in scans) else (tgt, src)
    files = DirectionFiles(name, src, tgt)
    for index, (folder, found) in enumerate(zip(folders, scans, strict=True)):
        if pair in found:
            files.shards.append(index)
            files.prefixes.append(folder / pair_prefix(split, *pair))
    return files
