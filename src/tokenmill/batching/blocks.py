"""Block-wise epoch plans: the memory to build a plan is bounded by the block, not the corpus.

An epoch of more than ``block_size`` items is cut block by block. The items are split into pieces
of ``block_size / 64`` consecutive items; every epoch the pieces are dealt to blocks in a fresh
random order (seed, epoch), at most 64 per block and evenly spread, so each block holds items
from all over the corpus and the blocks differ from epoch to epoch. Each block is cut like a
whole epoch (``lowpad``: its own random ties; equal batch counts for the ranks per block, so also
in total) and its part of the order is appended to a file, so a process holds one block's arrays
(about 40 bytes per item of the block) plus one table row per batch. The batches of all blocks
are then dealt to ranks and shuffled together as usual. Blocks are independent, so
``BatchConfig.plan_threads`` of them can be cut at the same time (one block's arrays per thread).

The cost: a batch only combines items of one block. With millions of items per block every
(source, target) length cell is well filled, so padding hardly changes (measured in
``benchmarks/bench_blocks.py``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill._core.ordered import ordered_map
from tokenmill.batching import lowpad
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Cut, Sizes
from tokenmill.batching.order import SAMPLE_SHUFFLE, generator, index_dtype
from tokenmill.batching.select import EpochSample
from tokenmill.errors import ConfigError

PIECES_PER_BLOCK = 64
BLOCK_SHUFFLE = 4
"""Purpose of the random stream that deals pieces to blocks (the batcher's others are 1-3)."""
_COPY_ITEMS = 1 << 22  # items per chunk when the order file is copied into its final .npy

Compute = Callable[..., tuple[dict[str, np.ndarray], dict[str, Any]]]


def item_count(sample: EpochSample) -> int:
    """Items the blocks are cut from: positions of the sample (every dataset id when ``ids`` is None)."""
    return len(sample.sizes) if sample.ids is None else len(sample.ids)


def is_blocked(sample: EpochSample, config: BatchConfig) -> bool:
    """Whether this epoch is planned block by block (``lowpad`` only: the peer modes' orders are global)."""
    return config.mode == "lowpad" and config.block_size is not None and item_count(sample) > config.block_size


def block_pieces(count: int, config: BatchConfig, epoch: int) -> tuple[int, list[np.ndarray]]:
    """(piece size, sorted piece numbers of each block) for ``count`` items in ``epoch``."""
    assert config.block_size is not None
    piece = -(-config.block_size // PIECES_PER_BLOCK)
    pieces = -(-count // piece)
    dealt = generator(config.seed, epoch, BLOCK_SHUFFLE).permutation(pieces)
    blocks = -(-pieces // PIECES_PER_BLOCK)  # as many blocks as needed, pieces spread evenly over them
    return piece, [np.sort(part) for part in np.array_split(dealt, blocks)]


def _positions(pieces: np.ndarray, piece: int, count: int) -> np.ndarray:
    """Item positions covered by ``pieces`` (ascending), clipped at ``count``."""
    starts = pieces.astype(np.int64) * piece
    lengths = np.minimum(starts + piece, count) - starts
    return np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(
        int(lengths.sum()), dtype=np.int64
    )


# Over 60 lines: one block's cut (a closure over the epoch's arrays, run on the plan threads) and the in-order
# gathering of the blocks' parts belong together; apart, the closure's captured names would travel as arguments.
def compute_blocked(
    sample: EpochSample, config: BatchConfig, epoch: int, world_size: int, scratch: Path | None, compute: Compute
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The epoch's batches cut block by block (``compute`` cuts, equalizes and measures one block).

    With ``scratch`` (the cache entry's temporary folder) the order goes to ``scratch/order.npy``
    block by block and comes back memory-mapped; without, it is built in memory."""
    count = item_count(sample)
    piece, blocks = block_pieces(count, config, epoch)
    sizes, keep = sample.sizes, sample.sizes.keep if sample.ids is None else None
    order_dtype = np.dtype(np.int64) if sample.ids is not None else index_dtype(count)
    raw = None if scratch is None else open(scratch / "order.raw", "wb")
    parts: list[np.ndarray] = []
    tables: dict[str, list[np.ndarray]] = {}
    dropped: dict[str, int] = dict(sample.dropped)
    splits = merges = 0
    offset = 0
    began = time.perf_counter()

    def cut_block(numbered: tuple[int, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, Any]]:
        """One block's ids (in plan order), batch table and counts; blocks are independent of each other."""
        number, pieces = numbered
        positions = _positions(pieces, piece, count)
        if keep is not None:
            positions = positions[keep[positions]]
        if len(positions) < world_size:
            raise ConfigError(
                f"block {number + 1} of {len(blocks)} holds {len(positions)} items for {world_size} ranks: "
                f"raise block_size (now {config.block_size}) or use fewer ranks"
            )
        block = Sizes(src=sizes.src[positions], tgt=None if sizes.tgt is None else sizes.tgt[positions],
                      copies=None if sizes.copies is None else sizes.copies[positions])
        cut: Cut = lowpad.cut_with(block, config, generator(config.seed, epoch, SAMPLE_SHUFFLE, number + 1))
        arrays, meta = compute(block, config, epoch, world_size, cut=cut)
        chosen = positions[arrays.pop("order")]
        ids = chosen if sample.ids is None else np.asarray(sample.ids, dtype=np.int64)[chosen]
        return ids.astype(order_dtype, copy=False), arrays, meta

    try:
        for ids, arrays, meta in ordered_map(cut_block, enumerate(blocks), config.plan_threads,
                                             ahead=config.plan_threads):
            if raw is not None:
                raw.write(memoryview(np.ascontiguousarray(ids)).cast("B"))
            else:
                parts.append(ids)
            arrays["starts"] = arrays["starts"] + offset
            arrays["stops"] = arrays["stops"] + offset
            for name, values in arrays.items():
                tables.setdefault(name, []).append(values)
            offset += len(ids)
            for reason, value in meta["dropped"].items():
                dropped[reason] = dropped.get(reason, 0) + int(value)
            splits, merges = splits + meta["splits"], merges + meta["merges"]
            del ids, arrays
        if raw is not None:
            raw.close()
            order = _order_file(scratch / "order.raw", scratch / "order.npy", order_dtype, offset)  # type: ignore[operator]
        else:
            order = np.concatenate(parts) if parts else np.zeros(0, dtype=order_dtype)
    finally:
        if raw is not None and not raw.closed:
            raw.close()
    result = {name: np.concatenate(values) for name, values in tables.items()}
    result["order"] = order
    info = {"dropped": dropped, "splits": int(splits), "merges": int(merges), "seconds": time.perf_counter() - began,
            "blocks": len(blocks), "block_size": config.block_size}
    return result, info


def _order_file(raw: Path, final: Path, dtype: np.dtype, count: int) -> np.ndarray:
    """``raw`` (the blocks' ids, back to back) as the ``.npy`` ``final``, copied in chunks; memory-mapped."""
    out = np.lib.format.open_memmap(final, mode="w+", dtype=dtype, shape=(count,))
    with open(raw, "rb") as handle:
        for start in range(0, count, _COPY_ITEMS):
            chunk = np.fromfile(handle, dtype=dtype, count=min(_COPY_ITEMS, count - start))
            out[start : start + len(chunk)] = chunk
    os.remove(raw)
    return out


__all__ = ["PIECES_PER_BLOCK", "block_pieces", "compute_blocked", "is_blocked"]
