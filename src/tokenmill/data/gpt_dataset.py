"""Packed language-model samples over a token store, Megatron's GPTDataset semantics plus boundaries.

Sample ``i`` is the ``shuffle_index[i]``-th row of the GPT sample index (see ``gpt_index``): the
``seq_length`` (+1 with the extra token) tokens starting at that row's document position and
offset, running across document boundaries. Out come, like megatron-core's ``GPTDataset``:

* ``tokens`` (seq_length) inputs and ``labels`` (seq_length) the next tokens;
* ``loss_mask`` (float32): 0 where the label is padding (or the last label without the extra
  token), and where the input is EOD if asked;
* ``position_ids``: 0..seq_length-1, or restarting at each document if asked;

and what Megatron does not give: ``cu_seqlens``, the start of every document piece in the row
plus the row end (int32, the cumulative lengths flash-attention's varlen kernels take), and
``max_seqlen``. In a batch, ``cu_seqlens`` runs over the flattened (batch * seq_length) tokens.

Boundaries come from the index itself (``boundaries="documents"``, works with or without EOD
tokens) or from EOD tokens in the row (``"eod"``, Megatron's ``reset_position_ids`` rule). For
documents that end in EOD the two agree, including the padding of a kept partial last sample,
which starts a segment of its own. Batches are gathered in one vectorized read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
import xxhash

from tokenmill.cache import CacheLike, array_cache, fingerprint_array
from tokenmill.data.blending import SPLIT_NAMES, split_document_ranges
from tokenmill.data.gpt_index import GPTIndex, GPTIndexConfig, build_gpt_index
from tokenmill.errors import ConfigError
from tokenmill.store.identity import content_id

SLICE_COPY_MIN_PIECE = 256
"""Average piece length (tokens) from which a batch is read as one slice per piece rather than one gather:
a slice costs ~0.6 us of Python, a gathered token ~3.5 ns (measured at seq_length 2048)."""

if TYPE_CHECKING:
    from tokenmill.store import IndexedDataset


@dataclass(frozen=True)
class GPTDatasetConfig:
    """How samples are cut (the index settings) and what each sample carries."""

    seq_length: int
    """Tokens per row."""
    seed: int = 1234
    """Shuffle seed (Megatron's random_seed)."""
    num_samples: int | None = None
    """Minimum samples wanted (epochs are added as needed); None: one epoch or ``num_epochs``."""
    num_epochs: int | None = None
    """Exactly this many epochs instead of ``num_samples``."""
    add_extra_token: bool = True
    """Read seq_length + 1 tokens so inputs and labels are both seq_length (Megatron's default)."""
    drop_last_partial_sequence: bool = True
    """Drop the final short sample; when kept it is padded with ``pad_id`` and its padding masked."""
    eod_id: int | None = None
    """End-of-document token id; needed by ``eod_mask_loss`` and ``boundaries="eod"``."""
    eod_mask_loss: bool = False
    """Zero the loss where the input token is EOD (Megatron's eod_mask_loss)."""
    reset_position_ids: bool = False
    """Restart position ids at every document boundary (Megatron's reset_position_ids)."""
    boundaries: Literal["documents", "eod"] = "documents"
    """Where documents split a row: the index's own document ends, or after each EOD token."""
    pad_id: int = 0
    """Token and label id written into the padding of a kept partial sample (Megatron writes 0)."""

    def __post_init__(self) -> None:
        self.index_config()  # validates the index settings
        if self.boundaries not in ("documents", "eod"):
            raise ConfigError(f"boundaries must be 'documents' or 'eod', got {self.boundaries!r}")
        if self.eod_id is None and (self.eod_mask_loss or self.boundaries == "eod"):
            raise ConfigError("eod_mask_loss and boundaries='eod' need eod_id (the end-of-document token id)")

    def index_config(self) -> GPTIndexConfig:
        """The settings that determine the index arrays."""
        return GPTIndexConfig(
            seq_length=self.seq_length,
            seed=self.seed,
            num_samples=self.num_samples,
            num_epochs=self.num_epochs,
            add_extra_token=self.add_extra_token,
            drop_last_partial_sequence=self.drop_last_partial_sequence,
        )


def _select_documents(
    documents: tuple[int, int] | Sequence[int] | np.ndarray | None, num_items: int
) -> tuple[np.ndarray | None, object]:
    """Item ids to draw from and a JSON description of them for the cache key."""
    if documents is None:
        return None, "all"
    if isinstance(documents, tuple) and len(documents) == 2:
        begin, end = int(documents[0]), int(documents[1])
        if not 0 <= begin < end <= num_items:
            raise ConfigError(f"document range [{begin}, {end}) is empty or outside the store's {num_items} items")
        return np.arange(begin, end, dtype=np.int32 if end <= 2**31 - 1 else np.int64), ["range", begin, end]
    array = np.asarray(documents)
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise ConfigError("documents must be None, a (begin, end) range or a 1-D array of item ids")
    return array, ["ids", fingerprint_array(array)]


class GPTDataset:
    """Packed LM samples over ``dataset`` (a ``tokenmill.store.IndexedDataset``).

    ``documents``: the items to draw from — None (all), a ``(begin, end)`` range or an id array
    (see ``for_split``). ``cache``: where the index arrays are cached and shared between
    processes (built once, then memory-mapped): True (the default) for the default folder, a folder,
    or False to build them in memory (:mod:`tokenmill.cache`).
    """

    def __init__(
        self,
        dataset: IndexedDataset,
        config: GPTDatasetConfig,
        *,
        documents: tuple[int, int] | Sequence[int] | np.ndarray | None = None,
        cache: CacheLike = True,
    ) -> None:
        self.dataset = dataset
        self.config = config
        sizes = dataset.sizes
        selected, described = _select_documents(documents, len(sizes))
        self._described = described
        self._fingerprint: str | None = None
        self._content: dict[str, str] | None = None
        index_config = config.index_config()
        store = array_cache(cache)
        settings = {**index_config.settings(), "sizes": fingerprint_array(sizes), "documents": described}

        def build() -> dict[str, np.ndarray]:
            index: GPTIndex = build_gpt_index(sizes, index_config, selected)
            return {
                "document_index": index.document_index,
                "sample_index": index.sample_index,
                "shuffle_index": index.shuffle_index,
            }

        entry = store.get_or_build("gpt", settings, build, description={"store": str(getattr(dataset, "prefix", ""))})
        self.document_index = entry.arrays["document_index"]
        self.sample_index = entry.arrays["sample_index"]
        self.shuffle_index = entry.arrays["shuffle_index"]
        self.cache_path: Path | None = entry.path
        self._tokens = self._map_tokens(dataset)
        self._itemsize = np.dtype(dataset.dtype).itemsize

    @classmethod
    def for_split(
        cls,
        dataset: IndexedDataset,
        config: GPTDatasetConfig,
        split: str,
        name: str = "train",
        *,
        cache: CacheLike = True,
    ) -> GPTDataset | None:
        """The dataset over one split of a Megatron split string such as ``"969,30,1"``; None if empty."""
        if name not in SPLIT_NAMES:
            raise ConfigError(f"split name must be one of {', '.join(SPLIT_NAMES)}, got {name!r}")
        document_range = split_document_ranges(split, len(dataset.sizes))[SPLIT_NAMES.index(name)]
        if document_range is None or document_range[0] >= document_range[1]:
            return None
        return cls(dataset, config, documents=document_range, cache=cache)

    @staticmethod
    def _map_tokens(dataset: IndexedDataset) -> np.ndarray:
        bin_file = Path(dataset.bin_file)
        if bin_file.stat().st_size == 0:
            return np.empty(0, dtype=dataset.dtype)
        # a plain ndarray view over the map: np.memmap's per-index Python hooks cost ~12% of a batch
        return np.memmap(bin_file, dtype=dataset.dtype, mode="r").view(np.ndarray)

    def __len__(self) -> int:
        return int(self.shuffle_index.shape[0])

    def fingerprint(self) -> str:
        """Hash of the document lengths, the chosen documents and every setting: what the samples (and so
        a batch plan or a resumed loader state) depend on."""
        if self._fingerprint is None:
            digest = xxhash.xxh3_128()
            identity = {"config": asdict(self.config), "documents": self._described,
                        "sizes": fingerprint_array(self.dataset.sizes), "samples": len(self)}
            digest.update(json.dumps(identity, sort_keys=True).encode())
            self._fingerprint = digest.hexdigest()
        return self._fingerprint

    def content(self) -> dict[str, str]:
        """What the samples hold, beside :meth:`fingerprint` (which knows the lengths only): this dataset's
        fingerprint -> its store's content identity (:func:`~tokenmill.store.identity.content_id`). A loader
        state records it, so a resume on another corpus with the same lengths is refused."""
        if self._content is None:
            prefix = getattr(self.dataset, "prefix", None)
            self._content = {} if prefix is None else {self.fingerprint(): content_id(prefix)}
        return self._content

    def content_stores(self) -> dict[str, str]:
        """The store each :meth:`content` name stands for (for messages)."""
        return {k: str(self.dataset.prefix) for k in self.content()}

    def describe(self) -> str:
        """Short name for messages: the store prefix."""
        return f"GPT samples of {getattr(self.dataset, 'prefix', '?')}"

    # ------------------------------------------------------------------ reading rows

    def _rows(self, sample_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Raw rows (B, seq_length + extra) padded with pad_id, their real lengths, and the column and
        row of every document piece's first token. Full rows keep the store's dtype (the caller casts
        once, into the arrays it returns); padded rows are int64.

        A row is the pieces of consecutive documents between its begin and end positions in the
        sample index; every piece is whole except the first (starts at the begin offset) and the last
        (ends at the end offset). Pieces of a few hundred tokens or more (the usual case) are copied as
        slices of the map, one per piece; short ones by one gather of every token of the batch.
        """
        config = self.config
        extra = int(config.add_extra_token)
        width = config.seq_length + extra
        count = len(sample_ids)
        rows = self.shuffle_index[sample_ids].astype(np.int64)
        begin = self.sample_index[rows].astype(np.int64)
        end = self.sample_index[rows + 1].astype(np.int64)
        pieces = end[:, 0] - begin[:, 0] + 1
        last = np.cumsum(pieces)
        first = last - pieces
        last -= 1
        owner = np.repeat(np.arange(count), pieces)
        # Document position of every piece: the row's first position plus the piece's rank in the row.
        position = np.arange(len(owner), dtype=np.int64) + np.repeat(begin[:, 0] - first, pieces)
        documents = self.document_index[position].astype(np.int64)
        start = np.zeros(len(owner), dtype=np.int64)
        start[first] = begin[:, 1]
        stop = self.dataset.sizes[documents].astype(np.int64)
        stop[last] = end[:, 1] + extra
        lengths = np.maximum(stop - start, 0, out=stop)
        # Column of each piece inside its row: tokens before it in the same row.
        before = np.cumsum(lengths) - lengths
        column = before - np.repeat(before[first], pieces)
        real = np.add.reduceat(lengths, first) if len(owner) else np.zeros(count, dtype=np.int64)
        # One gather for every token of the batch.
        source = self.dataset.pointers[documents] // self._itemsize + start
        total = int(before[-1] + lengths[-1]) if len(owner) else 0
        if total == count * width and len(owner) and len(owner) * SLICE_COPY_MIN_PIECE <= total:
            tokens = self._tokens
            pieces_text = [tokens[at : at + n] for at, n in zip(source.tolist(), lengths.tolist(), strict=True)]
            return np.concatenate(pieces_text).reshape(count, width), real, column, owner
        positions = np.repeat(source - before, lengths)
        positions += np.arange(total, dtype=np.int64)
        if total == count * width:
            return self._tokens[positions].reshape(count, width), real, column, owner
        text = np.full((count, width), config.pad_id, dtype=np.int64)
        target_rows = np.repeat(owner, lengths)
        target_cols = np.arange(total, dtype=np.int64) - np.repeat(before - column, lengths)
        text[target_rows, target_cols] = self._tokens[positions]
        return text, real, column, owner

    def _sample_ids(self, sample_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """``sample_ids`` as a flat int64 array, negative ones counted from the end; IndexError when out of range."""
        ids = np.asarray(sample_ids, dtype=np.int64).reshape(-1)
        n = len(self)
        if ids.size:
            low, high = int(ids.min()), int(ids.max())
            if low < -n or high >= n:
                raise IndexError(f"sample index out of range for a GPTDataset of {n} samples")
            if low < 0:
                ids = np.where(ids < 0, ids + n, ids)
        return ids

    def get_batch(self, sample_ids: Sequence[int] | np.ndarray) -> dict[str, np.ndarray | int]:
        """Samples ``sample_ids`` as 2-D arrays (batch, seq_length), plus flat ``cu_seqlens``/``max_seqlen``."""
        ids = self._sample_ids(sample_ids)
        config = self.config
        length = config.seq_length
        text, real, column, owner = self._rows(ids)
        count = len(ids)
        if config.add_extra_token:
            tokens, labels = text[:, :-1].astype(np.int64), text[:, 1:].astype(np.int64)
        else:
            tokens = text.astype(np.int64, copy=False)
            labels = np.empty_like(tokens)
            labels[:, :-1] = text[:, 1:]
            labels[:, -1] = config.pad_id
        columns = np.arange(length, dtype=np.int64)
        if int(real.min(initial=length + 1)) > length:  # every label is real (the usual, full rows)
            loss_mask = np.ones((count, length), dtype=np.float32)
        else:
            loss_mask = (columns[None, :] + 1 < real[:, None]).astype(np.float32)
        if config.eod_mask_loss:
            loss_mask[tokens == config.eod_id] = 0.0
        # Where a new segment (document piece, or padding) begins inside each input row.
        if config.boundaries == "documents":
            # Piece starts inside the row, and the padding after a kept partial sample's last document.
            inside = column < length
            flat = owner[inside] * length + column[inside]  # ascending: pieces come in row and column order
            padded = np.flatnonzero(real < length)
            if len(padded):
                flat = np.concatenate((flat, padded * length + real[padded]))
            if len(padded) or not bool((flat[1:] > flat[:-1]).all()):  # out of order, or empty pieces
                flat = np.unique(flat)
        else:
            real_input = columns[None, :-1] < real[:, None]  # ignore padding even if pad_id == eod_id
            eod_rows, eod_cols = np.nonzero((tokens[:, :-1] == config.eod_id) & real_input)
            flat = np.union1d(np.arange(count, dtype=np.int64) * length, eod_rows * length + eod_cols + 1)
        if config.reset_position_ids:
            starts = np.zeros((count, length), dtype=bool)
            starts.reshape(-1)[flat] = True
            segment_start = np.maximum.accumulate(np.where(starts, columns[None, :], 0), axis=1)
            position_ids = columns[None, :] - segment_start
        else:
            position_ids = np.empty((count, length), dtype=np.int64)
            position_ids[:] = columns
        cu_seqlens = np.empty(len(flat) + 1, dtype=np.int32)
        cu_seqlens[:-1] = flat
        cu_seqlens[-1] = count * length
        max_seqlen = int((cu_seqlens[1:] - cu_seqlens[:-1]).max()) if count else 0
        return {
            "tokens": tokens,
            "labels": labels,
            "loss_mask": loss_mask,
            "position_ids": position_ids,
            "cu_seqlens": cu_seqlens,
            "max_seqlen": max_seqlen,
        }

    def __getitem__(self, i: int) -> dict[str, np.ndarray | int]:
        """One sample: 1-D ``tokens``, ``labels``, ``loss_mask``, ``position_ids`` and its ``cu_seqlens``."""
        batch = self.get_batch([int(i)])
        return {
            key: value[0] if key in ("tokens", "labels", "loss_mask", "position_ids") else value
            for key, value in batch.items()
        }

    def __repr__(self) -> str:
        return (
            f"GPTDataset({len(self)} samples of {self.config.seq_length} tokens, "
            f"{len(self.document_index)} document positions, cache={self.cache_path})"
        )


__all__ = ["GPTDataset", "GPTDatasetConfig"]
