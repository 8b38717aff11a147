"""Streaming writer for ``.bin``/``.idx`` token stores, byte-exact in fairseq's or Megatron's layout.

Tokens go straight to a temporary ``.bin`` through a buffered file; only the per-item sizes (int32)
and document boundaries (int64) are kept, in growable numpy arrays. ``finalize`` writes the
``.idx`` (pointers are derived from sizes in bounded blocks) and renames both files into place,
``.idx`` last, so an interrupted writer never leaves a pair that looks valid.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

import numpy as np

from tokenmill.errors import FormatError
from tokenmill.fsutil import commit, temp_name
from tokenmill.store.format import MAGIC, VERSION, Layout, dtype_code, token_dtype
from tokenmill.store.reader import IndexedDataset, split_prefix

_POINTER_BLOCK = 1 << 18  # items per block when writing sizes and pointers (2 MB of int64)
_WRITE_BUFFER = 8 << 20
SPILL_ITEMS = 1 << 20
"""Sizes (and document starts) a writer keeps in memory; more go to a temporary file, in order."""


class SpilledArray:
    """An append-only array that keeps at most ``memory_items`` entries in memory and spills the rest, in
    order, to a temporary file: a writer's per-item sizes and document starts stay flat in memory however
    many items a store gets (they are read back block by block when the index is written)."""

    def __init__(self, dtype: np.dtype | type, spill: Path, memory_items: int | None = None) -> None:
        self.dtype = np.dtype(dtype)
        self._buffer = np.empty(memory_items or SPILL_ITEMS, dtype=self.dtype)
        self._buffered = 0
        self._spill_path = spill
        self._spill: BinaryIO | None = None
        self._spilled = 0

    def _flush(self) -> None:
        if self._spill is None:  # a small buffer: a whole in-memory block is written past it, not copied
            self._spill = open(self._spill_path, "wb")  # closed in remove()
        self._spill.write(self._buffer[: self._buffered].data)
        self._spilled += self._buffered
        self._buffered = 0

    def append(self, value: int) -> None:
        self.extend(np.array([value], dtype=self.dtype))

    def extend(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=self.dtype)
        while len(values):
            room = len(self._buffer) - self._buffered
            if room == 0:
                self._flush()
                continue
            take = values[:room]
            self._buffer[self._buffered : self._buffered + len(take)] = take
            self._buffered += len(take)
            values = values[room:]

    def __len__(self) -> int:
        return self._spilled + self._buffered

    def blocks(self, size: int) -> Iterator[np.ndarray]:
        """Every entry in order, ``size`` at a time (the spilled ones read back from the file)."""
        if self._spill is not None:
            self._spill.flush()
            with open(self._spill_path, "rb") as spilled:
                for _ in range(0, self._spilled, size):
                    yield np.fromfile(spilled, dtype=self.dtype, count=size)
        for start in range(0, self._buffered, size):
            yield self._buffer[start : min(start + size, self._buffered)]

    def remove(self) -> None:
        """Close and delete the spill file (after the index is written, or when the writer aborts)."""
        if self._spill is not None:
            self._spill.close()
            self._spill = None
        with contextlib.suppress(FileNotFoundError):
            self._spill_path.unlink()


class IndexedWriter:
    """Write token items (and, for Megatron, document boundaries) to ``prefix.bin``/``prefix.idx``.

    Give ``dtype`` or ``vocab_size`` (uint16 below 65500 entries, else int32). Use as a context
    manager: a clean exit finalizes, an exception removes the temporaries.
    """

    def __init__(
        self,
        prefix: str | os.PathLike[str],
        *,
        layout: Layout | str = Layout.FAIRSEQ,
        dtype: np.dtype | type | str | None = None,
        vocab_size: int | None = None,
    ) -> None:
        if dtype is None and vocab_size is None:
            raise ValueError("IndexedWriter needs dtype or vocab_size")
        self.prefix = split_prefix(prefix)
        self.layout = Layout(layout)
        self.dtype = np.dtype(dtype) if dtype is not None else token_dtype(int(vocab_size))  # type: ignore[arg-type]
        self._code = dtype_code(self.layout, self.dtype)
        self._integer = np.issubdtype(self.dtype, np.integer)
        self._limits = np.iinfo(self.dtype) if self._integer else None
        self.bin_file = Path(f"{self.prefix}.bin")
        self.idx_file = Path(f"{self.prefix}.idx")
        self.bin_file.parent.mkdir(parents=True, exist_ok=True)
        self._bin_tmp = temp_name(self.bin_file)
        self._idx_tmp = temp_name(self.idx_file)
        self._bin = open(self._bin_tmp, "wb", buffering=_WRITE_BUFFER)
        self._sizes = SpilledArray(np.int32, temp_name(self.idx_file.with_name(self.idx_file.name + ".sizes")))
        self._documents = SpilledArray(np.int64, temp_name(self.idx_file.with_name(self.idx_file.name + ".docs")))
        self._documents.append(0)
        self.num_tokens = 0
        self._closed = False

    # ---------------------------------------------------------------- adding
    def _cast(self, tokens: np.ndarray) -> np.ndarray:
        if tokens.dtype == self.dtype:
            return tokens
        if tokens.size and self._limits is not None:
            low, high = tokens.min(), tokens.max()
            if low < self._limits.min or high > self._limits.max:
                raise ValueError(
                    f"{self.bin_file}: token ids span [{low}, {high}] but {self.dtype} holds "
                    f"[{self._limits.min}, {self._limits.max}]; pass a larger vocab_size/dtype"
                )
        return tokens.astype(self.dtype, copy=False)

    def add_item(self, tokens: np.ndarray | list[int]) -> None:
        """Append one item (a 1-D sequence of token ids)."""
        array = self._cast(np.asarray(tokens).reshape(-1))
        self._bin.write(np.ascontiguousarray(array).data)
        self._sizes.append(len(array))
        self.num_tokens += len(array)

    def add_items(self, flat_tokens: np.ndarray, lengths: np.ndarray, *, documents: bool = False) -> None:
        """Append many items at once: ``flat_tokens`` concatenated, ``lengths`` per item.

        ``documents=True`` also makes every item its own document (Megatron layout).
        """
        lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
        flat = np.asarray(flat_tokens).reshape(-1)
        if lengths.size and int(lengths.min()) < 0:
            raise ValueError("item lengths must be non-negative")
        if int(lengths.sum()) != len(flat):
            raise ValueError(f"lengths sum to {int(lengths.sum())} but {len(flat)} tokens were given")
        if lengths.size and int(lengths.max()) > np.iinfo(np.int32).max:
            raise ValueError("an item longer than 2^31-1 tokens cannot be indexed")
        self._bin.write(np.ascontiguousarray(self._cast(flat)).data)
        base = len(self._sizes)
        self._sizes.extend(lengths.astype(np.int32))
        self.num_tokens += len(flat)
        if documents:
            self._documents.extend(np.arange(base + 1, len(self._sizes) + 1, dtype=np.int64))

    def add_documents(self, flat_tokens: np.ndarray, lengths: np.ndarray) -> None:
        """Append many documents of one item each (Megatron layout), where an item of length 0 is a document
        with no item at all: what Megatron's ``preprocess_data`` writes for a document without ids (its
        document index repeats; no empty sequence is stored)."""
        lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
        filled = lengths > 0
        base = len(self._sizes)
        self.add_items(flat_tokens, lengths[filled])
        self._documents.extend(base + np.cumsum(filled, dtype=np.int64))

    def add_documents_of(self, flat_tokens: np.ndarray, lengths: np.ndarray, per_document: np.ndarray) -> None:
        """Append many documents (Megatron layout): items as :meth:`add_items`, document ``i`` made of the next
        ``per_document[i]`` of them; a document of 0 items repeats the document index, as megatron-core's
        ``IndexedDatasetBuilder.add_document`` does for a document without sequences."""
        ends = np.cumsum(np.asarray(per_document, dtype=np.int64))
        given = int(np.asarray(lengths).size)
        if (int(ends[-1]) if len(ends) else 0) != given:
            raise ValueError(f"the documents hold {int(ends[-1]) if len(ends) else 0} items; {given} were given")
        base = len(self._sizes)
        self.add_items(flat_tokens, lengths)
        self._documents.extend(base + ends)

    def end_document(self) -> None:
        """Close the current document (Megatron layout): everything since the last call is one document."""
        self._documents.append(len(self._sizes))

    def add_document(self, flat_tokens: np.ndarray, lengths: np.ndarray | None = None) -> None:
        """Append one document made of one item (or of several, given ``lengths``)."""
        flat = np.asarray(flat_tokens).reshape(-1)
        self.add_items(flat, np.array([len(flat)]) if lengths is None else lengths)
        self.end_document()

    def merge(self, prefix: str | os.PathLike[str]) -> None:
        """Append a finished store (a shard) without decoding it: bytes copied, index offset.

        Merging a fairseq-layout shard into a Megatron writer makes each of its items a document.
        """
        other = IndexedDataset(prefix)
        if other.dtype != self.dtype:
            raise FormatError(f"cannot merge {other.prefix} ({other.dtype}) into {self.prefix} ({self.dtype})")
        self._bin.flush()
        with open(other.bin_file, "rb") as source:
            shutil.copyfileobj(source, self._bin, _WRITE_BUFFER)
        base = len(self._sizes)
        self._sizes.extend(other.sizes)
        self.num_tokens += other.num_tokens
        if other.document_indices is not None:
            self._documents.extend(other.document_indices[1:] + base)
        else:
            self._documents.extend(np.arange(base + 1, base + len(other) + 1, dtype=np.int64))

    # ---------------------------------------------------------------- finishing
    def __len__(self) -> int:
        return len(self._sizes)

    def _write_index(self) -> None:
        n = len(self._sizes)
        with open(self._idx_tmp, "wb", buffering=_WRITE_BUFFER) as idx:
            idx.write(MAGIC)
            idx.write(np.array([VERSION], dtype="<u8").tobytes())
            idx.write(np.array([self._code], dtype="<u1").tobytes())
            idx.write(np.array([n], dtype="<u8").tobytes())
            if self.layout is Layout.MEGATRON:
                idx.write(np.array([len(self._documents)], dtype="<u8").tobytes())
            for block in self._sizes.blocks(_POINTER_BLOCK):
                idx.write(np.ascontiguousarray(block, dtype="<i4").data)
            carry = 0
            for sizes in self._sizes.blocks(_POINTER_BLOCK):
                block = sizes.astype(np.int64)
                pointers = np.empty_like(block)
                pointers[0] = carry
                np.cumsum(block[:-1], out=pointers[1:])
                pointers[1:] += carry
                pointers *= self.dtype.itemsize
                idx.write(pointers.astype("<i8", copy=False).data)
                carry += int(block.sum())
            if self.layout is Layout.MEGATRON:
                for block in self._documents.blocks(_POINTER_BLOCK):
                    idx.write(np.ascontiguousarray(block, dtype="<i8").data)

    def finalize(self) -> None:
        """Write the index and move both files into place atomically (``.idx`` last)."""
        if self._closed:
            return
        self._bin.close()
        try:
            self._write_index()
        finally:
            self._sizes.remove()
            self._documents.remove()
        self._closed = True
        commit(self._bin_tmp, self.bin_file)
        commit(self._idx_tmp, self.idx_file)

    def abort(self) -> None:
        """Drop everything written so far; the final paths are left untouched."""
        if self._closed:
            return
        self._bin.close()
        self._closed = True
        self._sizes.remove()
        self._documents.remove()
        for tmp in (self._bin_tmp, self._idx_tmp):
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    def __enter__(self) -> IndexedWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.finalize()
        else:
            self.abort()


def merge_stores(
    prefixes: list[str | os.PathLike[str]], output: str | os.PathLike[str], *, layout: Layout | str | None = None
) -> IndexedDataset:
    """Concatenate finished stores (shards) into ``output``; layout defaults to the first shard's."""
    if not prefixes:
        raise ValueError("merge_stores needs at least one input store")
    first = IndexedDataset(prefixes[0])
    with IndexedWriter(output, layout=layout or first.layout, dtype=first.dtype) as writer:
        for prefix in prefixes:
            writer.merge(prefix)
    return IndexedDataset(output)
