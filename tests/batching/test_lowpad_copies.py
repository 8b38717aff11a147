"""lowpad's cut of an epoch with copies dealt from the draw's order (:mod:`tokenmill.batching.lowpad_copies`)
gives what the cut by its definition gives (items along the curve, cut, dealt again): the same batches,
lengths and sample ids in every slot, whatever the padding, row multiple, row cap, one side or two, and
with items over the budget dropped."""

from __future__ import annotations

import numpy as np
import pytest

from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Sizes
from tokenmill.batching.lowpad import _classes_of, cut_along_curve, cut_with
from tokenmill.batching.lowpad_copies import cut_spread
from tokenmill.batching.order import generator


def draw(n: int, seed: int, *, one_side: bool = False, longest: int = 250) -> Sizes:
    """``n`` items drawn with repeats from a pool of n / 3 samples (several copies of many)."""
    rng = np.random.default_rng(seed)
    pool = max(n // 3, 1)
    src_of = np.clip(rng.lognormal(3.0, 1.0, pool), 1, longest).astype(np.int32)
    tgt_of = np.clip(src_of * rng.lognormal(0.0, 0.3, pool), 1, longest).astype(np.int32)
    ids = np.concatenate([rng.permutation(pool), rng.integers(0, pool, n - pool)]).astype(np.int64)
    return Sizes(src=src_of[ids], tgt=None if one_side else tgt_of[ids], copies=ids)


CONFIGS = {
    "plain": BatchConfig(max_tokens=2048, seed=1),
    "multiple": BatchConfig(max_tokens=2048, seed=2, required_batch_size_multiple=8, pad_to_multiple=8,
                            max_sentences=96),
    "drops": BatchConfig(max_tokens=200, seed=3),  # items over 200 tokens are dropped
    "penalty": BatchConfig(max_tokens=4096, seed=4, batch_penalty=0.05),
}


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize(("n", "one_side"), [(4000, False), (90_000, False), (20_000, True)])
def test_same_batches_and_ids_as_the_cut_along_the_curve(name, n, one_side):
    config = CONFIGS[name]
    sizes = draw(n, seed=n + len(name), one_side=one_side)
    spread = cut_spread(sizes, config, _classes_of(config))
    assert spread is not None  # the fast cut ran (the comparison below is not against itself)
    plain = cut_along_curve(sizes, config, generator(config.seed, 1, 1))
    np.testing.assert_array_equal(spread.ends, plain.ends)
    np.testing.assert_array_equal(spread.copies_in_order, plain.copies_in_order)
    for mine, theirs in [(spread.src_in_order, plain.src_in_order), (spread.tgt_in_order, plain.tgt_in_order)]:
        assert (mine is None) == (theirs is None)
        if mine is not None:
            assert mine.dtype == theirs.dtype
            np.testing.assert_array_equal(mine, theirs)
    assert spread.dropped == plain.dropped
    assert spread.order.dtype == plain.order.dtype
    # the order names one draw position per slot, each once, holding the slot's sample
    np.testing.assert_array_equal(np.sort(spread.order), np.sort(plain.order))
    np.testing.assert_array_equal(sizes.copies[spread.order], spread.copies_in_order)
    if name == "drops":
        assert plain.dropped["longer_than_max_tokens"] > 0


def test_cut_with_takes_the_spread_cut_and_falls_back_where_it_cannot():
    config = CONFIGS["plain"]
    sizes = draw(5000, seed=7)
    fast = cut_with(sizes, config, generator(config.seed, 1, 1))
    np.testing.assert_array_equal(fast.copies_in_order, cut_spread(sizes, config, _classes_of(config)).copies_in_order)
    keep = np.ones(len(sizes), dtype=bool)
    keep[::5] = False  # a keep mask: the cut along the curve does it
    masked = Sizes(sizes.src, sizes.tgt, keep=keep, copies=sizes.copies)
    assert cut_spread(masked, config, _classes_of(config)) is None
    got = cut_with(masked, config, generator(config.seed, 1, 1))
    np.testing.assert_array_equal(got.copies_in_order, cut_along_curve(masked, config, generator(config.seed, 1, 1))
                                  .copies_in_order)
