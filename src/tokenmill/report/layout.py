"""What a prepared data directory holds, read from its ``manifest.json``: kind, splits, directions, shards.

Every store the manifest lists is sorted into a :class:`Part` (one split of one direction, or of
the monolingual corpus) whose sides list the store of each shard in shard order. Names follow
:mod:`tokenmill.store.layout`: ``[shardNNN/]{split}.{src}-{tgt}.{lang}`` for pairs and
``[shardNNN/]{split}`` for monolingual data; word-alignment stores are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from tokenmill.store.layout import DataKind, kind_of, parse_store_name, read_manifest_hints
from tokenmill.store.manifest import Manifest, read_manifest

Kind = Literal["pairs", "multilingual", "monolingual"]
_REPORTED: dict[DataKind, Kind] = {"pairs": "pairs", "multilingual": "multilingual", "monolingual": "monolingual",
                                   "megatron": "monolingual", "empty": "pairs"}
"""The report's kind of each :data:`~tokenmill.store.layout.DataKind` (language-model data in either layout is
one section; a manifest listing no stores is shown as pairs, as before)."""
SPLIT_ORDER = ("train", "valid", "test")


@dataclass
class Part:
    """One split of one direction (``direction`` None for monolingual data)."""

    split: str
    direction: str | None
    langs: list[str]
    """``[src, tgt]`` for pairs, ``[lang]`` (possibly ``""``) for monolingual data."""
    stores: dict[str, list[str]] = field(default_factory=dict)
    """Language -> relative store prefixes, one per shard folder, in shard order."""
    shards: list[str] = field(default_factory=list)
    """Shard folder of each store (``""`` for the directory itself)."""

    @property
    def paired(self) -> bool:
        return len(self.langs) == 2


@dataclass
class DataDir:
    """A prepared directory and its parts."""

    root: Path
    manifest: Manifest
    kind: Kind
    parts: list[Part]
    directions: list[str]
    """Direction names (``src-tgt``) for pairs, empty for monolingual data."""
    shard_folders: list[str]
    """``shardNNN`` folders in use (empty when the stores sit in the directory itself)."""

    @property
    def layout(self) -> str:
        """Store layout of the data (``fairseq`` or ``megatron``; from the first store)."""
        for store in self.manifest.stores.values():
            return str(store.get("layout", "?"))
        return "?"

    def part(self, split: str, direction: str | None = None) -> Part | None:
        for part in self.parts:
            if part.split == split and (direction is None or part.direction == direction):
                return part
        return None

    def store(self, prefix: str) -> dict[str, Any]:
        """The manifest's record of one store."""
        return self.manifest.stores.get(prefix, {})


def split_rank(split: str) -> tuple[int, str]:
    """Sort key: train, valid, test first, then the rest by name."""
    return (SPLIT_ORDER.index(split) if split in SPLIT_ORDER else len(SPLIT_ORDER), split)


def open_data_dir(directory: str | Path) -> DataDir:
    """Read ``directory/manifest.json`` and sort its stores into parts (raises if there is none)."""
    root = Path(directory)
    manifest = read_manifest(root)
    parts: dict[tuple[str | None, str], Part] = {}
    folders: set[str] = set()
    for prefix in sorted(manifest.stores):
        path = PurePosixPath(prefix)
        folder = str(path.parent) if str(path.parent) != "." else ""
        name = parse_store_name(path.name)
        if name is None:
            continue  # alignments and anything else that is not a token store of a side
        if name.src is not None and name.tgt is not None:
            key = (name.direction, name.split)
            part = parts.setdefault(key, Part(name.split, name.direction, [name.src, name.tgt]))
            lang = name.lang or ""
        else:
            key = (None, name.split)
            lang = _monolingual_lang(manifest)
            part = parts.setdefault(key, Part(name.split, None, [lang]))
        part.stores.setdefault(lang, []).append(prefix)
        if folder not in part.shards:
            part.shards.append(folder)
        if folder:
            folders.add(folder)
    directions = sorted({p.direction for p in parts.values() if p.direction})
    kind = _REPORTED[kind_of(manifest.stores, read_manifest_hints(root))]
    summary_directions = manifest.summary.get("directions")
    if kind == "multilingual" and isinstance(summary_directions, dict):
        directions = [d for d in summary_directions if d in directions] + [
            d for d in directions if d not in summary_directions
        ]
    ordered = sorted(
        parts.values(),
        key=lambda p: (directions.index(p.direction) if p.direction in directions else -1, split_rank(p.split)),
    )
    return DataDir(root, manifest, kind, ordered, directions, sorted(folders))


def _monolingual_lang(manifest: Manifest) -> str:
    lang = manifest.settings.get("source_lang")
    return lang if isinstance(lang, str) else ""


__all__ = ["DataDir", "Kind", "Part", "open_data_dir", "split_rank"]
