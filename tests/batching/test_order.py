"""Seeded orders: fairseq's, the Hilbert-curve order of lowpad mode, OpenNMT's random_shard."""

from __future__ import annotations

import numpy as np

from tokenmill.batching.epochs import first_positions
from tokenmill.batching.order import (
    argsort_ids,
    curve_keys,
    curve_order,
    fairseq_order,
    generator,
    hilbert_index,
    legacy_permutation,
    packed_argsort,
    radix_argsort,
    random_shard_order,
    stable_argsort,
)


def test_generators_are_pure_functions_of_seed_epoch_purpose():
    a = generator(3, 2, 1).permutation(100)
    assert np.array_equal(a, generator(3, 2, 1).permutation(100))
    assert not np.array_equal(a, generator(3, 3, 1).permutation(100))
    assert not np.array_equal(a, generator(3, 2, 2).permutation(100))


def test_legacy_permutation_is_numpy_seed_without_global_state():
    # fairseq's numpy_seed: the global legacy generator, seeded (what we must reproduce)
    state = np.random.get_state()  # noqa: NPY002
    np.random.seed(11)  # noqa: NPY002
    expected = np.random.permutation(50)  # noqa: NPY002
    np.random.set_state(state)  # noqa: NPY002
    before = np.random.get_state()[1].copy()  # noqa: NPY002
    assert np.array_equal(legacy_permutation(11, 50), expected)
    assert np.array_equal(np.random.get_state()[1], before)  # noqa: NPY002


def test_fairseq_order_sorts_by_source_then_target_with_random_ties():
    src = np.array([3, 1, 2, 1, 3, 2, 1])
    tgt = np.array([1, 2, 2, 1, 1, 1, 2])
    order = fairseq_order(src, tgt, seed=5)
    keys = list(zip(src[order].tolist(), tgt[order].tolist(), strict=True))
    assert keys == sorted(keys)
    # ties (same lengths) follow the seeded permutation
    perm = legacy_permutation(5, 7).tolist()
    ties = [i for i in order.tolist() if (src[i], tgt[i]) == (1, 2)]
    assert ties == sorted(ties, key=perm.index)


def test_hilbert_curve_visits_each_cell_once_through_neighbours():
    xs, ys = np.meshgrid(np.arange(16), np.arange(16))
    d = hilbert_index(xs.ravel(), ys.ravel(), 4)
    assert sorted(d.tolist()) == list(range(256))
    path = np.argsort(d)
    steps = np.abs(np.diff(xs.ravel()[path])) + np.abs(np.diff(ys.ravel()[path]))
    assert set(steps.tolist()) == {1}


def test_curve_keys_rank_occupied_cells_along_the_curve():
    src = np.array([5, 1, 5, 2, 1], dtype=np.int32)
    tgt = np.array([5, 1, 5, 2, 3], dtype=np.int32)
    keys, cell_src, cell_tgt = curve_keys(src, tgt)
    assert keys[0] == keys[2]  # same cell, same key
    assert sorted(set(keys.tolist())) == [0, 1, 2, 3]  # dense ranks of the 4 occupied cells
    assert np.array_equal(cell_src[keys], src) and np.array_equal(cell_tgt[keys], tgt)


def test_curve_order_groups_equal_lengths_and_randomizes_ties():
    rng = np.random.default_rng(0)
    src = rng.integers(1, 6, 2000).astype(np.int32)
    tgt = rng.integers(1, 6, 2000).astype(np.int32)
    a, a_src, a_tgt = curve_order(None, src, tgt, generator(1, 1, 1))
    b, _, _ = curve_order(None, src, tgt, generator(1, 2, 1))
    assert np.array_equal(a_src, src[a]) and np.array_equal(a_tgt, tgt[a])  # lengths in order, from cell runs
    assert sorted(a.tolist()) == list(range(2000))
    cells = src[a].astype(np.int64) * 10 + tgt[a]
    assert (np.diff(cells) != 0).sum() == len(np.unique(cells)) - 1  # each cell in one run
    assert np.array_equal(src[a], src[b]) and np.array_equal(tgt[a], tgt[b])  # same lengths sequence
    assert not np.array_equal(a, b)  # but other samples in each slot


def test_radix_argsort_matches_stable_argsort_beyond_16_bits():
    keys = np.random.default_rng(1).integers(0, 2**20, 10000)
    assert np.array_equal(radix_argsort(keys), np.argsort(keys, kind="stable"))
    small = np.random.default_rng(2).integers(0, 300, 1000)
    assert np.array_equal(stable_argsort(small), np.argsort(small, kind="stable"))


def test_random_shard_visits_whole_blocks_in_random_order():
    # OpenNMT-tf's example: 250 samples, sample_buffer_size 50 -> 5 shards starting at 0, 50, ..., 200
    order = random_shard_order(250, 50, generator(4, 1, 3))
    blocks = order.reshape(5, 50) // 50
    assert (blocks == blocks[:, :1]).all()  # each stretch of 50 is one shard
    assert sorted(blocks[:, 0].tolist()) == [0, 1, 2, 3, 4]
    assert sorted(order.tolist()) == list(range(250))
    assert blocks[:, 0].tolist() != [0, 1, 2, 3, 4] or not np.array_equal(order[:50], np.arange(50))


def test_packed_argsort_is_the_stable_argsort_and_declines_what_does_not_fit():
    rng = np.random.default_rng(3)
    major, minor = rng.integers(0, 40, 100_000), rng.integers(0, 3000, 100_000)
    assert np.array_equal(packed_argsort([major, minor]), np.lexsort((minor, major)))  # lexsort is stable
    big = rng.integers(0, 2**31, 100_000)
    assert np.array_equal(radix_argsort(big), np.argsort(big, kind="stable"))
    assert np.array_equal(argsort_ids(big), np.argsort(big, kind="stable"))
    assert packed_argsort([big, big]) is None  # 31 + 31 + 17 bits do not fit in 64
    assert packed_argsort([np.array([-1, 2])]) is None


def test_first_positions_finds_the_first_copy_dense_or_sparse():
    rng = np.random.default_rng(4)
    for top in (100, 10**12):  # a table over dense ids; a search over sparse ones
        values = rng.integers(0, top, 120_000)
        lookups = values[rng.integers(0, len(values), 50_000)]
        by_id = np.argsort(values, kind="stable")
        assert np.array_equal(first_positions(values, lookups), by_id[np.searchsorted(values[by_id], lookups)])
