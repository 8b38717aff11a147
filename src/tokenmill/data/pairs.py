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
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from tokenmill._core.ragged import pad_rows
from tokenmill.errors import ConfigError, FormatError, TokenmillError
from tokenmill.fsutil import cache_root
from tokenmill.store import IndexedDataset
from tokenmill.store.layout import (
    AlignName,
    align_name,
    describe,
    dict_name,
    pair_prefix,
    read_manifest_hints,
    shard_dir,
    shard_dirs,
    split_part,
    store_name,
    stores_in,
)
from tokenmill.vocab.dictionary import Dictionary


@dataclass(frozen=True)
class PairOptions:
    """What is done to each sample before batching (fairseq's per-item options) and the length filter."""

    prepend_src: int | None = None
    """Token id put first in every source sentence (a language tag, or ``<s>``); None: nothing."""
    prepend_tgt: int | None = None
    """Token id put first in every target sentence; None: nothing."""
    append_bos: bool = False
    """Put ``<s>`` first on both sides unless already there (fairseq's ``append_bos``)."""
    remove_eos_from_source: bool = False
    """Drop the source's trailing ``</s>`` (OpenNMT-style features have none)."""
    append_eos_to_target: bool = False
    """Append ``</s>`` to targets that lack it (stored sentences already end with it)."""
    max_source_positions: int | None = None
    """Drop pairs whose source (after the options above) is longer; None: no limit."""
    max_target_positions: int | None = None
    """Drop pairs whose target is longer; None: no limit."""
    strict: bool = False
    """Raise instead of dropping when a pair is too long (for the length filter or the budget)."""
    bos: int = 0
    """Id of ``<s>`` (fairseq dictionary: 0)."""
    pad: int = 1
    """Id of ``<pad>`` (fairseq dictionary: 1)."""
    eos: int = 2
    """Id of ``</s>`` (fairseq dictionary: 2)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FilterReport:
    """What the length filter did."""

    num_total: int
    """Pairs in the split."""
    num_kept: int
    """Pairs kept."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Pairs dropped, by reason: ``source_too_long``, ``target_too_long``, ``both_too_long``, ``empty``."""

    @property
    def num_dropped(self) -> int:
        return self.num_total - self.num_kept


@dataclass
class SideRows:
    """One side of some samples after the per-item options: ragged rows as flat tokens + offsets."""

    tokens: np.ndarray
    """Concatenated row tokens (store dtype)."""
    offsets: np.ndarray
    """int64, len n+1; row i is ``tokens[offsets[i]:offsets[i+1]]``."""
    shift: np.ndarray
    """Tokens put in front of each row's stored tokens (alignment positions move by this)."""

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


class _Windows:
    """A store's tokens seen as overlapping rows of the longest sentence's width (no copy).

    Row ``p`` is the tokens from position ``p`` on, so a batch is one fancy-indexed copy of the
    rows where its sentences start (or, left-padded, end) plus a mask: no index arithmetic per
    token. Sentences too close to the end of the array for a full window use the general path.
    """

    def __init__(self, tokens: np.ndarray, sizes: np.ndarray, pointers: np.ndarray, width: int) -> None:
        self.sizes = sizes
        self.pointers = pointers
        self.shift = tokens.dtype.itemsize.bit_length() - 1  # byte pointer -> token position
        self.last = len(tokens) - width
        self.columns = np.arange(width, dtype=sizes.dtype)  # same dtype as lengths: no casting in compares
        step = tokens.strides[0]
        self.view = np.lib.stride_tricks.as_strided(
            tokens, shape=(self.last + 1, width), strides=(step, step), writeable=False
        )

    @classmethod
    def over(cls, store: Store) -> _Windows | None:
        if not isinstance(store, IndexedDataset):  # several files: rows are gathered per part instead
            return None
        if len(store) == 0 or store.bin_file.stat().st_size == 0 or store.dtype.itemsize not in (1, 2, 4, 8):
            return None
        tokens = np.memmap(store.bin_file, dtype=store.dtype, mode="r").view(np.ndarray)
        width = int(store.sizes.max())
        if width == 0 or width > len(tokens):
            return None
        return cls(tokens, store.sizes, store.pointers, width)

    def padded(
        self, indices: np.ndarray, pad: int, *, left: bool, multiple: int, dtype: Any
    ) -> tuple[np.ndarray, np.ndarray] | None:
        # (every call here is one numpy call on a batch-sized array: this runs once per batch and side)
        lengths = self.sizes[indices]
        if not len(lengths):
            return None
        longest = int(np.maximum.reduce(lengths))
        begin = self.pointers[indices]
        begin >>= self.shift
        if left:
            begin += lengths
            begin -= longest
        if int(np.minimum.reduce(begin)) < 0 or int(np.maximum.reduce(begin)) > self.last:
            return None
        width = -(-longest // multiple) * multiple if multiple > 1 else longest
        rows = self.view[begin, :longest]
        columns = self.columns[:longest]
        if left:
            valid = columns >= (np.int32(longest) - lengths)[:, None]
        else:
            valid = columns < lengths[:, None]
        out = np.empty((len(lengths), width), dtype=dtype)
        out.fill(pad)
        np.copyto(out[:, width - longest :] if left else out[:, :longest], rows, where=valid, casting="unsafe")
        return out, lengths.astype(np.int64)


class ConcatStore:
    """Token stores end to end as one store, the first ``repeats[0]`` times, the next ``repeats[1]`` ...

    fairseq's ``ConcatDataset(datasets, sample_ratios)`` for whole-number ratios: item ``g`` is item
    ``(g - start[p]) mod len(parts[p])`` of the part ``p`` whose range holds ``g``, so a repeated
    part comes back whole, then again. Offers what :class:`PairDataset` reads from a store:
    ``len``, ``sizes``, ``gather``, ``dtype``, ``prefix`` (a description for messages).
    """

    def __init__(self, parts: Sequence[IndexedDataset], repeats: Sequence[int] | None = None) -> None:
        if not parts:
            raise ConfigError("a concatenated store needs at least one part")
        repeats = [1] * len(parts) if repeats is None else [int(r) for r in repeats]
        if len(repeats) != len(parts) or any(r < 1 for r in repeats):
            raise ConfigError(f"repeats {repeats} must give each of the {len(parts)} parts a count >= 1")
        self.parts = list(parts)
        self.repeats = repeats
        self.real_sizes = np.asarray([len(part) for part in self.parts], dtype=np.int64)
        self.starts = np.zeros(len(self.parts) + 1, dtype=np.int64)
        np.cumsum(self.real_sizes * np.asarray(repeats, dtype=np.int64), out=self.starts[1:])
        self.sizes: np.ndarray = np.concatenate(
            [np.tile(part.sizes, r) for part, r in zip(self.parts, repeats, strict=True)]
        ).astype(np.int32, copy=False)
        self.dtype = np.result_type(*(part.dtype for part in self.parts))
        self.prefix = " + ".join(
            f"{part.prefix}" + (f" (x{r})" if r > 1 else "") for part, r in zip(self.parts, repeats, strict=True)
        )

    def __len__(self) -> int:
        return int(self.starts[-1])

    @property
    def prefixes(self) -> list[str]:
        return [str(part.prefix) for part in self.parts]

    def locate(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(part, item within the part) of each id in ``indices``."""
        indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        n = len(self)
        if indices.size and (int(indices.min()) < -n or int(indices.max()) >= n):
            raise IndexError(f"gather index out of range for {self.prefix} with {n} items")
        indices = np.where(indices < 0, indices + n, indices)
        part = np.searchsorted(self.starts, indices, side="right") - 1
        return part, (indices - self.starts[part]) % self.real_sizes[part]

    def gather(self, indices: np.ndarray | list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Items ``indices`` as (flat tokens, int64 offsets of length n+1): one read per part touched."""
        part, local = self.locate(np.asarray(indices))
        if len(part) and int(part.min()) == int(part.max()):
            tokens, offsets = self.parts[int(part[0])].gather(local)
            return tokens.astype(self.dtype, copy=False), offsets
        lengths = np.zeros(len(part), dtype=np.int64)
        pieces = []
        for p in np.unique(part).tolist():
            rows = np.flatnonzero(part == p)
            tokens, offsets = self.parts[p].gather(local[rows])
            lengths[rows] = np.diff(offsets)
            pieces.append((rows, tokens, offsets))
        out_offsets = np.zeros(len(part) + 1, dtype=np.int64)
        np.cumsum(lengths, out=out_offsets[1:])
        out = np.empty(int(out_offsets[-1]), dtype=self.dtype)
        for rows, tokens, offsets in pieces:
            row_lengths = np.diff(offsets)
            dest = np.arange(len(tokens), dtype=np.int64) + np.repeat(out_offsets[rows] - offsets[:-1], row_lengths)
            out[dest] = tokens
        return out, out_offsets

    def __repr__(self) -> str:
        return f"ConcatStore({self.prefix!r}, items={len(self)})"


Store = IndexedDataset | ConcatStore
"""What a side of a :class:`PairDataset` reads: one store, or several end to end."""


def _side_lengths(raw: np.ndarray, prepend: int | None, bos: bool, drop_eos: bool) -> np.ndarray:
    delta = int(prepend is not None) + int(bos) - int(drop_eos)
    if delta == 0:
        return raw
    return (raw.astype(np.int64) + delta).clip(0).astype(np.int32)


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
            _side_lengths(src.sizes, o.prepend_src, o.append_bos, o.remove_eos_from_source) if src is not None else None
        )
        self.tgt_sizes: np.ndarray | None = (
            _side_lengths(tgt.sizes, o.prepend_tgt, o.append_bos, False) if tgt is not None else None
        )
        self.keep, self.filter_report = self._filter()
        self._fingerprint: str | None = None
        self._symbols: dict[str, np.ndarray] = {}
        self._windows: dict[str, _Windows | None] = {}

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
        src_lang, tgt_lang = _languages(root, folder, split, src_lang, tgt_lang)
        splits = [split]
        if combine if combine is not None else split == "train":
            splits += _extra_splits(folder, split, src_lang, tgt_lang)
        repeats = [upsample_primary if len(splits) > 1 else 1] + [1] * (len(splits) - 1)
        bases = [_pair_prefix(folder, name, src_lang, tgt_lang) for name in splits]

        src_parts = [open_store(f"{base}.{src_lang}", check_pointers) for base in bases] if source else None
        tgt_parts = [open_store(f"{base}.{tgt_lang}", check_pointers) for base in bases] if target else None
        pairs_per_part = [len(part) for part in (src_parts or tgt_parts or [])]
        if len(splits) > 1 and src_parts is not None and tgt_parts is not None:
            for a, b in zip(src_parts, tgt_parts, strict=True):  # each part on its own: sums could hide it
                if len(a) != len(b):
                    raise FormatError(
                        f"{a.prefix} has {len(a)} sentences but {b.prefix} has {len(b)}; the sides of a parallel "
                        "corpus must have equal counts — re-run prepare for this split"
                    )

        def joined(parts: list[IndexedDataset] | None) -> Store | None:
            if parts is None:
                return None
            return parts[0] if len(parts) == 1 else ConcatStore(parts, repeats)

        align: Store | None = None
        if alignments is not False:
            found = [_alignment_store(folder, name, src_lang, tgt_lang, check_pointers) for name in splits]
            if len(splits) > 1:
                for store, count in zip(found, pairs_per_part, strict=True):
                    if store is not None and len(store) != count:
                        raise FormatError(
                            f"{store.prefix} holds {len(store)} alignments for {count} pairs (one per pair expected)"
                        )
            if all(store is not None for store in found):
                align = joined(found)  # type: ignore[arg-type]
            elif alignments:
                name = splits[found.index(None)]
                raise ConfigError(
                    f"no alignments for {name} in {folder}: expected {name}.align.{src_lang}-{tgt_lang}.bin/.idx "
                    "(write them with prepare's alignment option)"
                )
        return cls(
            joined(src_parts), joined(tgt_parts), options, align=align, src_lang=src_lang, tgt_lang=tgt_lang,
            directory=root,
        )

    # ---------------------------------------------------------------- sizes and filter
    def __len__(self) -> int:
        side = self.src if self.src is not None else self.tgt
        return len(side)  # type: ignore[arg-type]

    def _filter(self) -> tuple[np.ndarray | None, FilterReport]:
        o = self.options
        n = len(self)
        long_src = (
            self.src_sizes > o.max_source_positions
            if (self.src_sizes is not None and o.max_source_positions is not None)
            else None
        )
        long_tgt = (
            self.tgt_sizes > o.max_target_positions
            if (self.tgt_sizes is not None and o.max_target_positions is not None)
            else None
        )
        empty = None
        if self.src_sizes is not None and self.tgt_sizes is not None:
            if (self.src_sizes == 0).any() and (self.tgt_sizes == 0).any():
                empty = (self.src_sizes == 0) & (self.tgt_sizes == 0)
        else:
            only = self.src_sizes if self.src_sizes is not None else self.tgt_sizes
            if (only == 0).any():  # type: ignore[union-attr]
                empty = only == 0  # type: ignore[operator]
        if long_src is None and long_tgt is None and empty is None:
            return None, FilterReport(n, n)
        drop = np.zeros(n, dtype=bool)
        dropped: dict[str, int] = {}
        if long_src is not None and long_tgt is not None:
            both = long_src & long_tgt
            dropped["both_too_long"] = int(both.sum())
            dropped["source_too_long"] = int((long_src & ~both).sum())
            dropped["target_too_long"] = int((long_tgt & ~both).sum())
            drop |= long_src | long_tgt
        elif long_src is not None:
            dropped["source_too_long"] = int(long_src.sum())
            drop |= long_src
        elif long_tgt is not None:
            dropped["target_too_long"] = int(long_tgt.sum())
            drop |= long_tgt
        if empty is not None:
            dropped["empty"] = int((empty & ~drop).sum())
            drop |= empty
        if o.strict and drop.any():
            first = int(np.flatnonzero(drop)[0])
            lengths = f"source {self._size(self.src_sizes, first)}, target {self._size(self.tgt_sizes, first)}"
            raise ConfigError(
                f"pair {first} of {self.describe()} is too long or empty ({lengths}; max_source_positions="
                f"{o.max_source_positions}, max_target_positions={o.max_target_positions}); "
                f"{int(drop.sum())} pairs in all — raise the limits or turn strict off to drop and count them"
            )
        dropped = {k: v for k, v in dropped.items() if v}
        return ~drop, FilterReport(n, n - int(drop.sum()), dropped)

    @staticmethod
    def _size(sizes: np.ndarray | None, i: int) -> str:
        return "-" if sizes is None else str(int(sizes[i]))

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
                self._windows[which] = _Windows.over(store)
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
        o = self.options
        is_src = which == "source"
        tokens, offsets = store.gather(np.asarray(indices, dtype=np.int64))
        prepend = o.prepend_src if is_src else o.prepend_tgt
        append_eos = (not is_src) and o.append_eos_to_target
        drop_eos = is_src and o.remove_eos_from_source
        n = len(offsets) - 1
        if prepend is None and not append_eos and not o.append_bos and not drop_eos:
            return SideRows(tokens, offsets, np.zeros(n, dtype=np.int64))
        raw_len = np.diff(offsets)
        nonempty = raw_len > 0
        last = np.full(n, -1, dtype=np.int64)
        first = np.full(n, -1, dtype=np.int64)
        last[nonempty] = tokens[offsets[1:][nonempty] - 1]
        first[nonempty] = tokens[offsets[:-1][nonempty]]
        lead_tok = np.full(n, prepend, dtype=np.int64) if prepend is not None else first
        tail_tok = np.where(nonempty, last, lead_tok) if prepend is not None else last
        add_eos = (tail_tok != o.eos) if append_eos else np.zeros(n, dtype=bool)
        lead_now = np.where((lead_tok == -1) & add_eos, o.eos, lead_tok)
        add_bos = (lead_now != o.bos) if o.append_bos else np.zeros(n, dtype=bool)
        cut_eos = (nonempty & (last == o.eos)) if drop_eos else np.zeros(n, dtype=bool)
        has_pre = prepend is not None
        shift = add_bos.astype(np.int64) + int(has_pre)
        body = raw_len - cut_eos
        out_len = shift + body + add_eos
        out_off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(out_len, out=out_off[1:])
        out = np.empty(
            int(out_off[-1]), dtype=np.result_type(tokens.dtype, np.min_scalar_type(max(o.bos, o.eos, prepend or 0)))
        )
        # stored tokens, minus a removed trailing </s>
        keep = np.ones(len(tokens), dtype=bool)
        if cut_eos.any():
            keep[offsets[1:][cut_eos] - 1] = False
            kept = tokens[keep]
        else:
            kept = tokens
        dest = np.arange(len(kept), dtype=np.int64) + np.repeat(
            out_off[:-1] + shift - np.concatenate([[0], np.cumsum(body)[:-1]]), body
        )
        out[dest] = kept
        rows_bos = np.flatnonzero(add_bos)
        out[out_off[:-1][rows_bos]] = o.bos
        if has_pre:
            out[out_off[:-1] + add_bos] = prepend
        rows_eos = np.flatnonzero(add_eos)
        out[out_off[1:][rows_eos] - 1] = o.eos
        return SideRows(out, out_off, shift)

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


def stamp_dir() -> Path:
    """Where :func:`open_store` remembers verified stores: ``$TOKENMILL_CACHE/verified`` or
    ``~/.cache/tokenmill/verified`` (``$XDG_CACHE_HOME`` honoured; :func:`tokenmill.fsutil.cache_root`)."""
    return cache_root() / "verified"


def _identity(prefix: str) -> str:
    parts = []
    for suffix in (".idx", ".bin"):
        path = Path(prefix + suffix).resolve()
        st = path.stat()
        parts.append(f"{path}|{st.st_size}|{st.st_ino}|{st.st_mtime_ns}|{st.st_ctime_ns}")
    return xxhash.xxh3_128_hexdigest("\n".join(parts).encode())


def open_store(prefix: str | os.PathLike[str], check_pointers: bool | None = None) -> IndexedDataset:
    """Open a token store, skipping the O(N) pointer scan for files already verified unchanged.

    The scan reads every pointer of the index (12 bytes per sentence, about 0.7 s at 20M pairs);
    once a store passes it, a stamp named by the files' identity (resolved path, size, inode,
    modification and change time of ``.idx`` and ``.bin``) is left in :func:`stamp_dir`, and later
    opens of the same unchanged files (a resumed run, every rank, every DataLoader worker) skip it.
    Header, sizes and the ``.bin`` length are checked on every open. True/False force the choice.
    """
    prefix = os.fspath(prefix)
    if check_pointers is not None:
        return IndexedDataset(prefix, check_pointers=check_pointers)
    try:
        stamp = stamp_dir() / _identity(prefix)
    except OSError:  # a missing file: let the store raise its own clear error
        return IndexedDataset(prefix)
    if stamp.exists():
        return IndexedDataset(prefix, check_pointers=False)
    store = IndexedDataset(prefix)
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    except OSError:  # a read-only cache: verify again next time
        pass
    return store


def _languages(root: Path, folder: Path, split: str, src: str | None, tgt: str | None) -> tuple[str, str]:
    if src is not None and tgt is not None:
        return src, tgt
    m_src, m_tgt = read_manifest_hints(root).language_pair or (None, None)
    if m_src and m_tgt and src in (None, m_src) and tgt in (None, m_tgt):
        return m_src, m_tgt
    contents = describe(folder)
    if contents.kind in ("monolingual", "megatron", "text", "empty") and not (src and tgt):
        what = (f"{folder} holds monolingual data ({split}.bin/.idx, no target language)"
                if Path(f"{folder / store_name(split, None, None, None)}.idx").exists() else contents.what())
        raise ConfigError(
            f"{what}: translation pairs need parallel data (prepare with --target-lang); language-model data is "
            "read by tokenmill.data.gpt_dataset"
        )
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


def _pair_prefix(folder: Path, split: str, src: str, tgt: str) -> str:
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


def _extra_splits(folder: Path, split: str, src: str, tgt: str) -> list[str]:
    """``{split}1``, ``{split}2``, ... up to the first one missing (fairseq's ``itertools.count`` loop)."""
    extra = []
    k = 1
    while _split_exists(folder, split_part(split, k), src, tgt):
        extra.append(split_part(split, k))
        k += 1
    return extra


def _alignment_store(
    folder: Path, split: str, src: str, tgt: str, check_pointers: bool | None
) -> IndexedDataset | None:
    for candidate in (folder / align_name(split, src, tgt), folder / AlignName(split).name):
        if Path(f"{candidate}.idx").exists():
            return open_store(candidate, check_pointers)
    return None
