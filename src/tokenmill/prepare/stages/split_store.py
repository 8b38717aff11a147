"""One split's stores written from (ids, item lengths) blocks: the end token appended, the items cut into
``shardNNN/`` stores of ``--shard-size`` items (train), Megatron's documents without a sequence kept as
``preprocess_data`` keeps them. :class:`SplitWriter` takes the blocks as they are pushed to it (the encode
stage, when it writes the stores itself as it encodes), :func:`write_split` pulls them from an iterator
(the binarize stage, the alignments); both write the same bytes for the same items, however cut into blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.prepare.crash import crash_point
from tokenmill.prepare.encoded_parts import ended
from tokenmill.prepare.run.context import RunContext
from tokenmill.store import IndexedWriter

Block = tuple[np.ndarray, np.ndarray]
"""(tokens, item sizes) of consecutive items."""
Outputs = tuple[list[Path], dict[str, Any]]


class SplitWriter:
    """The stores of one split, written from the blocks given to :meth:`add_items` (see the module's docstring),
    inside a ``with`` block: the first store is opened on entering, and all are finalized when the block ends
    without an error, else removed.
    ``outputs`` and ``info`` (sentences, tokens, unknown ids, shards) are set once finalized."""

    def __init__(self, ctx: RunContext, split: str, prefix_of: Callable[[int | None], Path], dtype: np.dtype, *,
                 eos: int | None, unk: int, empty_documents: bool = False) -> None:
        cfg = ctx.config
        self.layout, self.dtype, self.prefix_of = cfg.output.layout, dtype, prefix_of
        self.eos, self.unk, self.empty_documents = eos, unk, empty_documents
        self.sharded = bool(cfg.output.shard_size)
        self.shard_size = cfg.output.shard_size if (cfg.output.shard_size and split == "train") else 0
        self.shard = 0 if self.sharded else None
        self.writers: list[IndexedWriter] = []
        self.writer: IndexedWriter  # the first store is opened on entering
        self.sentences = self.tokens = self.unknown = 0
        self.outputs: list[Path] = []
        self.info: dict[str, Any] = {}

    def _open(self, index: int | None) -> IndexedWriter:
        writer = IndexedWriter(self.prefix_of(index), layout=self.layout, dtype=self.dtype)
        self.writers.append(writer)
        return writer

    # The shard cutting keeps every case in one loop (a new shard, a full shard with empty Megatron documents,
    # a block split across shards) so the outputs match fairseq's and Megatron's byte for byte.
    def add_items(self, flat: np.ndarray, lengths: np.ndarray) -> None:
        """The next items: ``flat`` ids (tokenizer or dictionary ids, no end token yet), ``lengths`` per item."""
        if self.unk >= 0:
            self.unknown += int(np.count_nonzero(flat == self.unk))
        flat, lengths = ended(flat, lengths, self.eos, self.dtype, empty_documents=self.empty_documents)
        while len(lengths):
            room = self.shard_size - len(self.writer) if self.shard_size else len(lengths)
            if room == 0 and self.empty_documents and lengths[0] == 0:
                # documents without a sequence stay with the full shard: a new shard starts at a
                # sequence, so no shard is left holding none (a 0-token dataset to Megatron)
                empty = int(np.argmax(lengths != 0)) if lengths.any() else len(lengths)
                self.writer.add_documents(flat[:0], lengths[:empty])
                lengths = lengths[empty:]
                continue
            if room == 0:
                self.shard = (self.shard or 0) + 1
                self.writer = self._open(self.shard)
                continue
            take = min(room, len(lengths))
            cut = int(lengths[:take].sum())
            if self.empty_documents:
                self.writer.add_documents(flat[:cut], lengths[:take])
                self.sentences += int(np.count_nonzero(lengths[:take]))
            else:
                self.writer.add_items(flat[:cut], lengths[:take], documents=self.layout == "megatron")
                self.sentences += take
            self.tokens += cut
            flat, lengths = flat[cut:], lengths[take:]

    def abort(self) -> None:
        for writer in self.writers:
            writer.abort()

    def finalize(self) -> Outputs:
        for writer in self.writers:
            writer.finalize()
            self.outputs += [writer.bin_file, writer.idx_file]
        tokens = self.tokens
        self.info = {
            "sentences": self.sentences,
            "tokens": tokens,
            "unk": self.unknown,
            "unk_percent": round(100.0 * self.unknown / tokens, 4) if tokens else 0.0,
            "shards": len(self.writers) if self.sharded else 0,
        }
        return self.outputs, self.info

    def __enter__(self) -> SplitWriter:
        self.writer = self._open(self.shard)
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.finalize()
        else:
            self.abort()


def write_split(
    ctx: RunContext, split: str, prefix_of: Callable[[int | None], Path], dtype: np.dtype, blocks: Iterator[Block],
    *, eos: int | None, unk: int, crash_name: str, empty_documents: bool = False,
) -> Outputs:
    """Write (flat, lengths) blocks as one store, or as shardNNN/ stores of ``shard_size`` items
    (``empty_documents``: see :func:`~tokenmill.prepare.stages.binarize.empty_documents`; ``sentences`` counts
    the items stored)."""
    with SplitWriter(ctx, split, prefix_of, dtype, eos=eos, unk=unk, empty_documents=empty_documents) as out:
        for flat, lengths in blocks:
            out.add_items(flat, lengths)
            crash_point(f"{crash_name}:midway")
    return out.outputs, out.info
