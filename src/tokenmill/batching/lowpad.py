"""lowpad mode (the default): the least padding we know how to get while batches stay random.

Each epoch, samples are shuffled and then stably sorted along a Hilbert curve over their (source
length, target length) cells (:func:`~tokenmill.batching.order.curve_order`). Consecutive samples
therefore lie in a compact square of lengths on both sides (a sort by source then target length
makes long strips instead). Batches are cut under the budget along that order by the exact least
pad slots + a price per batch (``BatchConfig.batch_penalty`` x ``max_tokens``,
:func:`~tokenmill.batching.pack.pack_lowpad`): a batch stops short of the budget at a length step only
when the padding it saves is worth one more batch. ``benchmarks/bench_padding_optimum.py`` compares
it with fairseq's batches and with other cuts of the same order.

Randomness: samples of equal (source, target) length — thousands of them in a real corpus — are
in a fresh random order every epoch, so batch membership changes between epochs; the batch order
is shuffled every epoch as well.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from tokenmill.batching import copies
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Cut, Sizes, drop_over_budget, row_costs
from tokenmill.batching.lowpad_copies import cut_spread
from tokenmill.batching.order import SAMPLE_SHUFFLE, CellGroups, curve_order, generator
from tokenmill.batching.pack import pack_lowpad


def cut(sizes: Sizes, config: BatchConfig, epoch: int) -> Cut:
    """This epoch's batches."""
    return cut_with(sizes, config, generator(config.seed, epoch, SAMPLE_SHUFFLE))


def cut_with(sizes: Sizes, config: BatchConfig, rng: np.random.Generator) -> Cut:
    """Batches of ``sizes`` with ties ordered by ``rng`` (one block of a block-wise plan has its own)."""
    if sizes.copies is not None and (spread := cut_spread(sizes, config, _classes_of(config))) is not None:
        return spread  # the same batches and ids, without ordering every item along the curve first
    return cut_along_curve(sizes, config, rng)


def cut_along_curve(sizes: Sizes, config: BatchConfig, rng: np.random.Generator) -> Cut:
    """:func:`cut_with` by its definition: the items sorted along the curve (ties by ``rng``), cut, and
    with copies each class's items dealt again over its batches."""
    dropped: dict[str, int] = {}
    ids = None if sizes.keep is None else sizes.kept_ids()
    # copies of one sample: grouped by length class first (batching.copies), by renumbering the length cells
    group_by = None if sizes.copies is None else _classes_of(config)
    order, src, tgt = curve_order(ids, sizes.src, sizes.tgt, rng, group_by)
    costs = row_costs(src, tgt, config.pad_to_multiple)
    costs, order, src, tgt = drop_over_budget(costs, config.max_tokens, dropped, order, src, tgt)
    if sizes.copies is not None:
        classes = copies.length_classes(costs, src, tgt)
    ends = pack_lowpad(costs, src, tgt, config.max_tokens, config.max_sentences,
                       config.required_batch_size_multiple, config.batch_penalty)
    if sizes.copies is not None:
        samples, counts = copies.samples_in_order(sizes.copies, order) if ids is None else (sizes.copies[order], None)
        order, src, tgt, samples = copies.take(copies.deal(samples, ends, classes, counts), order, src, tgt, samples)
        return Cut(order=order, ends=ends, dropped=dropped, src_in_order=src, tgt_in_order=tgt,
                   copies_in_order=np.asarray(samples, dtype=np.int64))
    return Cut(order=order, ends=ends, dropped=dropped, src_in_order=src, tgt_in_order=tgt)


def _classes_of(config: BatchConfig) -> CellGroups:
    """The cells' grouping of a cut with copies: their length class under ``config``'s padding."""
    return partial(cell_classes, pad_to_multiple=config.pad_to_multiple)


def cell_classes(src: np.ndarray, tgt: np.ndarray | None, pad_to_multiple: int) -> np.ndarray:
    """The length class (:func:`~tokenmill.batching.copies.length_classes`) of each length cell."""
    return copies.length_classes(row_costs(src, tgt, pad_to_multiple), src, tgt)
