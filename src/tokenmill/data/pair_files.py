"""Where the files of a split of a prepared pair directory are: languages, parts, alignments.

fairseq's names: ``{split}.{src}-{tgt}.{lang}.bin/.idx`` (either direction), optionally in ``shardNNN/``
folders; extra training parts ``{split}1``, ``{split}2``, ... while they exist; alignments
``{split}.align.{src}-{tgt}`` or ``{split}.align``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tokenmill.data.concat_store import ConcatStore, Store
from tokenmill.data.verified import open_store
from tokenmill.errors import ConfigError, FormatError, TokenmillError
from tokenmill.store import IndexedDataset
from tokenmill.store.layout import (
    AlignName,
    align_name,
    describe,
    pair_prefix,
    read_manifest_hints,
    shard_dir,
    shard_dirs,
    split_part,
    store_name,
    stores_in,
)

_NOT_PAIRS = ("monolingual", "megatron", "text", "empty")
"""What :func:`tokenmill.store.layout.describe` calls a folder that holds no translation pairs."""


def languages(root: Path, folder: Path, split: str, src: str | None, tgt: str | None) -> tuple[str, str]:
    """The (source, target) languages of ``split``: as given, else from manifest.json, else from the file names."""
    if src is not None and tgt is not None:
        return src, tgt
    m_src, m_tgt = read_manifest_hints(root).language_pair or (None, None)
    if m_src and m_tgt and src in (None, m_src) and tgt in (None, m_tgt):
        return m_src, m_tgt
    _refuse_single_language(folder, split)
    return _pair_from_names(folder, split, src, tgt)


def _refuse_single_language(folder: Path, split: str) -> None:
    """Raise naming what the folder holds when it holds no translation pairs."""
    contents = describe(folder)
    if contents.kind not in _NOT_PAIRS:
        return
    what = (f"{folder} holds monolingual data ({split}.bin/.idx, no target language)"
            if Path(f"{folder / store_name(split, None, None, None)}.idx").exists() else contents.what())
    raise ConfigError(
        f"{what}: translation pairs need parallel data (prepare with --target-lang); language-model data is "
        "read by tokenmill.data.gpt_dataset"
    )


def _pair_from_names(folder: Path, split: str, src: str | None, tgt: str | None) -> tuple[str, str]:
    """The one language pair of ``split``'s store names that fits the languages given; raise when not one."""
    found = {(s.src, s.tgt) for s in stores_in(folder, split) if s.src is not None and s.tgt is not None}
    found = {(a, b) for a, b in found if (src in (None, a) and tgt in (None, b))}
    if len(found) == 1:
        return next(iter(found))
    shards = [p.name for p in shard_dirs(folder)]
    hint = f"; the split lives in shard folders {shards[:3]}...: pass shard=" if shards and not found else ""
    listing = ", ".join(f"{a}-{b}" for a, b in sorted(found)) or "none"
    raise ConfigError(
        f"cannot tell the language pair of split {split!r} in {folder} (found: {listing}){hint}; "
        "give src_lang and tgt_lang (--src and --tgt on the command line)"
    )


def pair_base(folder: Path, split: str, src: str, tgt: str) -> str:
    """``{folder}/{split}.{a}-{b}`` for the direction (src-tgt or tgt-src) whose files exist."""
    for a, b in ((src, tgt), (tgt, src)):
        if any(Path(f"{folder / store_name(split, a, b, lang)}.idx").exists() for lang in (src, tgt)):
            return str(folder / pair_prefix(split, a, b))
    raise ConfigError(
        f"no {split} data for {src}-{tgt} in {folder}: expected {split}.{src}-{tgt}.{src}.bin/.idx and "
        f"{split}.{src}-{tgt}.{tgt}.bin/.idx"
    )


def _split_exists(folder: Path, split: str, src: str, tgt: str) -> bool:
    """fairseq's ``split_exists`` test for a training part: its source store, in either direction's name."""
    return any(Path(f"{folder / store_name(split, a, b, src)}.idx").exists() for a, b in ((src, tgt), (tgt, src)))


def extra_splits(folder: Path, split: str, src: str, tgt: str) -> list[str]:
    """``{split}1``, ``{split}2``, ... up to the first one missing (fairseq's ``itertools.count`` loop)."""
    extra = []
    k = 1
    while _split_exists(folder, split_part(split, k), src, tgt):
        extra.append(split_part(split, k))
        k += 1
    return extra


def alignment_store(
    folder: Path, split: str, src: str, tgt: str, check_pointers: bool | None
) -> IndexedDataset | None:
    """The alignments of ``split`` (``{split}.align.{src}-{tgt}`` or ``{split}.align``); None when absent."""
    for candidate in (folder / align_name(split, src, tgt), folder / AlignName(split).name):
        if Path(f"{candidate}.idx").exists():
            return open_store(candidate, check_pointers)
    return None


@dataclass(frozen=True)
class SplitFiles:
    """The store files of one split of a pair directory: the split and its extra parts, in order."""

    root: Path
    """The prepared directory."""
    folder: Path
    """Where the split's files are (``root`` or one of its ``shardNNN/``)."""
    src_lang: str
    tgt_lang: str
    splits: list[str]
    """``split`` then its extra parts ``{split}1``, ``{split}2``, ... (when combined)."""
    bases: list[str]
    """The store name without language of each part (``{folder}/{part}.{a}-{b}``)."""
    repeats: list[int]
    """How many times each part is read (the first ``upsample_primary`` times when there are extra parts)."""

    @classmethod
    def find(
        cls,
        directory: str | os.PathLike[str],
        split: str,
        *,
        src_lang: str | None,
        tgt_lang: str | None,
        shard: int | None,
        combine: bool | None,
        upsample_primary: int,
    ) -> SplitFiles:
        """Locate ``split`` (see :meth:`tokenmill.data.pairs.PairDataset.from_dir` for the arguments)."""
        if not isinstance(upsample_primary, int) or upsample_primary < 1:
            raise ConfigError(f"upsample_primary must be an integer >= 1, got {upsample_primary!r}")
        root = Path(directory)
        if not root.is_dir():
            raise TokenmillError(f"{root} is not a directory (expected a prepared data directory)")
        folder = root
        if shard is not None:
            folder = root / shard_dir(shard)
            if not folder.is_dir():
                raise ConfigError(f"{folder} does not exist; shards here: {[p.name for p in shard_dirs(root)]}")
        src_lang, tgt_lang = languages(root, folder, split, src_lang, tgt_lang)
        splits = [split]
        if combine if combine is not None else split == "train":
            splits += extra_splits(folder, split, src_lang, tgt_lang)
        repeats = [upsample_primary if len(splits) > 1 else 1] + [1] * (len(splits) - 1)
        bases = [pair_base(folder, name, src_lang, tgt_lang) for name in splits]
        return cls(root, folder, src_lang, tgt_lang, splits, bases, repeats)

    def joined(self, parts: list[IndexedDataset] | None) -> Store | None:
        """The parts as one store (the store itself when there is one part)."""
        if parts is None:
            return None
        return parts[0] if len(parts) == 1 else ConcatStore(parts, self.repeats)

    def side(self, lang: str, check_pointers: bool | None) -> list[IndexedDataset]:
        """Every part's store of one language."""
        return [open_store(f"{base}.{lang}", check_pointers) for base in self.bases]

    def sides(
        self, source: bool, target: bool, check_pointers: bool | None
    ) -> tuple[list[IndexedDataset] | None, list[IndexedDataset] | None]:
        """(source parts, target parts), None for a side not asked for; equal counts checked part by part."""
        src_parts = self.side(self.src_lang, check_pointers) if source else None
        tgt_parts = self.side(self.tgt_lang, check_pointers) if target else None
        if len(self.splits) > 1 and src_parts is not None and tgt_parts is not None:
            for a, b in zip(src_parts, tgt_parts, strict=True):  # each part on its own: sums could hide it
                if len(a) != len(b):
                    raise FormatError(
                        f"{a.prefix} has {len(a)} sentences but {b.prefix} has {len(b)}; the sides of a parallel "
                        "corpus must have equal counts — re-run prepare for this split"
                    )
        return src_parts, tgt_parts

    def alignments(self, wanted: bool | None, counts: list[int], check_pointers: bool | None) -> Store | None:
        """Every part's alignments as one store; None when some part has none and ``wanted`` is not True."""
        if wanted is False:
            return None
        found = [alignment_store(self.folder, name, self.src_lang, self.tgt_lang, check_pointers)
                 for name in self.splits]
        if len(self.splits) > 1:
            for store, count in zip(found, counts, strict=True):
                if store is not None and len(store) != count:
                    raise FormatError(
                        f"{store.prefix} holds {len(store)} alignments for {count} pairs (one per pair expected)"
                    )
        if all(store is not None for store in found):
            return self.joined(found)  # type: ignore[arg-type]
        if wanted:
            name = self.splits[found.index(None)]
            raise ConfigError(
                f"no alignments for {name} in {self.folder}: expected {name}.align.{self.src_lang}-{self.tgt_lang}"
                ".bin/.idx (write them with prepare's alignment option)"
            )
        return None
