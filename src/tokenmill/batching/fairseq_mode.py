"""fairseq mode: fairseq's sample order and ``batch_by_size``, keeping the samples fairseq drops.

fairseq (``FairseqTask.get_batch_iterator``) orders samples with
``numpy_seed(seed + epoch)`` + ``LanguagePairDataset.ordered_indices`` (random permutation, stable
sort by target length, then by source length), filters by max positions, and packs the order
greedily with ``data_utils.batch_by_size``. It builds these batches once, at the epoch the
iterator starts from (epoch 1 on a fresh run), and reuses them for every epoch, shuffling only
their order. Its ``batch_by_size`` then discards the last batch when its row count is not a
multiple of ``required_batch_size_multiple`` — those samples are silently never trained on.

Here the batches are fairseq's exactly, built as on a fresh run (so a resumed run gets the same
ones), and that last batch is kept unless ``drop_last`` asks for fairseq's behaviour.
"""

from __future__ import annotations

import numpy as np

from tokenmill.batching import copies
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Cut, Sizes, drop_over_budget, ordered_by_length, row_costs
from tokenmill.batching.order import fairseq_order, index_dtype
from tokenmill.batching.pack import pack_greedy

FIRST_EPOCH = 1
"""fairseq's first epoch number: its order is drawn with ``numpy_seed(seed + 1)``."""


def cut(sizes: Sizes, config: BatchConfig, epoch: int = 1) -> Cut:
    """fairseq's batches (the same every ``epoch``; the batch order is shuffled per epoch elsewhere)."""
    order = fairseq_order(sizes.src, sizes.tgt, config.seed + FIRST_EPOCH)
    order = order.astype(index_dtype(len(sizes)), copy=False)
    dropped: dict[str, int] = {}
    if sizes.keep is not None:
        order = order[sizes.keep[order]]
    src, tgt = ordered_by_length(sizes, order)
    costs = row_costs(src, tgt, config.pad_to_multiple)
    costs, order, src, tgt = drop_over_budget(costs, config.max_tokens, dropped, order, src, tgt)
    if sizes.copies is not None:  # copies of one sample: group by row cost first (batching.copies)
        classes = copies.length_classes(costs, src, tgt)
        costs, order, src, tgt, classes = copies.take(copies.by_class(classes), costs, order, src, tgt, classes)
    ends = pack_greedy(costs, config.max_tokens, config.max_sentences, config.required_batch_size_multiple)
    if sizes.copies is not None:
        order, src, tgt = copies.take(copies.deal(sizes.copies[order], ends, classes), order, src, tgt)
    multiple = config.required_batch_size_multiple
    if config.drop_last and multiple > 1 and len(ends):
        last_rows = int(ends[-1] - (ends[-2] if len(ends) > 1 else 0))
        if last_rows % multiple:
            dropped["irregular_last_batch"] = last_rows
            ends = ends[:-1]
            keep = int(ends[-1]) if len(ends) else 0
            order, src = order[:keep], src[:keep]
            tgt = tgt[:keep] if tgt is not None else None
    return Cut(order=order, ends=ends, dropped=dropped, src_in_order=src, tgt_in_order=tgt)


def batch_order(num_batches: int, seed: int, epoch: int) -> np.ndarray:
    """fairseq's per-epoch batch shuffle: ``numpy_seed(seed + epoch)`` + ``np.random.shuffle``."""
    return np.random.RandomState(seed + epoch).permutation(num_batches)
