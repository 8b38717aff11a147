"""Parallel (source, target) samples over two token stores, either side optional.

Per-item options follow fairseq's ``PrependTokenDataset`` + ``LanguagePairDataset``, applied in
fairseq's order: prepend a token (a language tag such as ``__de__``), append ``</s>`` to the target
when it is missing, put ``<s>`` first when it is missing, remove a trailing ``</s>`` from the
source. (fairseq applies ``append_bos`` and ``remove_eos_from_source`` to the raw item, so
combining them with another option loses the other; here they compose.)

Lengths for batching are computed without reading tokens, from the store convention that every
sentence ends with ``</s>`` and none starts with ``<s>`` (what ``tokenmill prepare`` and
fairseq-preprocess write). Rows built for a batch apply the exact per-item rule.

The length filter (``max_source_positions``/``max_target_positions``) drops samples and counts
them per side (:class:`FilterReport`), or with ``strict`` raises naming the first offender.

A prepared directory holds ``{split}.{src}-{tgt}.{lang}.bin/.idx`` (fairseq's names, optionally in
``shardNNN/`` folders), ``dict.{lang}.txt`` and ``manifest.json``; word alignments, when present,
are ``{split}.align.{src}-{tgt}.bin/.idx`` (or ``{split}.align.bin/.idx``): one item per sentence
pair holding the Pharaoh pairs as flat integers ``s0 t0 s1 t1 ...`` (0-based token positions in
the stored source and target, ``</s>`` excluded), read by :mod:`tokenmill.batching.align`.

Extra training files are read as fairseq's ``load_langpair_dataset`` reads them: next to
``{split}.{src}-{tgt}.*`` it takes ``{split}1``, ``{split}2``, ... while they exist, laid end to end
(ids run over all of them), with the first part repeated ``upsample_primary`` times (fairseq's
``ConcatDataset`` with ``sample_ratios [k, 1, 1, ...]``). fairseq does this for the training split
(``combine=True``); validation splits such as ``valid1`` are separate sets it never merges.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from tokenmill._core.ragged import pad_rows
from tokenmill.data.concat_store import ConcatStore, Store
from tokenmill.data.pair_files import SplitFiles
from tokenmill.data.pair_identity import pair_content, pair_stores
from tokenmill.data.pair_options import FilterReport, PairOptions, SideRows, length_filter, side_lengths
from tokenmill.data.pair_rows import option_rows
from tokenmill.data.pair_windows import Windows
from tokenmill.data.verified import open_store, stamp_dir
from tokenmill.errors import ConfigError, FormatError
from tokenmill.store import IndexedDataset
from tokenmill.store.layout import dict_name
from tokenmill.vocab.dictionary import Dictionary

__all__ = [  # the names importable from here before the split into modules
    "ConcatStore",
    "FilterReport",
    "PairDataset",
    "PairOptions",
    "SideRows",
    "Store",
    "open_store",
    "stamp_dir",
]


class PairDataset:
    """Source/target token stores as one dataset of pairs (either side may be None)."""

    def __init__(
        self,
        src: Store | None,
        tgt: Store | None,
        options: PairOptions | None = None,
        *,
        align: Store | None = None,
        src_lang: str | None = None,
        tgt_lang: str | None = None,
        directory: str | os.PathLike[str] | None = None,
    ) -> None:
        if src is None and tgt is None:
            raise ConfigError("a pair dataset needs a source or a target store (both are None)")
        if src is not None and tgt is not None and len(src) != len(tgt):
            raise FormatError(
                f"{src.prefix} has {len(src)} sentences but {tgt.prefix} has {len(tgt)}; the sides of a parallel "
                "corpus must have equal counts — re-run prepare for this split"
            )
        if align is not None and len(align) != len(src if src is not None else tgt):  # type: ignore[arg-type]
            raise FormatError(
                f"{align.prefix} holds {len(align)} alignments for {len(src if src is not None else tgt)} pairs "  # type: ignore[arg-type]
                "(one per pair expected)"
            )
        self.src = src
        self.tgt = tgt
        self.align = align
        self.options = options or PairOptions()
        self.src_lang = src_lang
        self.tgt_lang = tgt_lang
        self.directory = Path(directory) if directory is not None else None
        o = self.options
        self.src_sizes: np.ndarray | None = (
            side_lengths(src.sizes, o.prepend_src, o.append_bos, o.remove_eos_from_source) if src is not None else None
        )
        self.tgt_sizes: np.ndarray | None = (
            side_lengths(tgt.sizes, o.prepend_tgt, o.append_bos, False) if tgt is not None else None
        )
        self.keep, self.filter_report = length_filter(self.src_sizes, self.tgt_sizes, o, len(self), self.describe())
        self._fingerprint: str | None = None
        self._content: dict[str, str] | None = None
        self._symbols: dict[str, np.ndarray] = {}
        self._windows: dict[str, Windows | None] = {}

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_dir(
        cls,
        directory: str | os.PathLike[str],
        split: str = "train",
        *,
        src_lang: str | None = None,
        tgt_lang: str | None = None,
        options: PairOptions | None = None,
        shard: int | None = None,
        source: bool = True,
        target: bool = True,
        alignments: bool | None = None,
        check_pointers: bool | None = None,
        combine: bool | None = None,
        upsample_primary: int = 1,
    ) -> PairDataset:
        """Open ``split`` of a prepared directory (fairseq names; languages from manifest.json or file names).

        ``shard`` picks ``shardNNN/`` when the split lives in shard folders. ``alignments``: True needs
        them, None loads them when present, False ignores them. ``check_pointers``: the store's O(N)
        pointer validation; None (default) runs it unless these exact files (same path, size, inode,
        modification and change times) passed it before on this machine (see :func:`open_store`).

        ``combine`` (fairseq's argument of the same name; None: True for ``train``, False for any
        other split, as fairseq's trainer loads them) also reads ``{split}1``, ``{split}2``, ... in the
        same folder while they exist (each ``{src}-{tgt}`` or ``{tgt}-{src}``), after ``split``, ids
        running on over them; ``upsample_primary`` (fairseq's ``--upsample-primary``) then repeats
        ``split``'s pairs that many times before the extra parts. As in fairseq it has no effect when
        there is no extra part. Alignments come along when every part has its own
        (``{split}1.align.{src}-{tgt}`` ...); with ``alignments=None`` they are left out otherwise.
        """
        files = SplitFiles.find(
            directory, split, src_lang=src_lang, tgt_lang=tgt_lang, shard=shard, combine=combine,
            upsample_primary=upsample_primary,
        )
        src_parts, tgt_parts = files.sides(source, target, check_pointers)
        counts = [len(part) for part in (src_parts or tgt_parts or [])]
        return cls(
            files.joined(src_parts), files.joined(tgt_parts), options,
            align=files.alignments(alignments, counts, check_pointers),
            src_lang=files.src_lang, tgt_lang=files.tgt_lang, directory=files.root,
        )

    # ---------------------------------------------------------------- sizes and filter
    def __len__(self) -> int:
        side = self.src if self.src is not None else self.tgt
        return len(side)  # type: ignore[arg-type]

    def describe(self) -> str:
        """Short name for messages: the store prefixes."""
        return " + ".join(str(side.prefix) for side in (self.src, self.tgt) if side is not None)

    def fingerprint(self) -> str:
        """Hash of the stored lengths and the options: what a batch plan depends on."""
        if self._fingerprint is None:
            h = xxhash.xxh3_128()
            h.update(
                json.dumps(
                    {
                        "n": len(self),
                        "options": self.options.to_dict(),
                        "sides": [self.src is not None, self.tgt is not None],
                    },
                    sort_keys=True,
                ).encode()
            )
            for side in (self.src, self.tgt):
                if side is not None:
                    h.update(np.ascontiguousarray(side.sizes).data)
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def content(self) -> dict[str, str]:
        """Each side's store content identity by side name, beside :meth:`fingerprint` (which knows the lengths
        only): a loader state records it, so a resume onto other tokens is refused
        (:mod:`~tokenmill.data.pair_identity`)."""
        if self._content is None:
            self._content = pair_content(self)
        return self._content

    def content_stores(self) -> dict[str, str]:
        """The store each :meth:`content` name stands for (for messages)."""
        return pair_stores(self)

    # ---------------------------------------------------------------- items
    def _side(self, which: str) -> Store | None:
        return self.src if which == "source" else self.tgt

    def plain(self, which: str) -> bool:
        """Whether rows of this side are the stored sentences unchanged (no per-item option applies)."""
        o = self.options
        if which == "source":
            return o.prepend_src is None and not o.append_bos and not o.remove_eos_from_source
        return o.prepend_tgt is None and not o.append_bos and not o.append_eos_to_target

    def padded(
        self, indices: np.ndarray, which: str, pad: int, *, left: bool = False, multiple: int = 1, dtype: Any = np.int64
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Rows of ``indices`` on one side as a padded (rows, width) matrix and their lengths.

        Stored sentences are copied straight into the matrix through fixed-width windows over the
        token array (a handful of numpy calls per batch); with per-item options the rows are built
        first (:meth:`rows`). None when the side is absent.
        """
        store = self._side(which)
        if store is None:
            return None
        indices = np.asarray(indices)
        if self.plain(which):
            if which not in self._windows:
                self._windows[which] = Windows.over(store)
            windows = self._windows[which]
            if windows is not None:
                result = windows.padded(indices, pad, left=left, multiple=multiple, dtype=dtype)
                if result is not None:
                    return result
        rows = self.rows(indices, which)
        assert rows is not None
        return pad_rows(rows.tokens, rows.offsets, pad, left=left, multiple=multiple, dtype=dtype), rows.lengths

    def shift(self, indices: np.ndarray, which: str) -> np.ndarray:
        """Tokens the options put before each row's stored tokens (alignment positions move by this)."""
        if self.plain(which):
            return np.zeros(len(indices), dtype=np.int64)
        rows = self.rows(indices, which)
        return rows.shift if rows is not None else np.zeros(len(indices), dtype=np.int64)

    def rows(self, indices: np.ndarray, which: str) -> SideRows | None:
        """Rows of ``indices`` on one side (``"source"`` or ``"target"``) with the options applied."""
        store = self._side(which)
        if store is None:
            return None
        tokens, offsets = store.gather(np.asarray(indices, dtype=np.int64))
        return option_rows(tokens, offsets, self.options, source=which == "source")

    def alignment_pairs(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Stored alignments of ``indices``: ((k, 2) int64 source/target positions, int64 offsets n+1)."""
        if self.align is None:
            return None
        flat, offsets = self.align.gather(np.asarray(indices, dtype=np.int64))
        if (np.diff(offsets) % 2).any():
            bad = int(np.asarray(indices)[np.flatnonzero(np.diff(offsets) % 2)[0]])
            raise FormatError(f"{self.align.prefix}: item {bad} has an odd number of values; alignments are pairs")
        return flat.astype(np.int64).reshape(-1, 2), offsets // 2

    def __getitem__(self, i: int) -> dict[str, Any]:
        """One sample as fairseq's ``LanguagePairDataset`` gives it: ``id``, ``source``, ``target``."""
        index = np.array([int(i)])
        item: dict[str, Any] = {"id": int(i)}
        for which in ("source", "target"):
            rows = self.rows(index, which)
            item[which] = rows.tokens.copy() if rows is not None else None
        aligned = self.alignment_pairs(index)
        if aligned is not None:
            item["alignment"] = aligned[0]
        return item

    def symbols(self, which: str) -> np.ndarray:
        """The side's dictionary as an array of strings (``dict.{lang}.txt`` of the directory)."""
        if which not in self._symbols:
            lang = self.src_lang if which == "source" else self.tgt_lang
            if self.directory is None or lang is None:
                raise ConfigError("token strings need the dataset's dictionary: open it with PairDataset.from_dir")
            path = self.directory / dict_name(lang)
            if not path.exists():
                raise ConfigError(f"{path} does not exist; token strings need the dictionary of {lang}")
            self._symbols[which] = np.asarray(Dictionary.load(path).symbols, dtype=object)
        return self._symbols[which]

    # ---------------------------------------------------------------- pickling (DataLoader workers)
    def __getstate__(self) -> dict[str, Any]:  # reopened by path: no arrays travel
        def where(store: Store | None) -> Any:
            if isinstance(store, ConcatStore):
                return {"parts": store.prefixes, "repeats": store.repeats}
            return None if store is None else store.prefix

        return {
            "src": where(self.src),
            "tgt": where(self.tgt),
            "align": where(self.align),
            "options": self.options.to_dict(),
            "src_lang": self.src_lang,
            "tgt_lang": self.tgt_lang,
            "directory": None if self.directory is None else str(self.directory),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        def reopen(where: Any) -> Store | None:
            if isinstance(where, dict):
                parts = [IndexedDataset(prefix, check_pointers=False) for prefix in where["parts"]]
                return ConcatStore(parts, where["repeats"])
            return None if where is None else IndexedDataset(where, check_pointers=False)

        self.__init__(  # type: ignore[misc]
            reopen(state["src"]),
            reopen(state["tgt"]),
            PairOptions(**state["options"]),
            align=reopen(state["align"]),
            src_lang=state["src_lang"],
            tgt_lang=state["tgt_lang"],
            directory=state["directory"],
        )
