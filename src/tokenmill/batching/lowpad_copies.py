"""lowpad's cut of an epoch with copies, without ordering the items along the curve first.

With copies (``Sizes.copies``) the plain cut (:func:`~tokenmill.batching.lowpad.cut_with`) sorts the items
along the curve with random ties, then deals every length class's items again over its batches
(:func:`~tokenmill.batching.copies.deal`): each slot of the cut gets an item chosen by (class, fits,
copies, sample), whatever the item's place in the curve order was. Only the lengths in curve order
(each cell's lengths repeated by its count) decide the batches and the slots; the random ties only
decide *which copy* of a sample lands in a slot, and copies are the same sample. So this cut takes
the lengths in order from the cells' counts, deals the items straight from the draw's order, and
gathers what each slot holds once: the same sample ids, lengths and batches as the plain cut (plans
byte-identical), without the sort of every item along the curve, the gather of the samples in that
order, and the four gathers of the deal.

``Cut.order`` holds the positions of the items dealt; of a sample's copies it may name another one
than the plain cut (the same sample id: a plan maps positions to ids).
"""

from __future__ import annotations

import numpy as np

from tokenmill.batching import copies
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Cut, Sizes, drop_over_budget, row_costs
from tokenmill.batching.order import CellGroups, cell_keys, index_dtype
from tokenmill.batching.pack import pack_lowpad

LENGTH_BITS = 16
"""Each side's length in one 64-bit word with the sample id (32 bits): one gather per slot."""


def cut_spread(sizes: Sizes, config: BatchConfig, group_by: CellGroups) -> Cut | None:
    """This epoch's lowpad batches of ``sizes`` (every item kept, ``copies`` the items' sample ids), the
    copies dealt over their class's batches; None where the plain cut must do it (ids or lengths too wide
    for the packed words, or a cut not grouped by class)."""
    samples = np.asarray(sizes.copies)
    if sizes.keep is not None or not len(samples) or not _fits_words(samples, sizes):
        return None
    dropped: dict[str, int] = {}
    keys, cell_src, cell_tgt = cell_keys(sizes.src, sizes.tgt, group_by)
    per_cell = np.bincount(keys, minlength=len(cell_src))
    src = np.repeat(cell_src, per_cell)
    tgt = None if cell_tgt is None else np.repeat(cell_tgt, per_cell)
    costs = row_costs(src, tgt, config.pad_to_multiple)
    costs, src, tgt = drop_over_budget(costs, config.max_tokens, dropped, src, tgt)
    classes = copies.length_classes(costs, src, tgt)
    if not len(classes) or bool(np.any(classes[1:] < classes[:-1])):
        return None
    ends = pack_lowpad(costs, src, tgt, config.max_tokens, config.max_sentences,
                       config.required_batch_size_multiple, config.batch_penalty)
    layout = copies.class_slots(ends, classes)
    if layout is None:
        return None
    slots, position_class, room = layout
    fits = _cells_fit(cell_src, cell_tgt, config) if dropped else None
    kept = None if fits is None else np.flatnonzero(fits[keys])  # the items of the cells that fit
    last = np.cumsum(per_cell if fits is None else per_cell * fits) - 1  # each cell's last position in order
    cell_class = position_class[np.clip(last, 0, len(position_class) - 1)]
    items = samples if kept is None else samples[kept]
    item_class = cell_class[keys if kept is None else keys[kept]]
    dealt = copies.items_order(items, np.bincount(samples)[items], item_class, room)
    if dealt is None:
        return None
    perm = np.empty(len(items), dtype=np.int64)
    perm[slots] = dealt if kept is None else kept[dealt]
    ids, src_out, tgt_out = _gather(perm, samples, sizes, cell_src.dtype, None if cell_tgt is None else cell_tgt.dtype)
    order = perm.astype(index_dtype(len(sizes.src)), copy=False)
    return Cut(order=order, ends=ends, dropped=dropped, src_in_order=src_out, tgt_in_order=tgt_out,
               copies_in_order=ids)


def _fits_words(samples: np.ndarray, sizes: Sizes) -> bool:
    """Whether every sample id fits 32 bits and every length :data:`LENGTH_BITS` (one word per item)."""
    if samples.dtype.kind not in "iu" or int(samples.min()) < 0 or int(samples.max()) >= 2**32:
        return False
    sides = [sizes.src] if sizes.tgt is None else [sizes.src, sizes.tgt]
    return all(int(np.min(side)) >= 0 and int(np.max(side)) < 2**LENGTH_BITS for side in sides)


def _cells_fit(cell_src: np.ndarray, cell_tgt: np.ndarray | None, config: BatchConfig) -> np.ndarray:
    """Which cells' rows fit the token budget (the cut drops the items of the others)."""
    return row_costs(cell_src, cell_tgt, config.pad_to_multiple) <= config.max_tokens  # type: ignore[operator]


def _gather(perm: np.ndarray, samples: np.ndarray, sizes: Sizes, src_dtype: np.dtype, tgt_dtype: np.dtype | None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The sample id and lengths (as ``*_dtype``) of the items ``perm`` names (draw positions): one packed
    word per item, gathered once in ``perm``'s order."""
    words = samples.astype(np.uint64) << np.uint64(2 * LENGTH_BITS)
    words |= np.asarray(sizes.src).astype(np.uint64) << np.uint64(LENGTH_BITS)
    if sizes.tgt is not None:
        words |= np.asarray(sizes.tgt).astype(np.uint64)
    words = words[perm]
    mask = np.uint64((1 << LENGTH_BITS) - 1)
    src = (words >> np.uint64(LENGTH_BITS) & mask).astype(src_dtype)
    tgt = None if sizes.tgt is None else (words & mask).astype(tgt_dtype)
    words >>= np.uint64(2 * LENGTH_BITS)
    return words.astype(np.int64), src, tgt
