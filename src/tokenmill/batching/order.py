"""Seeded permutations and stable length sorts: the orders batches are cut from.

Every random choice comes from a generator derived from (seed, epoch, purpose), never from global
state, so an order is a pure function of its inputs. Sorts are stable and run as numpy's O(n)
radix sort whenever the keys fit in 16 bits (sentence lengths nearly always do). A stable sort by
integer keys whose bits and the position's fit in 64 is one plain sort of packed words instead
(:func:`packed_argsort`): the position breaks every tie, so any sort gives the stable order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tokenmill._core.rng import generator as generator  # re-exported: the batcher's streams

# purposes: independent random streams for independent choices within one epoch
SAMPLE_SHUFFLE = 1
STEP_SHUFFLE = 2
SHARD_SHUFFLE = 3


def legacy_permutation(seed: int, n: int) -> np.ndarray:
    """``np.random.seed(seed); np.random.permutation(n)`` without touching the global state.

    fairseq draws its orders this way (``data_utils.numpy_seed``), so fairseq mode uses it to give
    the same order for the same seed.
    """
    return np.random.RandomState(seed).permutation(n)


def index_dtype(n: int) -> np.dtype:
    """int32 for sample ids when they fit (half the memory of int64), else int64."""
    return np.dtype(np.int32) if n < 2**31 else np.dtype(np.int64)


def _sort_key(keys: np.ndarray) -> np.ndarray:
    if keys.size and keys.dtype.itemsize > 2:
        low, high = int(keys.min()), int(keys.max())
        if 0 <= low and high < 2**16:
            return keys.astype(np.uint16)
    return keys


def stable_argsort(keys: np.ndarray) -> np.ndarray:
    """Stable ascending argsort; radix sort when the keys fit in 16 bits."""
    return np.argsort(_sort_key(keys), kind="stable")


PACKED_MIN = 1 << 16
"""Below this many keys a radix sort is as cheap as packing them (the packed sort pays off on millions)."""


def packed_argsort(keys: Sequence[np.ndarray]) -> np.ndarray | None:
    """Positions sorted by ``keys`` (first = most significant), ties by position: the stable argsort.

    Each position's keys and the position itself are packed into one 64-bit word, so the words are
    distinct and one plain (SIMD) sort of them gives exactly the stable order, several times faster
    than radix passes with their random gathers on tens of millions of items. None when the keys are
    not non-negative integers or their bits and the position's do not fit in 64 (sort another way).
    """
    n = len(keys[0])
    if n == 0 or any(k.dtype.kind not in "biu" for k in keys):
        return None
    if any(k.dtype.kind == "i" and int(k.min()) < 0 for k in keys):
        return None
    position_bits = max((n - 1).bit_length(), 1)
    widths = [int(k.max()).bit_length() for k in keys]
    if sum(widths) + position_bits > 64:
        return None
    packed = np.arange(n, dtype=np.uint64)
    shift = position_bits
    for key, width in zip(reversed(keys), reversed(widths), strict=True):
        if width:
            packed |= np.left_shift(key, shift, dtype=np.uint64, casting="unsafe")
            shift += width
    packed.sort()
    packed &= np.uint64((1 << position_bits) - 1)
    return packed.view(np.int64)  # positions < 2**63: the same values


def sort_stable_by(indices: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``indices`` reordered by ``keys[indices]``, ties keeping their current order."""
    return indices[stable_argsort(keys[indices])]


def fairseq_order(src_sizes: np.ndarray, tgt_sizes: np.ndarray | None, seed: int) -> np.ndarray:
    """fairseq's ``LanguagePairDataset.ordered_indices`` under ``numpy_seed(seed)``.

    A seeded permutation, then a stable sort by target length, then by source length: samples come
    out by source length, then target length, ties in random order.
    """
    indices = legacy_permutation(seed, len(src_sizes))
    if tgt_sizes is not None:
        indices = sort_stable_by(indices, tgt_sizes)
    return sort_stable_by(indices, src_sizes)


def hilbert_index(x: np.ndarray, y: np.ndarray, bits: int) -> np.ndarray:
    """Position of each point (x, y) on the Hilbert curve over a 2**bits x 2**bits grid (vectorized)."""
    x = np.asarray(x, dtype=np.int64).copy()
    y = np.asarray(y, dtype=np.int64).copy()
    d = np.zeros(len(x), dtype=np.int64)
    side = 1 << max(bits - 1, 0)
    while side > 0:
        rx = (x & side) > 0
        ry = (y & side) > 0
        d += side * side * ((3 * rx.astype(np.int64)) ^ ry.astype(np.int64))
        flip = ~ry & rx
        x[flip] = side - 1 - x[flip]
        y[flip] = side - 1 - y[flip]
        swap = ~ry
        x[swap], y[swap] = y[swap], x[swap].copy()
        side //= 2
    return d


_GRID_LIMIT = 1 << 24  # (source x target) length grids up to this many cells get a lookup table


CellGroups = Callable[[np.ndarray, "np.ndarray | None"], np.ndarray]
"""(source lengths, target lengths or None) of length cells -> a non-negative group number per cell."""


def curve_keys(src: np.ndarray, tgt: np.ndarray, group_by: CellGroups | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense ranks of each sample's (source, target) length cell along the Hilbert curve.

    Returns (key per sample, source length of each key, target length of each key). Cells that
    are neighbours on the curve are neighbours in the length plane, so a run of consecutive keys
    covers a compact square of lengths (not a long strip, as a sort by source then target does).
    The curve is evaluated once per occupied cell, not once per sample. ``group_by``: the cells are
    ranked by their group first, along the curve inside a group (:func:`curve_order`).
    """
    width = int(tgt.max()) + 1 if len(tgt) else 1
    height = int(src.max()) + 1 if len(src) else 1
    bits = max(int(max(width, height) - 1).bit_length(), 1)
    if width * height > _GRID_LIMIT:
        ranks = hilbert_index(src, tgt, bits)
        _, first, keys = np.unique(ranks, return_index=True, return_inverse=True)
        return _grouped(keys.astype(np.int64), src[first], tgt[first], group_by)
    cell = src.astype(np.int64) * width + tgt
    occupied = np.flatnonzero(np.bincount(cell, minlength=width * height))
    occupied = occupied[np.argsort(hilbert_index(occupied // width, occupied % width, bits), kind="stable")]
    lengths_dtype = np.result_type(src.dtype, tgt.dtype)
    cell_src, cell_tgt = (occupied // width).astype(lengths_dtype), (occupied % width).astype(lengths_dtype)
    if group_by is not None:  # rank the cells by (group, curve) in the table itself: no pass over the samples
        by_group = stable_argsort(np.asarray(group_by(cell_src, cell_tgt)))
        occupied, cell_src, cell_tgt = occupied[by_group], cell_src[by_group], cell_tgt[by_group]
    table = np.zeros(width * height, dtype=np.int32)
    table[occupied] = np.arange(len(occupied), dtype=np.int32)
    return table[cell], cell_src, cell_tgt


def _grouped(keys: np.ndarray, cell_src: np.ndarray, cell_tgt: np.ndarray | None, group_by: CellGroups | None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``keys`` (cell numbers) and the cells' lengths renumbered so the cells run by (group, number)."""
    if group_by is None:
        return keys, cell_src, cell_tgt
    by_group = stable_argsort(np.asarray(group_by(cell_src, cell_tgt)))
    rank = np.empty(len(by_group), dtype=np.int64)
    rank[by_group] = np.arange(len(by_group), dtype=np.int64)
    return rank[keys], cell_src[by_group], None if cell_tgt is None else cell_tgt[by_group]


def argsort_ids(ids: np.ndarray) -> np.ndarray:
    """Stable argsort of ids (integers): one packed sort when they are non-negative and fit, else numpy's."""
    ids = np.asarray(ids)
    packed = packed_argsort([ids]) if len(ids) >= PACKED_MIN else None
    return np.argsort(ids, kind="stable") if packed is None else packed


def radix_argsort(keys: np.ndarray) -> np.ndarray:
    """Stable argsort of non-negative integer keys below 2**32 with numpy's 16-bit radix sort."""
    keys = np.asarray(keys)
    if len(keys) >= PACKED_MIN and (packed := packed_argsort([keys])) is not None:
        return packed
    if not len(keys) or int(keys.max()) < 2**16:
        return stable_argsort(keys)
    low = (keys & 0xFFFF).astype(np.uint16)
    first = np.argsort(low, kind="stable")
    high = (keys[first] >> 16).astype(np.uint16)
    return first[np.argsort(high, kind="stable")]


def random_ties(n: int, rng: np.random.Generator) -> np.ndarray:
    """A random order of ``range(n)`` made by one 16-bit radix sort of random keys.

    Much cheaper than a full permutation and enough to break ties between samples of equal length
    at random: samples whose keys collide keep their id order, one in 65536 on average.
    """
    return np.argsort(rng.integers(0, 2**16, n, dtype=np.uint16), kind="stable")


def curve_order(
    ids: np.ndarray | None, src_sizes: np.ndarray, tgt_sizes: np.ndarray | None, rng: np.random.Generator,
    group_by: CellGroups | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``ids`` (None: every sample) sorted along the Hilbert curve of (source, target) length.

    Ties — samples with the same lengths, thousands of them in a real corpus — come out in a fresh
    random order for every generator. With one side only, this is a plain length sort. Returns
    (order, source lengths in that order, target lengths in that order); the lengths come from the
    run length of each cell, not from gathering 2 x N values in random order. ``group_by`` (a group
    number per length cell): the order is by group first, then as before — exactly a stable sort of
    the plain order by each sample's group, done by renumbering the cells instead of sorting samples.
    """
    src = src_sizes if ids is None else src_sizes[ids]
    tgt = tgt_sizes if ids is None or tgt_sizes is None else tgt_sizes[ids]
    keys, cell_src, cell_tgt = cell_keys(src, tgt, group_by)
    positions = _by_key_then_ties(keys, rng)
    counts = np.bincount(keys, minlength=len(cell_src))
    src_in_order = np.repeat(cell_src, counts)
    tgt_in_order = np.repeat(cell_tgt, counts) if cell_tgt is not None else None
    order = positions.astype(index_dtype(len(src_sizes)), copy=False) if ids is None else ids[positions]
    return order, src_in_order, tgt_in_order


def cell_keys(src: np.ndarray, tgt: np.ndarray | None, group_by: CellGroups | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Each sample's place among the length cells of :func:`curve_order` (key per sample, source and target
    length of each key): the curve's cells (:func:`curve_keys`), or with one side the lengths themselves."""
    if tgt is not None:
        return curve_keys(src, tgt, group_by)
    lengths = np.arange(int(src.max()) + 1 if len(src) else 0, dtype=src.dtype)
    return _grouped(src, lengths, None, group_by)


def _by_key_then_ties(keys: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Positions sorted by ``keys``, ties in :func:`random_ties`' order: by (key, random 16 bits, position),
    one packed sort when that fits (the same order as the two sorts, the same draws of ``rng``)."""
    if len(keys) < PACKED_MIN:
        shuffled = random_ties(len(keys), rng)
        return shuffled[radix_argsort(keys[shuffled])]
    ties = rng.integers(0, 2**16, len(keys), dtype=np.uint16)  # random_ties' draw
    packed = packed_argsort([np.asarray(keys), ties])
    if packed is not None:
        return packed
    shuffled = np.argsort(ties, kind="stable")
    return shuffled[radix_argsort(keys[shuffled])]


def random_shard_order(n: int, shard_size: int, rng: np.random.Generator) -> np.ndarray:
    """OpenNMT-tf's ``random_shard`` followed by a shuffle inside each shard.

    Consecutive blocks of ``shard_size`` samples are visited in random order (``random_shard``);
    inside a block the samples are permuted, standing in for tf.data's shuffle buffer of the same
    size (tf's buffer draws with its own generator, so the exact sequence cannot be the same).
    """
    num_shards = -(-n // shard_size)
    shard_rank = np.empty(num_shards, dtype=np.int64)
    shard_rank[rng.permutation(num_shards)] = np.arange(num_shards)
    position = np.arange(n, dtype=np.int64)
    noise = rng.random(n)
    return np.lexsort((noise, shard_rank[position // shard_size])).astype(index_dtype(n), copy=False)
