"""lowpad's cut of an epoch with copies, without ordering the items along the curve first.

With copies (``Sizes.copies``) the plain cut (:func:`~tokenmill.batching.lowpad.cut_with`) sorts the items
along the curve with random ties, then deals every length class's items again over its batches
(:func:`~tokenmill.batching.copies.deal`): each slot of the cut gets an item chosen by (class, fits,
copies, sample), whatever the item's place in the curve order was. Only the lengths in curve order
(each cell's lengths repeated by its count) decide the batches and the slots; the random ties only
decide *which copy* of a sample lands in a slot, and copies are the same sample. So this cut takes
the lengths in order from the cells' counts, deals the items straight from the draw's order (the
sample ids come out of the deal's sorted words) and gathers each slot's length cell once: the same
sample ids, lengths and batches as the plain cut (plans byte-identical), without the sort of every
item along the curve, the gather of the samples in that order, and the four gathers of the deal.

``Cut.order`` holds the positions of the items dealt; of a sample's copies it may name another one
than the plain cut (the same sample id: a plan maps positions to ids).
"""

from __future__ import annotations

import numpy as np

from tokenmill.batching import copies
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Cut, Sizes, row_costs
from tokenmill.batching.order import CellGroups, cell_keys, index_dtype
from tokenmill.batching.pack import pack_lowpad


def cut_spread(sizes: Sizes, config: BatchConfig, group_by: CellGroups) -> Cut | None:
    """This epoch's lowpad batches of ``sizes`` (every item kept, ``copies`` the items' sample ids), the
    copies dealt over their class's batches; None where the plain cut must do it (ids or lengths too wide
    for the packed words, or a cut not grouped by class)."""
    samples = np.asarray(sizes.copies)
    if sizes.keep is not None or not len(samples) or not _fits_words(samples):
        return None
    dropped: dict[str, int] = {}
    keys, cell_src, cell_tgt = cell_keys(sizes.src, sizes.tgt, group_by)
    per_cell = np.bincount(keys, minlength=len(cell_src))
    cell_costs = row_costs(cell_src, cell_tgt, config.pad_to_multiple)
    fits = None if config.max_tokens is None or not len(cell_costs) else cell_costs <= config.max_tokens
    if fits is not None and bool(fits[per_cell > 0].all()):
        fits = None  # every item fits: none is dropped
    if fits is not None:  # the cut drops the items of the cells whose rows exceed the budget
        dropped["longer_than_max_tokens"] = int(per_cell[~fits].sum())
    runs = per_cell if fits is None else per_cell * fits
    src, tgt, costs = (None if x is None else np.repeat(x, runs) for x in (cell_src, cell_tgt, cell_costs))
    classes = np.repeat(copies.length_classes(cell_costs, cell_src, cell_tgt), runs)
    if not len(classes) or bool(np.any(classes[1:] < classes[:-1])):
        return None
    ends = pack_lowpad(costs, src, tgt, config.max_tokens, config.max_sentences,
                       config.required_batch_size_multiple, config.batch_penalty)
    layout = copies.class_slots(ends, classes)
    if layout is None:
        return None
    slots, position_class, room = layout
    kept = None if fits is None else np.flatnonzero(fits[keys])  # the draw positions of the items kept
    cell_class = position_class[np.clip(np.cumsum(runs) - 1, 0, len(position_class) - 1)]  # at its last position
    items = samples if kept is None else samples[kept]
    dealt = copies.items_dealt(items, np.bincount(samples)[items], cell_class[keys if kept is None else keys[kept]],
                               room)
    if dealt is None:
        return None
    positions, ids = _in_slots(slots, *dealt)
    perm = positions if kept is None else kept[positions]
    key = keys[perm]
    return Cut(order=perm.astype(index_dtype(len(samples)), copy=False), ends=ends, dropped=dropped,
               src_in_order=cell_src[key], tgt_in_order=None if cell_tgt is None else cell_tgt[key],
               copies_in_order=ids)


def _in_slots(slots: np.ndarray, positions: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The items dealt (positions among the items, and their sample ids, in deal order) laid into their
    slots: the ids come with the deal's sorted words, so no gather of the ids in slot order is needed."""
    in_slots = np.empty(len(slots), dtype=np.int64), np.empty(len(slots), dtype=np.int64)
    in_slots[0][slots] = positions
    in_slots[1][slots] = ids
    return in_slots


def _fits_words(samples: np.ndarray) -> bool:
    """Whether every sample id is non-negative and fits 32 bits (the deal packs it into one word per item)."""
    return samples.dtype.kind in "iu" and int(samples.min()) >= 0 and int(samples.max()) < 2**32
