"""The on-disk names of a prepared data directory, spelled and read back in one place.

Translation stores follow fairseq-preprocess: ``{split}.{src}-{tgt}.{lang}`` with
``dict.{lang}.txt``; monolingual stores follow fairseq's language-model layout (what
``fairseq-preprocess --only-source`` feeds to ``--task language_modeling``): ``{split}`` with
``dict.txt``. Word alignments are ``{split}.align.{src}-{tgt}`` (fairseq also reads ``{split}.align``);
Megatron's ``tools/preprocess_data.py`` names are ``{prefix}_{key}_document``. Shards are
``shardNNN/`` folders (fairseq's ``data1:data2`` paths, Open-NLLB's ``data_bin/shardNNN``).

Writers (prepare) build names with the builders here (:func:`store_name`, :func:`align_name`,
:func:`megatron_name`, :func:`dict_name`, :func:`shard_dir`); readers (data, commands, report)
read them back with the parsers (:func:`parse_store_name`, :func:`parse_align_name`,
:func:`parse_megatron_name`, :func:`shard_index`, :func:`parse_direction`) and find them on disk with
:func:`shard_dirs` and :func:`stores_in`. Every name a builder writes parses back to what built it.

The grammar, as fairseq reads it: a split is one or more dot-free pieces joined by dots (``train``,
``valid1``); a language code holds no ``.``; in ``{src}-{tgt}`` the codes are split at the one ``-``,
or, when a code holds ``-`` itself (``zh-Hans``), at the ``-`` that leaves ``lang`` as one of the two
sides. Direction names given by users (``eng_Latn-deu_Latn``) are stricter: letters, digits and ``_``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePath

from tokenmill.errors import ConfigError

"""The folders prepare writes (:func:`shard_dir` below 1000); readers use :func:`shard_dirs`."""
SHARED_DICT = "dict.txt"
STORE_SUFFIXES = (".bin", ".idx")
"""A store is ``{prefix}.bin`` (tokens) and ``{prefix}.idx`` (index)."""
INDEX_SUFFIX = ".idx"

_SHARD = re.compile(r"shard(\d+)")
_SPLIT = r"[^.]+(?:\.[^.]+)*"
_PAIR_NAME = re.compile(rf"(?P<split>{_SPLIT})\.(?P<pair>[^.]*-[^.]*)\.(?P<lang>[^.]+)")
_MONO_NAME = re.compile(r"[^.]+")
_ALIGN_NAME = re.compile(rf"(?P<split>{_SPLIT})\.align(?:\.(?P<pair>[^.]*-[^.]*))?")
_MEGATRON_NAME = re.compile(r"(?P<prefix>.+)_(?P<key>[^_]+)_document")
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
    """Megatron's ``{prefix}_{key}_document`` (a ``key`` holding ``_`` reads back as part of ``prefix``)."""

    prefix: str
    key: str

    @property
    def name(self) -> str:
        return megatron_name(self.prefix, self.key)

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
    """``corpus_text_document`` -> ``MegatronName("corpus", "text")``, else None."""
    match = _MEGATRON_NAME.fullmatch(_stem(name))
    return MegatronName(match["prefix"], match["key"]) if match else None


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


__all__ = [
    "INDEX_SUFFIX",
    "SHARED_DICT",
    "STORE_SUFFIXES",
    "AlignName",
    "MegatronName",
    "StoreName",
    "align_name",
    "dict_name",
    "dropped_path",
    "in_split",
    "is_direction",
    "is_shard_name",
    "megatron_name",
    "pair_prefix",
    "parse_align_name",
    "parse_direction",
    "parse_megatron_name",
    "parse_store_name",
    "shard_dir",
    "shard_dirs",
    "shard_index",
    "split_part",
    "store_name",
    "stores_in",
]
