"""opennmt mode: OpenNMT-tf's length buckets (the Russian seed's worked example) and group_by_window."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from tokenmill.batching import opennmt_mode
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Sizes
from tokenmill.batching.opennmt_mode import bucket_of, group_by_window, window_size


def test_worked_example_batch_100_width_1_length_5():
    # bucket_id = ceil(5 / 1) - 1 = 4; bucket_max_length = 5; window = 100 // 5 = 20
    assert int(bucket_of(5, 1)) == 4
    assert int(window_size(4, 100, 1, 1)) == 20
    # fp16: batch_size_multiple 8 -> (20 // 8) * 8 = 16
    assert int(window_size(4, 100, 1, 8)) == 16


def test_wider_buckets_and_the_multiple_floor():
    assert bucket_of(np.array([1, 2, 3, 4, 5]), 2).tolist() == [0, 0, 1, 1, 2]
    # bucket 1 of width 2 holds lengths 3-4: window = 100 // 4 = 25
    assert int(window_size(1, 100, 2, 1)) == 25
    # a bucket longer than batch_size / multiple still gets `multiple` rows, as OpenNMT-tf does
    assert int(window_size(59, 100, 1, 8)) == 8


def test_examples_batches_without_token_budget():
    assert window_size(np.array([0, 9]), None, 1, 1, max_sentences=32).tolist() == [32, 32]


def simulate_group_by_window(buckets: list[int], windows: dict[int, int]) -> list[list[int]]:
    """tf.data.group_by_window, element by element (the definition)."""
    pending: dict[int, list[int]] = defaultdict(list)
    out = []
    for position, bucket in enumerate(buckets):
        pending[bucket].append(position)
        if len(pending[bucket]) == windows[bucket]:
            out.append(pending.pop(bucket))
    out.extend(pending[b] for b in sorted(pending))
    return out


def test_vectorized_grouping_equals_element_by_element_grouping():
    rng = np.random.default_rng(3)
    buckets = rng.integers(0, 6, 500)
    windows = np.array([7, 5, 4, 3, 2, 2])
    positions, ends = group_by_window(buckets, windows)
    got = [p.tolist() for p in np.split(positions, ends[:-1])]
    assert got == simulate_group_by_window(buckets.tolist(), dict(enumerate(windows.tolist())))


def test_cut_uses_token_budget_over_bucket_max_length():
    rng = np.random.default_rng(0)
    src = rng.integers(1, 30, 3000).astype(np.int32)
    tgt = rng.integers(1, 30, 3000).astype(np.int32)
    config = BatchConfig(mode="opennmt", max_tokens=200, length_bucket_width=3, required_batch_size_multiple=2)
    cut = opennmt_mode.cut(Sizes(src, tgt), config, epoch=1)
    assert sorted(cut.order.tolist()) == list(range(3000))
    longest = np.maximum(src, tgt)
    for batch in np.split(cut.order, cut.ends[:-1]):
        buckets = set(bucket_of(longest[batch], 3).tolist())
        assert len(buckets) == 1  # one bucket per batch
        bucket = buckets.pop()
        window = int(window_size(bucket, 200, 3, 2))
        assert len(batch) <= window  # full windows, and the flushed remainders
        assert len(batch) * (bucket + 1) * 3 <= 200 or len(batch) == 2


def test_sample_buffer_size_zero_keeps_file_order_and_epochs_reshuffle_otherwise():
    src = np.full(40, 4, dtype=np.int32)
    sizes = Sizes(src, src.copy())
    plain = opennmt_mode.cut(sizes, BatchConfig(mode="opennmt", max_tokens=40, sample_buffer_size=0), epoch=1)
    assert plain.order.tolist() == list(range(40))
    one = opennmt_mode.cut(sizes, BatchConfig(mode="opennmt", max_tokens=40), epoch=1)
    two = opennmt_mode.cut(sizes, BatchConfig(mode="opennmt", max_tokens=40), epoch=2)
    assert sorted(one.order.tolist()) == sorted(two.order.tolist()) == list(range(40))
    assert one.order.tolist() != two.order.tolist()
