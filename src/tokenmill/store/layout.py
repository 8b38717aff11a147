"""The on-disk names of a prepared data directory, spelled and read back in one place.

Translation stores follow fairseq-preprocess: ``{split}.{src}-{tgt}.{lang}`` with
``dict.{lang}.txt``; monolingual stores follow fairseq's language-model layout (what
``fairseq-preprocess --only-source`` feeds to ``--task language_modeling``): ``{split}`` with
``dict.txt``. Word alignments are ``{split}.align.{src}-{tgt}`` (fairseq also reads ``{split}.align``);
Megatron's ``tools/preprocess_data.py`` names are ``{prefix}_{key}_document`` (``_sentence`` with its
``--split-sentences``). Shards are
``shardNNN/`` folders (fairseq's ``data1:data2`` paths, Open-NLLB's ``data_bin/shardNNN``).

Writers (prepare) build names with the builders here (:func:`store_name`, :func:`align_name`,
:func:`megatron_name`, :func:`dict_name`, :func:`shard_dir`); readers (data, commands, report)
read them back with the parsers (:func:`parse_store_name`, :func:`parse_align_name`,
:func:`parse_megatron_name`, :func:`shard_index`, :func:`parse_direction`) and find them on disk with
:func:`shard_dirs` and :func:`stores_in`. Every name a builder writes parses back to what built it.

"What kind of data is this?" has one answer here: :func:`describe` (a path: one store, translation pairs,
many directions, language-model data in fairseq's or Megatron's layout, raw text, nothing) and
:func:`kind_of` (a list of store names, such as a manifest's, with the manifest's :class:`ManifestHints`).
The front door, ``tokenmill batches``, the pair reader and the report ask them.

The grammar, as fairseq reads it: a split is one or more dot-free pieces joined by dots (``train``,
``valid1``); a language code holds no ``.``; in ``{src}-{tgt}`` the codes are split at the one ``-``,
or, when a code holds ``-`` itself (``zh-Hans``), at the ``-`` that leaves ``lang`` as one of the two
sides. Direction names given by users (``eng_Latn-deu_Latn``) are stricter: letters, digits and ``_``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Literal

from tokenmill.errors import ConfigError

"""The folders prepare writes (:func:`shard_dir` below 1000); readers use :func:`shard_dirs`."""
SHARED_DICT = "dict.txt"
STORE_SUFFIXES = (".bin", ".idx")
"""A store is ``{prefix}.bin`` (tokens) and ``{prefix}.idx`` (index)."""
INDEX_SUFFIX = ".idx"
PROVENANCE_SUFFIX = ".prov"
"""Beside a store's ``.idx``: the map from its items to input files and lines (:mod:`tokenmill.store.provenance`);
optional (directories prepared before it existed have none)."""
MANIFEST_NAME = "manifest.json"
"""What a prepared directory's files hold (:mod:`tokenmill.store.manifest` writes and checks it)."""

_SHARD = re.compile(r"shard(\d+)")
_SPLIT = r"[^.]+(?:\.[^.]+)*"
_PAIR_NAME = re.compile(rf"(?P<split>{_SPLIT})\.(?P<pair>[^.]*-[^.]*)\.(?P<lang>[^.]+)")
_MONO_NAME = re.compile(r"[^.]+")
_ALIGN_NAME = re.compile(rf"(?P<split>{_SPLIT})\.align(?:\.(?P<pair>[^.]*-[^.]*))?")
_MEGATRON_NAME = re.compile(r"(?P<prefix>.+)_(?P<key>[^_]+)_(?P<level>document|sentence)")
_DIRECTION = re.compile(r"(?P<src>\w+)-(?P<tgt>\w+)")


# ----------------------------------------------------------------------------- builders
def pair_prefix(split: str, src: str, tgt: str) -> str:
    """``{split}.{src}-{tgt}``: what the two sides of a pair share (each adds ``.{lang}``)."""
    return f"{split}.{src}-{tgt}"


def store_name(split: str, src: str | None, tgt: str | None, lang: str | None) -> str:
    """``{split}.{src}-{tgt}.{lang}`` for one side of a pair; ``{split}`` for monolingual data."""
    return split if not tgt else f"{pair_prefix(split, src or '', tgt)}.{lang}"


def split_part(split: str, part: int) -> str:
    """fairseq's extra training files: part 0 is ``split`` itself, part ``k`` is ``{split}{k}`` (``train1``)."""
    return f"{split}{part}" if part else split


def megatron_name(output_prefix: str, key: str, level: str = "document") -> str:
    """Megatron's ``tools/preprocess_data.py`` output: ``{output_prefix}_{key}_document``, or
    ``{output_prefix}_{key}_sentence`` (``level``) when its ``--split-sentences`` made sentences the sequences."""
    return f"{output_prefix}_{key}_{level}"


def align_name(split: str, src: str, tgt: str) -> str:
    """fairseq's word-alignment store: ``{split}.align.{src}-{tgt}``."""
    return f"{split}.align.{src}-{tgt}"


def provenance_path(prefix: str | os.PathLike[str]) -> Path:
    """The provenance map of the store at ``prefix`` (``{prefix}.prov``)."""
    return Path(f"{os.fspath(prefix)}{PROVENANCE_SUFFIX}")


def dict_name(lang: str | None) -> str:
    """``dict.{lang}.txt`` for a side of a pair; ``dict.txt`` for monolingual or shared dictionaries."""
    return f"dict.{lang}.txt" if lang else SHARED_DICT


def shard_dir(index: int) -> str:
    """``shardNNN`` (at least three digits, from 0)."""
    return f"shard{index:03d}"


def dropped_path(root: str | Path, split: str, direction: str | None = None) -> Path:
    """Where prepare keeps the sample of what cleaning dropped in one split (of one direction):
    ``.work/dropped/[{direction}/]{split}.json`` (work files: not data, not in the manifest)."""
    base = Path(root) / ".work" / "dropped"
    return (base / direction / f"{split}.json") if direction else (base / f"{split}.json")


# ----------------------------------------------------------------------------- typed names
@dataclass(frozen=True)
class StoreName:
    """One token store's name: a side of a pair (``src``, ``tgt``, ``lang`` set) or monolingual (all None)."""

    split: str
    src: str | None = None
    tgt: str | None = None
    lang: str | None = None
    """The side this store holds (``src`` or ``tgt`` in names prepare writes)."""

    @property
    def paired(self) -> bool:
        return self.tgt is not None

    @property
    def direction(self) -> str | None:
        """``src-tgt`` as the name spells it (None for monolingual data)."""
        return f"{self.src}-{self.tgt}" if self.paired else None

    @property
    def name(self) -> str:
        return store_name(self.split, self.src, self.tgt, self.lang)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class AlignName:
    """A word-alignment store's name: ``{split}.align.{src}-{tgt}``, or fairseq's ``{split}.align`` (no pair)."""

    split: str
    src: str | None = None
    tgt: str | None = None

    @property
    def direction(self) -> str | None:
        return f"{self.src}-{self.tgt}" if self.tgt is not None else None

    @property
    def name(self) -> str:
        return align_name(self.split, self.src, self.tgt) if self.tgt is not None else f"{self.split}.align"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class MegatronName:
    """Megatron's ``{prefix}_{key}_document`` or ``_sentence`` (a ``key`` holding ``_`` reads back as part of
    ``prefix``)."""

    prefix: str
    key: str
    level: str = "document"

    @property
    def name(self) -> str:
        return megatron_name(self.prefix, self.key, self.level)

    def __str__(self) -> str:
        return self.name


# ----------------------------------------------------------------------------- parsers
def _stem(name: str | os.PathLike[str]) -> str:
    """The last component of ``name`` without a ``.bin``/``.idx`` suffix."""
    text = PurePath(name).name
    for suffix in STORE_SUFFIXES:
        if text.endswith(suffix):
            return text[: -len(suffix)]
    return text


def _sides(pair: str, lang: str | None) -> tuple[str, str] | None:
    """``src-tgt`` split at its ``-``; with more than one, at the one that leaves ``lang`` a whole side."""
    if pair.count("-") == 1:
        src, tgt = pair.split("-")
    else:
        found = set()
        if lang and pair.startswith(f"{lang}-"):
            found.add((lang, pair[len(lang) + 1 :]))
        if lang and pair.endswith(f"-{lang}"):
            found.add((pair[: -len(lang) - 1], lang))
        if len(found) != 1:
            return None
        src, tgt = found.pop()
    return (src, tgt) if src and tgt else None


def parse_store_name(name: str | os.PathLike[str]) -> StoreName | None:
    """A store's name (a path, a prefix, or a file name ending ``.bin``/``.idx``) read back, else None.

    ``train.de-en.de`` -> ``StoreName("train", "de", "en", "de")``; ``train`` -> ``StoreName("train")``.
    A Megatron name (``corpus_text_document``) also reads as a monolingual split; alignments do not.
    """
    stem = _stem(name)
    if _MONO_NAME.fullmatch(stem):
        return StoreName(stem)
    match = _PAIR_NAME.fullmatch(stem)
    sides = _sides(match["pair"], match["lang"]) if match else None
    if match is None or sides is None:
        return None
    return StoreName(match["split"], sides[0], sides[1], match["lang"])


def parse_align_name(name: str | os.PathLike[str]) -> AlignName | None:
    """``train.align.de-en`` -> ``AlignName("train", "de", "en")``; ``train.align`` -> ``AlignName("train")``."""
    match = _ALIGN_NAME.fullmatch(_stem(name))
    if match is None:
        return None
    if match["pair"] is None:
        return AlignName(match["split"])
    sides = _sides(match["pair"], None)
    return AlignName(match["split"], *sides) if sides else None


def parse_megatron_name(name: str | os.PathLike[str]) -> MegatronName | None:
    """``corpus_text_document`` -> ``MegatronName("corpus", "text")``, ``corpus_text_sentence`` ->
    ``MegatronName("corpus", "text", "sentence")``, else None."""
    match = _MEGATRON_NAME.fullmatch(_stem(name))
    return MegatronName(match["prefix"], match["key"], match["level"]) if match else None


def in_split(name_split: str, split: str) -> bool:
    """Whether a store named for split ``name_split`` is read when ``split`` is opened: ``split`` itself or
    one of its :func:`split_part` names (``train``, ``train1``, ``train2`` ... for ``train``)."""
    rest = name_split[len(split) :] if name_split.startswith(split) else None
    return rest is not None and (rest == "" or (rest.isascii() and rest.isdigit()))


def shard_index(name: str | os.PathLike[str]) -> int | None:
    """The number of a ``shardN...`` folder name (any count of digits: ``shard000``, ``shard1000``), else None."""
    match = _SHARD.fullmatch(PurePath(name).name)
    return int(match.group(1)) if match else None


def is_shard_name(name: str | os.PathLike[str]) -> bool:
    """Whether ``name`` (a folder's name or path) is a shard folder's name."""
    return shard_index(name) is not None


def parse_direction(name: str) -> tuple[str, str]:
    """``"eng_Latn-tur_Latn"`` -> ``("eng_Latn", "tur_Latn")``; codes of letters, digits and ``_`` (no ``-``, ``.``).

    Raises :class:`~tokenmill.errors.ConfigError` naming the rule otherwise."""
    match = _DIRECTION.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        raise ConfigError(
            f"direction {name!r} is not 'src-tgt' (language codes of letters, digits and '_'), "
            "e.g. 'eng_Latn-tur_Latn'"
        )
    return match["src"], match["tgt"]


def is_direction(name: object) -> bool:
    """Whether ``name`` is a direction name :func:`parse_direction` accepts."""
    return isinstance(name, str) and _DIRECTION.fullmatch(name) is not None


# ----------------------------------------------------------------------------- finding on disk
def shard_dirs(root: str | os.PathLike[str]) -> list[Path]:
    """The ``shardN...`` folders directly under ``root``, in shard order (empty when none, or no ``root``)."""
    try:
        entries = list(os.scandir(root))
    except (FileNotFoundError, NotADirectoryError):
        return []
    numbered = sorted(
        (index, entry.name)
        for entry in entries
        if (index := shard_index(entry.name)) is not None and entry.is_dir()
    )
    return [Path(root, name) for _, name in numbered]


def stores_in(folder: str | os.PathLike[str], split: str | None = None) -> list[StoreName]:
    """The stores in ``folder`` (by their ``.idx``; not below), of ``split`` when given, sorted by name.

    Names that are not store names (alignments, anything else) are left out."""
    found = []
    for entry in os.scandir(folder):
        if not entry.name.endswith(INDEX_SUFFIX):
            continue
        parsed = parse_store_name(entry.name)
        if parsed is not None and (split is None or parsed.split == split):
            found.append(parsed)
    return sorted(found, key=lambda s: s.name)


# ----------------------------------------------------------------------------- what a folder holds
@dataclass(frozen=True)
class ManifestHints:
    """What readers take from a directory's ``manifest.json`` to find their data, read leniently.

    Readers open data found by its file names (:mod:`tokenmill.store.layout`); the manifest, when there
    is a readable one, only fills in what names cannot say. It may be partial (written by hand, by an
    older tokenmill, or absent): :func:`read_manifest_hints` never raises, and each fact is None (or
    empty) when the manifest does not give it in the expected shape.
    """

    language_pair: tuple[str, str] | None = None
    """``(source_lang, target_lang)``: from the top level, else ``settings``, else ``summary`` (the first
    place naming both)."""
    directions: dict[str, frozenset[str]] = field(default_factory=dict)
    """Listed direction names -> the splits each has: a ``{name: {"splits": {split: ...}}}`` entry counts
    for the splits it names, any other entry (or a bare list of names) for ``train`` only. From the first of
    the top level, ``summary``, ``settings`` holding a ``directions`` mapping or list."""
    multilingual: bool = False
    """Whether ``summary.directions`` is a mapping: what ``prepare --directions`` writes."""
    lang_token_format: str | None = None
    """``vocab.lang_token_format`` (a template holding ``{lang}``), as ``prepare --directions`` records it."""
    layout: str | None = None
    """``settings.layout``: the store layout prepare wrote (``fairseq`` or ``megatron``)."""
    present: bool = False
    """Whether there is a manifest that reads as a JSON object."""

    def directions_for(self, split: str) -> list[str] | None:
        """The directions listed for ``split`` (valid ``src-tgt`` names, in the manifest's order), None when none."""
        names = [name for name, splits in self.directions.items() if split in splits and is_direction(name)]
        return names or None

    @classmethod
    def from_json(cls, obj: Any) -> ManifestHints:
        """The hints in a decoded manifest (anything that is not a JSON object gives none)."""
        if not isinstance(obj, dict):
            return cls()
        pair = _language_pair(obj)
        directions = _listed_directions(obj)
        summary, vocab, settings = obj.get("summary"), obj.get("vocab"), obj.get("settings")
        template = vocab.get("lang_token_format") if isinstance(vocab, dict) else None
        layout = settings.get("layout") if isinstance(settings, dict) else None
        return cls(
            language_pair=pair,
            directions=directions,
            multilingual=isinstance(summary, dict) and isinstance(summary.get("directions"), dict),
            lang_token_format=template if isinstance(template, str) and "{lang}" in template else None,
            layout=layout if isinstance(layout, str) else None,
            present=True,
        )


def _language_pair(obj: dict[str, Any]) -> tuple[str, str] | None:
    """``(source_lang, target_lang)`` from the first of the top level, ``settings``, ``summary`` naming both."""
    for scope in (obj, obj.get("settings"), obj.get("summary")):
        if isinstance(scope, dict):
            src, tgt = scope.get("source_lang"), scope.get("target_lang")
            if isinstance(src, str) and isinstance(tgt, str):
                return src, tgt
    return None


def _listed_directions(obj: dict[str, Any]) -> dict[str, frozenset[str]]:
    """Direction name -> its splits, from the first of the top level, ``summary``, ``settings`` listing them."""
    for scope in (obj, obj.get("summary"), obj.get("settings")):
        listed = scope.get("directions") if isinstance(scope, dict) else None
        if isinstance(listed, dict):
            directions: dict[str, frozenset[str]] = {}
            for name, entry in listed.items():
                splits = entry.get("splits") if isinstance(entry, dict) else None
                directions[name] = frozenset(splits) if isinstance(splits, dict) else frozenset({"train"})
            return directions
        if isinstance(listed, list):
            return {name: frozenset({"train"}) for name in listed if isinstance(name, str)}
    return {}


def read_manifest_hints(directory: str | os.PathLike[str] | None) -> ManifestHints:
    """:class:`ManifestHints` of ``directory/manifest.json``; empty ones when there is no directory, no
    manifest, or one that cannot be read (:func:`read_manifest` is the strict reader, for ``verify``)."""
    if directory is None:
        return ManifestHints()
    try:
        obj = json.loads((Path(directory) / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return ManifestHints()
    return ManifestHints.from_json(obj)


DataKind = Literal["pairs", "multilingual", "monolingual", "megatron", "empty"]
"""What a set of stores is: translation pairs of one direction, many directions (``prepare --directions``,
Open-NLLB's ``data_bin``), language-model data in fairseq's layout (``{split}``) or Megatron's
(``{prefix}_{key}_document``, or ``prepare --layout megatron``), or no stores at all."""

FolderKind = Literal["store", "pairs", "multilingual", "monolingual", "megatron", "text", "empty", "missing"]
"""What a path is: one store by its prefix, a prepared folder of a :data:`DataKind`, a folder of files that
are not stores (raw text: run ``tokenmill prepare`` first), an empty folder, or nothing."""


def kind_of(stores: Iterable[str], hints: ManifestHints, *, sharded: bool = False) -> DataKind:
    """The one answer to "what kind of data is this?" for a list of store prefixes (relative names, shard
    folders included: ``shard000/train.de-en.de``) and the manifest's hints; ``sharded``: the folder has
    ``shardNNN/`` folders. Many directions when the manifest lists them (or, with no manifest, when
    there are shard folders); else pairs when a store is a side of a pair; else language-model data."""
    if hints.multilingual or hints.directions or (sharded and not hints.present):
        return "multilingual"
    names = [name for name in (parse_store_name(store) for store in stores) if name is not None]
    if any(name.paired for name in names):
        return "pairs"
    if not names:
        return "empty"
    megatron = hints.layout == "megatron" or any(parse_megatron_name(store) for store in stores)
    return "megatron" if megatron else "monolingual"


@dataclass(frozen=True)
class FolderContents:
    """What :func:`describe` found at a path."""

    path: Path
    kind: FolderKind
    stores: tuple[str, ...] = ()
    """Store prefixes relative to :attr:`path` (shard folders included), sorted."""
    hints: ManifestHints = ManifestHints()
    others: tuple[str, ...] = ()
    """A few of the files that are not stores (for a folder of raw text), sorted."""

    def what(self) -> str:
        """The folder in words, for messages ("holds language-model data in the Megatron layout (...)")."""
        shown = ", ".join(self.stores[:3]) + (", ..." if len(self.stores) > 3 else "")
        return {
            "store": f"{self.path} is one token store",
            "pairs": f"{self.path} holds translation pairs ({shown})",
            "multilingual": f"{self.path} holds many translation directions",
            "monolingual": f"{self.path} holds language-model data in fairseq's layout ({shown})",
            "megatron": f"{self.path} holds language-model data in the Megatron layout ({shown})",
            "text": f"{self.path} holds no token stores, only other files ({', '.join(self.others)}): "
                    "raw text is read by tokenmill prepare, which writes the stores",
            "empty": f"{self.path} is an empty folder (no token stores)",
            "missing": f"{self.path}: no such directory or token store",
        }[self.kind]


def describe(path: str | os.PathLike[str]) -> FolderContents:
    """What ``path`` holds, by its file names and ``manifest.json`` (read leniently): a store prefix, a folder
    of one of the :data:`DataKind` s, a folder of other files, or nothing. Every reader, command and the
    report asks this (with :func:`kind_of` for a store list read from a manifest) rather than guessing."""
    root = Path(path)
    if any(Path(f"{root}{suffix}").exists() for suffix in STORE_SUFFIXES):
        return FolderContents(root, "store")
    if not root.is_dir():
        return FolderContents(root, "missing")
    shards = shard_dirs(root)
    stores = [store.name for store in stores_in(root)]
    stores += [f"{shard.name}/{store.name}" for shard in shards for store in stores_in(shard)]
    hints = read_manifest_hints(root)
    kind = kind_of(stores, hints, sharded=bool(shards))
    if kind == "empty" and not (hints.multilingual or hints.directions):
        others = sorted(entry.name for entry in os.scandir(root) if entry.is_file() and entry.name != MANIFEST_NAME)
        return FolderContents(root, "text" if others else "empty", hints=hints, others=tuple(others[:3]))
    return FolderContents(root, kind, tuple(sorted(stores)), hints)


__all__ = [
    "INDEX_SUFFIX",
    "MANIFEST_NAME",
    "SHARED_DICT",
    "STORE_SUFFIXES",
    "AlignName",
    "DataKind",
    "FolderContents",
    "FolderKind",
    "ManifestHints",
    "MegatronName",
    "StoreName",
    "align_name",
    "describe",
    "dict_name",
    "dropped_path",
    "in_split",
    "is_direction",
    "is_shard_name",
    "kind_of",
    "megatron_name",
    "pair_prefix",
    "parse_align_name",
    "parse_direction",
    "parse_megatron_name",
    "parse_store_name",
    "read_manifest_hints",
    "shard_dir",
    "shard_dirs",
    "shard_index",
    "split_part",
    "store_name",
    "stores_in",
]
