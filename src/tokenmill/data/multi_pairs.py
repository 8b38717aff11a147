"""Many translation directions (and their shards) as one dataset of pairs with global ids.

One :class:`~tokenmill.data.pairs.PairDataset` per (direction, shard), each with that direction's
language tags (:mod:`tokenmill.data.multi_langtok`), laid end to end: global id ``g`` is pair
``g - offsets[p]`` of part ``p``. Parts are numbered direction by direction, shard by shard.

To the collaters (:func:`~tokenmill.batching.collate.collate_fairseq`,
:func:`~tokenmill.batching.collate.collate_opennmt`) and the
:class:`~tokenmill.loader.BatchIterator` the dataset looks like a ``PairDataset``: ``rows``,
``padded``, ``shift``, ``src_sizes[ids]``, ``options``, ``symbols``, ``fingerprint``... route a
batch of global ids to the parts it touches (one sort, then one call per part present in the
batch) and put the results back in the batch's row order. :class:`~tokenmill.batching.multi_collate.MultiCollate`
adds each row's ``direction`` (an index into :attr:`MultiPairDataset.directions`) to the collated batch.

Which pairs an epoch trains on (the shard of each direction, the sampled mix) is the planner's
job: :class:`~tokenmill.batching.sampled.SampledPlanner`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from tokenmill.data.multi_langtok import LangTokConfig
from tokenmill.data.multi_layout import DataPaths, Layout, discover, manifest_lang_token_format
from tokenmill.data.pairs import FilterReport, PairDataset, PairOptions, SideRows, open_store
from tokenmill.errors import ConfigError, FormatError, TokenmillError
from tokenmill.vocab.dictionary import Dictionary

MULTI_VERSION = 1
"""Bumped when the id layout or routing changes (enters the fingerprint)."""


class RoutedSizes:
    """One side's lengths over all parts, read at global ids without concatenating the parts' arrays."""

    def __init__(self, dataset: MultiPairDataset, which: str) -> None:
        self.dataset = dataset
        self.which = which

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, ids: Any) -> np.ndarray:
        ids = np.asarray(ids)
        if ids.ndim == 0:
            part, local = self.dataset.locate(ids.reshape(1))
            return self._of(int(part[0]))[int(local[0])]
        out = np.empty(len(ids), dtype=np.int32)
        for part, positions, local in self.dataset.groups(ids):
            out[positions] = self._of(part)[local]
        return out

    def _of(self, part: int) -> np.ndarray:
        sizes = self.dataset.parts[part].src_sizes if self.which == "source" else self.dataset.parts[part].tgt_sizes
        assert sizes is not None
        return sizes


class MultiPairDataset:
    """Translation directions, each in one or more shards, as one dataset of pairs with global ids.

    ``datasets`` maps each direction name (``src-tgt``) to its shards' datasets in rotation order
    (epoch ``e`` reads shard ``(e - 1) mod k``; see :meth:`active_parts`). The parts must agree on
    ``bos``/``pad``/``eos`` and on which sides exist; their other options (language tags, length
    limits) are their own. ``folders`` optionally names each shard (for reports).
    """

    def __init__(
        self,
        datasets: Mapping[str, Sequence[PairDataset]],
        *,
        folders: Mapping[str, Sequence[str]] | None = None,
        langtok: LangTokConfig | None = None,
        split: str = "train",
    ) -> None:
        if not datasets:
            raise ConfigError("a multilingual dataset needs at least one direction")
        self.directions: list[str] = list(datasets)
        self.split = split
        self.langtok = langtok
        self.shards: list[list[PairDataset]] = []
        self.parts: list[PairDataset] = []
        part_direction: list[int] = []
        for d, name in enumerate(self.directions):
            shards = list(datasets[name])
            if not shards:
                raise ConfigError(f"direction {name} has no shards (no data)")
            self.shards.append(shards)
            self.parts.extend(shards)
            part_direction.extend([d] * len(shards))
        self.folders: list[list[str]] = [
            list(folders[name]) if folders is not None else [f"shard {i}" for i in range(len(self.shards[d]))]
            for d, name in enumerate(self.directions)
        ]
        first = self.parts[0]
        for name, shards in zip(self.directions, self.shards, strict=True):
            for part in shards:
                o, f = part.options, first.options
                if (o.bos, o.pad, o.eos) != (f.bos, f.pad, f.eos):
                    raise ConfigError(
                        f"direction {name}: bos/pad/eos {(o.bos, o.pad, o.eos)} differ from {self.directions[0]}'s "
                        f"{(f.bos, f.pad, f.eos)}; every direction must use one dictionary"
                    )
                if (part.src is None, part.tgt is None) != (first.src is None, first.tgt is None):
                    raise ConfigError(f"direction {name}: every direction needs the same sides (source/target)")
        self.part_direction = np.asarray(part_direction, dtype=np.int64)
        self.part_shard = np.concatenate([np.arange(len(s), dtype=np.int64) for s in self.shards])
        self.offsets = np.zeros(len(self.parts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in self.parts], out=self.offsets[1:])
        self.part_start = np.zeros(len(self.directions) + 1, dtype=np.int64)
        np.cumsum([len(s) for s in self.shards], out=self.part_start[1:])
        self.options = PairOptions(bos=first.options.bos, pad=first.options.pad, eos=first.options.eos)
        """Shared special ids (the per-direction options live on the parts)."""
        self.src_sizes: RoutedSizes | None = RoutedSizes(self, "source") if first.src is not None else None
        self.tgt_sizes: RoutedSizes | None = RoutedSizes(self, "target") if first.tgt is not None else None
        self.layout: Layout | None = None
        """Where the data came from (set by :meth:`from_dir`)."""
        self.align = None
        """Word alignments are not carried through the multilingual dataset."""
        self._fingerprint: str | None = None

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_dir(
        cls,
        paths: DataPaths,
        split: str = "train",
        directions: Sequence[str] | None = None,
        *,
        langtok: LangTokConfig | None = None,
        options: PairOptions | None = None,
        first_shard_only: bool | None = None,
        check_pointers: bool | None = None,
    ) -> MultiPairDataset:
        """Open ``split`` of a multilingual data directory (``data_bin`` with ``shardNNN/``), a
        fairseq ``a:b:c`` string or a list of folders.

        ``directions``: ``src-tgt`` names (default: all found; see
        :func:`~tokenmill.data.multi_layout.discover`). ``langtok``: language tags (default
        :class:`LangTokConfig()`, NLLB's, with the token format ``manifest.json`` records;
        ``LangTokConfig(None, False)`` for none). ``options``:
        the per-pair options every direction shares (length limits, ...). Non-training splits read
        the first shard only (``first_shard_only`` overrides).
        """
        layout = discover(paths, split, directions, first_shard_only=first_shard_only)
        if langtok is None:  # NLLB's tags, in the format prepare recorded
            langtok = LangTokConfig(template=manifest_lang_token_format(layout.root) or LangTokConfig.template)
        base = options or PairOptions()
        dictionaries = _Dictionaries(layout)
        datasets: dict[str, list[PairDataset]] = {}
        folders: dict[str, list[str]] = {}
        ensure_open_files(4 * sum(len(files.shards) for files in layout.directions))
        for files in layout.directions:
            src_dict = dictionaries.get(files.src, files.name) if langtok.active else None
            tgt_dict = dictionaries.get(files.tgt, files.name) if langtok.active else None
            direction_options = langtok.options_for(base, files.src, files.tgt, src_dict, tgt_dict)
            parts = []
            for shard, prefix in zip(files.shards, files.prefixes, strict=True):
                folder = layout.folders[shard]
                try:
                    src = open_store(f"{prefix}.{files.src}", check_pointers)
                    tgt = open_store(f"{prefix}.{files.tgt}", check_pointers)
                    parts.append(
                        PairDataset(
                            src, tgt, direction_options, src_lang=files.src, tgt_lang=files.tgt, directory=folder
                        )
                    )
                except TokenmillError as error:
                    raise type(error)(f"direction {files.name}, shard folder {folder}: {error}") from None
            datasets[files.name] = parts
            folders[files.name] = [layout.folders[s].name for s in files.shards]
        dictionaries.check_shared()
        dataset = cls(datasets, folders=folders, langtok=langtok, split=split)
        dataset.layout = layout
        return dataset

    # ---------------------------------------------------------------- ids
    def __len__(self) -> int:
        return int(self.offsets[-1])

    def locate(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(part, local index) of each global id."""
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= len(self)):
            bad = int(ids[(ids < 0) | (ids >= len(self))][0])
            raise IndexError(f"pair id {bad} is outside this dataset of {len(self)} pairs")
        part = np.searchsorted(self.offsets, ids, side="right") - 1
        return part, ids - self.offsets[part]

    def groups(self, ids: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """``(part, positions in ids, local indices)`` for each part the ids touch (one stable sort)."""
        part, local = self.locate(ids)
        if len(part) == 0:
            return
        if int(part.min()) == int(part.max()):
            yield int(part[0]), np.arange(len(part)), local
            return
        order = np.argsort(part, kind="stable")
        ordered = part[order]
        cuts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
        for begin, end in zip(np.r_[0, cuts], np.r_[cuts, len(order)], strict=True):
            positions = order[begin:end]
            yield int(ordered[begin]), positions, local[positions]

    def direction_of(self, ids: Any) -> np.ndarray:
        """Direction index (into :attr:`directions`) of each global id."""
        part, _ = self.locate(np.asarray(ids))
        return self.part_direction[part]

    def part_index(self, direction: int | str, shard: int) -> int:
        """The part holding ``shard`` (position in the direction's shard list) of ``direction``."""
        d = self.directions.index(direction) if isinstance(direction, str) else direction
        if not 0 <= shard < len(self.shards[d]):
            raise IndexError(f"direction {self.directions[d]} has {len(self.shards[d])} shards, not {shard + 1}")
        return int(self.part_start[d]) + shard

    def active_parts(self, data_epoch: int) -> np.ndarray:
        """The part each direction reads in ``data_epoch`` (1-based): shard ``(e - 1) mod k_d``."""
        if data_epoch < 1:
            raise ValueError(f"epochs count from 1, got {data_epoch}")
        counts = np.diff(self.part_start)
        return self.part_start[:-1] + (data_epoch - 1) % counts

    # ---------------------------------------------------------------- what collate and iterators read
    @property
    def filter_report(self) -> FilterReport:
        """The length filter over every part (all shards together)."""
        dropped: dict[str, int] = {}
        for part in self.parts:
            for reason, count in part.filter_report.dropped.items():
                dropped[reason] = dropped.get(reason, 0) + count
        kept = sum(part.filter_report.num_kept for part in self.parts)
        return FilterReport(len(self), kept, dropped)

    def describe(self) -> str:
        """Short name for messages."""
        where = ""
        if self.layout is not None:
            where = f" in {self.layout.root or ':'.join(map(str, self.layout.folders))}"
        return f"{self.split} data of {len(self.directions)} directions{where}"

    def fingerprint(self) -> str:
        """Hash of the directions, their shards' lengths and options (what a plan depends on)."""
        if self._fingerprint is None:
            h = xxhash.xxh3_128()
            h.update(json.dumps({"v": MULTI_VERSION, "directions": self.directions}).encode())
            for shards in self.shards:
                h.update(json.dumps([part.fingerprint() for part in shards]).encode())
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def content(self) -> dict[str, str]:
        """Each store's content identity (:meth:`PairDataset.content`) as ``direction/shard/side``."""
        return {f"{name}/{i}/{side}": value for name, shards in zip(self.directions, self.shards, strict=True)
                for i, part in enumerate(shards) for side, value in part.content().items()}

    def content_stores(self) -> dict[str, str]:
        """The store each :meth:`content` name stands for (for messages)."""
        return {f"{name}/{i}/{side}": path for name, shards in zip(self.directions, self.shards, strict=True)
                for i, part in enumerate(shards) for side, path in part.content_stores().items()}

    def rows(self, indices: Any, which: str) -> SideRows | None:
        """Rows of global ids on one side, with each direction's options applied, in the given order."""
        ids = np.asarray(indices, dtype=np.int64)
        pieces = [(positions, self.parts[p].rows(local, which)) for p, positions, local in self.groups(ids)]
        if not pieces:
            return self.parts[0].rows(ids, which)
        if pieces[0][1] is None:
            return None
        if len(pieces) == 1:
            return pieces[0][1]
        n = len(ids)
        lengths = np.empty(n, dtype=np.int64)
        shift = np.empty(n, dtype=np.int64)
        for positions, got in pieces:
            assert got is not None
            lengths[positions] = got.lengths
            shift[positions] = got.shift
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        tokens = np.empty(int(offsets[-1]), dtype=np.result_type(*(got.tokens.dtype for _, got in pieces)))  # type: ignore[union-attr]
        for positions, got in pieces:
            assert got is not None
            got_lengths = got.lengths
            dest = np.repeat(offsets[positions] - got.offsets[:-1], got_lengths)
            dest += np.arange(len(got.tokens), dtype=np.int64)
            tokens[dest] = got.tokens
        return SideRows(tokens, offsets, shift)

    def padded(
        self, indices: Any, which: str, pad: int, *, left: bool = False, multiple: int = 1, dtype: Any = np.int64
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Rows of global ids on one side as a padded matrix and their lengths (as ``PairDataset.padded``).

        Each part pads its own rows; they are copied into one matrix as wide as the widest part.
        """
        ids = np.asarray(indices, dtype=np.int64)
        pieces = [
            (positions, self.parts[p].padded(local, which, pad, left=left, multiple=multiple, dtype=dtype))
            for p, positions, local in self.groups(ids)
        ]
        if not pieces:
            return self.parts[0].padded(ids, which, pad, left=left, multiple=multiple, dtype=dtype)
        if pieces[0][1] is None:
            return None
        if len(pieces) == 1:
            return pieces[0][1]
        width = max(got[0].shape[1] for _, got in pieces)  # type: ignore[index]
        out = np.full((len(ids), width), pad, dtype=dtype)
        lengths = np.empty(len(ids), dtype=np.int64)
        for positions, got in pieces:
            matrix, got_lengths = got  # type: ignore[misc]
            columns = slice(width - matrix.shape[1], width) if left else slice(0, matrix.shape[1])
            out[positions, columns] = matrix
            lengths[positions] = got_lengths
        return out, lengths

    def shift(self, indices: Any, which: str) -> np.ndarray:
        """Tokens each row's options put before its stored tokens (the language tag counts)."""
        ids = np.asarray(indices, dtype=np.int64)
        out = np.zeros(len(ids), dtype=np.int64)
        for p, positions, local in self.groups(ids):
            out[positions] = self.parts[p].shift(local, which)
        return out

    def alignment_pairs(self, indices: Any) -> None:
        """Word alignments are not carried (fairseq's multilingual task has none either)."""
        return None

    def symbols(self, which: str) -> np.ndarray:
        """The shared dictionary as strings (every direction uses the same one)."""
        return self.parts[0].symbols(which)

    def __getitem__(self, i: int) -> dict[str, Any]:
        """One pair: ``id`` (global), ``source``, ``target`` (with tags) and ``direction`` (its name)."""
        (part,), (local,) = self.locate(np.array([int(i)]))
        item = self.parts[int(part)][int(local)]
        item["id"] = int(i)
        item["direction"] = self.directions[int(self.part_direction[part])]
        return item

    def __getstate__(self) -> dict[str, Any]:  # parts pickle by path (PairDataset.__getstate__)
        state = dict(self.__dict__)
        state.pop("src_sizes")
        state.pop("tgt_sizes")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        first = self.parts[0]
        self.src_sizes = RoutedSizes(self, "source") if first.src is not None else None
        self.tgt_sizes = RoutedSizes(self, "target") if first.tgt is not None else None


class _Dictionaries:
    """Dictionaries of a layout, each file read once; checks that all directions share one."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.loaded: dict[Path, Dictionary] = {}
        self.digests: dict[Path, str] = {}

    def get(self, lang: str, direction: str) -> Dictionary | None:
        path = self.layout.dictionary_file(lang)
        if path is None:
            return None
        if path not in self.loaded:
            try:
                self.loaded[path] = Dictionary.load(path)
            except OSError as error:
                raise TokenmillError(f"direction {direction}: cannot read {path} ({error})") from None
            self.digests[path] = xxhash.xxh3_64_hexdigest(path.read_bytes())
        return self.loaded[path]

    def check_shared(self) -> None:
        if len(set(self.digests.values())) > 1:
            listing = ", ".join(str(p) for p in sorted(self.digests))
            raise FormatError(
                f"the dictionaries {listing} differ; a multilingual data set uses one shared dictionary "
                "(dict.txt copied as dict.{lang}.txt) — prepare all directions together"
            )


def ensure_open_files(needed: int, margin: int = 256) -> None:
    """Make room for ``needed`` more open files (every memory-mapped file keeps a descriptor).

    Each (direction, shard) maps four files (``.bin`` and ``.idx`` per side): 200 directions in 30
    shards need 24,000 descriptors, past the usual soft limit of 1,024. The soft limit is raised
    up to the hard limit when that is enough; otherwise the error says how many are needed.
    """
    try:
        import resource
    except ImportError:  # not on POSIX: nothing to adjust
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = needed + margin
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    if hard != resource.RLIM_INFINITY and hard < wanted:
        raise ConfigError(
            f"opening these directions and shards maps {needed} files, but this process may open at most {hard} "
            f"(hard limit); raise it (`ulimit -Hn {wanted}` as root, or the container's nofile limit) or open fewer "
            "directions/shards at once (directions=...)"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
