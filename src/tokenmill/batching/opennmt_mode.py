"""opennmt mode: OpenNMT-tf's training stream — shuffle, then group into length buckets.

OpenNMT-tf (``opennmt/data/dataset.py``, ``batch_sequence_dataset``) reads the shuffled corpus as
a stream and sends each sample to a bucket::

    bucket_id         = ceil(max(source_length, target_length) / length_bucket_width) - 1
    bucket_max_length = (bucket_id + 1) * length_bucket_width
    window            = batch_size // bucket_max_length            # token batch_size
    window            = (window // batch_size_multiple) * batch_size_multiple
    window            = max(window, batch_size_multiple)

(``tf.data.Dataset.group_by_window``). A bucket emits a batch as soon as it holds ``window``
samples; at the end of the stream the partly filled buckets are emitted, smallest bucket first.
Example: batch_size 100, width 1, a 5-token sample: bucket 4, window 100 // 5 = 20, and with
``batch_size_multiple`` 8, (20 // 8) * 8 = 16.

Here the same grouping is computed for the whole epoch at once: a stable sort by bucket keeps
stream order inside each bucket, so batch ``j`` of a bucket is its samples ``j*window`` to
``(j+1)*window``, emitted when its last sample arrives in the stream.
"""

from __future__ import annotations

import numpy as np

from tokenmill.batching import copies
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Cut, Sizes, drop_over_budget, ordered, row_costs
from tokenmill.batching.order import SAMPLE_SHUFFLE, generator, random_shard_order, stable_argsort


def bucket_of(lengths: np.ndarray | int, width: int) -> np.ndarray:
    """OpenNMT-tf's bucket id: ``ceil(length / width) - 1`` (0 for empty samples)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return np.maximum(-(-lengths // width) - 1, 0)


def window_size(
    bucket: np.ndarray | int, batch_size: int | None, width: int, multiple: int = 1, max_sentences: int | None = None
) -> np.ndarray:
    """Samples per batch in ``bucket`` (``batch_size`` in tokens; None: ``max_sentences`` examples)."""
    bucket = np.asarray(bucket, dtype=np.int64)
    if batch_size is None:
        size = np.full(bucket.shape, max_sentences, dtype=np.int64)
    else:
        size = batch_size // ((bucket + 1) * width)
        if max_sentences is not None:
            size = np.minimum(size, max_sentences)
    size = (size // multiple) * multiple
    return np.maximum(size, multiple)


def stream_order(ids: np.ndarray, sample_buffer_size: int, rng: np.random.Generator) -> np.ndarray:
    """The epoch's sample stream: shuffled whole, by ``random_shard``, or not at all."""
    n = len(ids)
    if sample_buffer_size == 0 or n == 0:
        return ids
    if sample_buffer_size < 0 or sample_buffer_size >= n:
        return ids[rng.permutation(n)]
    return ids[random_shard_order(n, sample_buffer_size, rng)]


def group_by_window(buckets: np.ndarray, windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """tf's ``group_by_window`` over a whole stream.

    ``buckets[i]`` is the bucket of the i-th stream element, ``windows[k]`` the batch size of bucket
    ``k``. Returns (stream positions in batch order, int64 batch ends), batches in emission order.
    """
    n = len(buckets)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    grouped = stable_argsort(buckets)
    present, first, counts = np.unique(buckets[grouped], return_index=True, return_counts=True)
    starts: list[np.ndarray] = []
    stops: list[np.ndarray] = []
    times: list[np.ndarray] = []
    for rank, (bucket, begin, count) in enumerate(zip(present.tolist(), first.tolist(), counts.tolist(), strict=True)):
        window = int(windows[bucket])
        full = count // window
        begins = begin + window * np.arange(full, dtype=np.int64)
        starts.append(begins)
        stops.append(begins + window)
        times.append(grouped[begins + window - 1].astype(np.int64))
        if count % window:  # flushed at the end of the stream, in bucket order
            starts.append(np.array([begin + full * window], dtype=np.int64))
            stops.append(np.array([begin + count], dtype=np.int64))
            times.append(np.array([n + rank], dtype=np.int64))
    start = np.concatenate(starts)
    stop = np.concatenate(stops)
    emitted = np.argsort(np.concatenate(times), kind="stable")
    start, stop = start[emitted], stop[emitted]
    lengths = stop - start
    ends = np.cumsum(lengths)
    positions = np.arange(n, dtype=np.int64) + np.repeat(start - (ends - lengths), lengths)
    return grouped[positions], ends


def cut(sizes: Sizes, config: BatchConfig, epoch: int) -> Cut:
    """This epoch's batches, in the order OpenNMT-tf's stream emits them."""
    dropped: dict[str, int] = {}
    rng = generator(config.seed, epoch, SAMPLE_SHUFFLE)
    stream = stream_order(sizes.kept_ids(), config.sample_buffer_size, rng)
    lengths = row_costs(*ordered(sizes, stream), config.pad_to_multiple)
    lengths, stream = drop_over_budget(lengths, config.max_tokens, dropped, stream)
    buckets = bucket_of(lengths, config.length_bucket_width)
    top = int(buckets.max()) if len(buckets) else 0
    windows = window_size(
        np.arange(top + 1),
        config.max_tokens,
        config.length_bucket_width,
        config.required_batch_size_multiple,
        config.max_sentences,
    )
    positions, ends = group_by_window(buckets, windows)
    if sizes.copies is not None:  # copies of one sample: dealt over the batches of their bucket
        src, tgt = ordered(sizes, stream[positions])
        classes = copies.length_classes(buckets[positions], src, tgt)
        positions = positions[copies.deal(sizes.copies[stream[positions]], ends, classes)]
    return Cut(order=stream[positions], ends=ends, dropped=dropped)
