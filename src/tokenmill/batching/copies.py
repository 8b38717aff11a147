"""Copies of one sample spread over batches (a sampled mix that upsamples a small direction).

With temperature upsampling an epoch holds several copies of one pair. Copies have identical
lengths, so a cut that sorts by length would put them side by side, in one batch. When an epoch
has copies (``Sizes.copies`` gives each item's sample id), every token-budget cut does two things:

1. **Group by length class.** An item's length class is its row cost (the padded longest side, what
   the ``max_tokens`` budget counts) and which side is the longer one. Before the cut, the items are
   stably sorted by class, keeping the mode's own order inside each class. All the items of one
   class then lie in a run of batches: the batches "of its length".
2. **Deal each class's items over its batches.** After the cut, the items of each class are dealt
   again to the same places (slots) of those batches: the slots are visited round by round (the
   first slot of every batch of that class, then the second of every batch, ...), and the items are
   laid into them sample by sample: first the samples with no more copies than the class has
   batches, most copies first, then those with more (which must share a batch anyway). The copies
   of one sample thus take consecutive slots of one round, each in another batch; they share a
   batch only where the sample has more copies than the class has batches, or where the batches of
   the class hold so few of its items (a batch at the edge of a class's run) that no dealing could
   keep them apart.

Every batch keeps its rows and its longest row cost, so ``max_tokens`` and every other budget still
hold; only the shorter side's maximum inside one class can move. (Classes by cost alone keep more
copies apart but mix the two orientations in a batch, whose width then grows to twice the cost:
+5.5% padded slots against +4.4% on the mix of ``benchmarks/bench_copies.py``.) Everything is a
pure function of the inputs: no randomness is added. An epoch without copies (``Sizes.copies`` None)
is cut exactly as before.
"""

from __future__ import annotations

import numpy as np

from tokenmill.batching.order import PACKED_MIN, packed_argsort, radix_argsort


def has_copies(ids: np.ndarray) -> bool:
    """Whether some id occurs more than once: a byte per possible id when the ids are dense (a draw's
    dataset ids), else a sort."""
    ids = np.asarray(ids)
    if len(ids) < 2:
        return False
    if ids.dtype.kind in "iu" and int(ids.min()) >= 0 and int(ids.max()) < 4 * len(ids) + (1 << 20):
        seen = np.zeros(int(ids.max()) + 1, dtype=bool)
        seen[ids] = True
        return int(np.count_nonzero(seen)) < len(ids)
    ordered = np.sort(ids)
    return bool(np.any(ordered[1:] == ordered[:-1]))


def length_classes(costs: np.ndarray, src: np.ndarray, tgt: np.ndarray | None) -> np.ndarray:
    """Each item's length class (step 1): its row cost, and whether the source is the longer side."""
    classes = np.asarray(costs).astype(np.int64) * 2
    if tgt is not None:
        classes += np.asarray(src) >= np.asarray(tgt)
    return classes


def by_class(classes: np.ndarray) -> np.ndarray:
    """Positions sorted by length class, ties keeping their order (step 1 of the module docstring)."""
    return radix_argsort(np.asarray(classes))


def take(positions: np.ndarray, *arrays: np.ndarray | None) -> tuple:
    """Each of ``arrays`` (None stays None) reordered by ``positions``."""
    return tuple(None if a is None else a[positions] for a in arrays)


def _batch_of(ends: np.ndarray, n: int) -> np.ndarray:
    """Batch number of each position, for batches ending at ``ends`` (the last end is ``n``)."""
    return np.repeat(np.arange(len(ends), dtype=np.int64), np.diff(np.concatenate([[0], ends])).astype(np.int64))[:n]


def deal(samples: np.ndarray, ends: np.ndarray, classes: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    """The permutation of positions that deals each class's items over its batches (step 2).

    ``samples[i]`` is the sample id (>= 0) of the item at position ``i`` of the cut's order (copies
    share it), ``ends`` the batch ends, ``classes[i]`` its length class (>= 0); ``counts[i]`` (optional)
    the number of copies of that sample among the items. Returns ``perm`` with ``new_order =
    order[perm]``: each class keeps its slots, its items are re-laid into them. A cut grouped by class
    (classes non-decreasing, the token-budget cuts) takes :func:`_deal_grouped`: two sorts of packed
    words, every other step on the (class, batch) segments; else :func:`deal_by_batch`.
    """
    n = len(samples)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    classes = np.asarray(classes)
    ends = np.asarray(ends, dtype=np.int64)
    grouped = bool(np.all(classes[1:] >= classes[:-1]))
    if grouped and (perm := _deal_grouped(samples, ends, classes, counts)) is not None:
        return perm
    return deal_by_batch(samples, _batch_of(ends, n), classes, ordered=True)


def _deal_grouped(samples: np.ndarray, ends: np.ndarray, classes: np.ndarray, counts: np.ndarray | None
                  ) -> np.ndarray | None:
    """:func:`deal` of positions grouped by class (then batch): the same permutation as
    :func:`deal_by_batch`, the sort keys packed straight into one 64-bit word per item (None when they
    do not fit). The slots: :func:`class_slots`; the items: by (class, fits its batches, most copies
    first, sample, position)."""
    layout = class_slots(ends, classes)
    if layout is None:
        return None
    slots, item_class, room = layout
    if counts is None:
        counts = np.bincount(samples)[samples]
    items = items_order(samples, counts, item_class, room)
    if items is None:
        return None
    perm = np.empty(len(samples), dtype=np.int64)
    perm[slots] = items
    return perm


def class_slots(ends: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The slots of a cut grouped by class, in the order the deal fills them: positions by (class, round,
    position), a round being the place inside its (class, batch) segment. Each class's positions are one
    run, so each run is sorted alone on 32-bit words (:func:`_slots_per_class`) when (round, place in the
    class) fits 32 bits, else all at once on 64-bit words. Returns (slots, class number of each position
    (dense 0..k-1), batches holding each class), or None when the 64-bit keys do not fit 63 bits."""
    n = len(classes)
    segment_starts = np.union1d(ends[:-1][ends[:-1] < n], np.flatnonzero(classes[1:] != classes[:-1]) + 1)
    segment_starts = np.concatenate([[0], segment_starts[segment_starts > 0]]).astype(np.int64)
    lengths = np.diff(np.append(segment_starts, n))
    segment_class = np.asarray(classes[segment_starts], dtype=np.int64)
    dense = np.cumsum(np.concatenate([[0], segment_class[1:] != segment_class[:-1]]))  # 0..k-1 per segment
    room = np.bincount(dense)  # batches holding each class
    slots = _slots_per_class(segment_starts, lengths, dense, room, n)
    if slots is None:
        position_bits = max((n - 1).bit_length(), 1)
        round_bits = max(int(lengths.max() - 1).bit_length(), 1)
        class_bits = max(int(dense[-1]).bit_length(), 1)
        if class_bits + round_bits + position_bits > 63 or 2 * position_bits > 62:
            return None
        # slots: class << (round + position bits) | (position - segment start) << position bits | position
        slots = np.repeat((dense << (round_bits + position_bits)) - (segment_starts << position_bits), lengths)
        slots += np.arange(0, n * ((1 << position_bits) + 1), (1 << position_bits) + 1, dtype=np.int64)
        slots.sort()
        slots &= (1 << position_bits) - 1
    return slots, np.repeat(dense, lengths), room


def _slots_per_class(segment_starts: np.ndarray, lengths: np.ndarray, dense: np.ndarray, room: np.ndarray, n: int
                     ) -> np.ndarray | None:
    """:func:`class_slots`' order with each class's run of positions sorted on its own, on one 32-bit word
    per position, ``round << place bits | place in the class`` (a 32-bit sort is a third of a 64-bit
    one's time); None when the rounds and places need more than 32 bits."""
    first = np.concatenate([[0], np.cumsum(room)[:-1]])  # each class's first segment
    low = segment_starts[first]  # each class's first position
    size = np.diff(np.append(low, n))
    place_bits = max(int(size.max() - 1).bit_length(), 1)
    if place_bits + max(int(lengths.max() - 1).bit_length(), 1) > 32:
        return None
    # (p - segment start) << place bits + (p - class start) = p x (2**place bits + 1) - a per-segment term;
    # computed modulo 2**32, exact because every word fits 32 bits
    per_segment = (-(segment_starts << place_bits) - low[dense]) & 0xFFFFFFFF
    words = np.repeat(per_segment.astype(np.uint32), lengths)
    step = np.arange(n, dtype=np.uint32)
    step *= np.uint32((1 << place_bits) + 1)
    words += step
    slots = np.empty(n, dtype=np.int64)
    mask = np.uint32((1 << place_bits) - 1)
    for start, stop in zip(low.tolist(), (low + size).tolist(), strict=True):
        run = words[start:stop]
        run.sort()
        run &= mask
        np.add(run, np.int64(start), out=slots[start:stop])  # the place in the class, plus the class's first position
    return slots


def items_order(samples: np.ndarray, counts: np.ndarray, item_class: np.ndarray, room: np.ndarray
                ) -> np.ndarray | None:
    """Positions by (class, copies > the class's batches, most copies first, sample, position) (step 2's
    order of the items), one sort of packed words; None when the keys do not fit 63 bits. ``samples``,
    ``counts`` (copies of its sample) and ``item_class`` (dense 0..k-1) per item; ``room``: batches per class."""
    packed = _item_words(samples, counts, item_class, room)
    if packed is None:
        return None
    words, position_bits, _ = packed
    words &= (1 << position_bits) - 1
    return words


def items_dealt(samples: np.ndarray, counts: np.ndarray, item_class: np.ndarray, room: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`items_order` and the sample id (int64) at each of its positions, read from the sorted words
    (no gather of ``samples`` in that order); None where :func:`items_order` is None."""
    packed = _item_words(samples, counts, item_class, room)
    if packed is None:
        return None
    words, position_bits, sample_bits = packed
    ids = words >> position_bits
    ids &= (1 << sample_bits) - 1
    words &= (1 << position_bits) - 1
    return words, ids


def _item_words(samples: np.ndarray, counts: np.ndarray, item_class: np.ndarray, room: np.ndarray
                ) -> tuple[np.ndarray, int, int] | None:
    """The sorted words ``rank of (class, copies) | sample | position`` of :func:`items_order`, with the
    position's and the sample's bits; None when they do not fit 63 bits."""
    n = len(samples)
    position_bits = max((n - 1).bit_length(), 1)
    most = int(counts.max())
    # (class, copies): the rest of the key is a function of it (in place: one array of the items, not two)
    pair = np.multiply(item_class, most + 1, dtype=np.int64)
    pair += counts
    present = np.zeros(len(room) * (most + 1), dtype=bool)
    present[pair] = True
    copies = np.arange(most + 1)
    fits = copies[None, :] <= room[:, None]
    # per class: copies that fit its batches, most first, then those that must share, most first
    key = np.where(fits, most - copies[None, :], 2 * most + 1 - copies[None, :])
    key += (np.arange(len(room)) * (2 * most + 2))[:, None]
    ranked = np.zeros(present.size, dtype=np.int64)
    where = np.flatnonzero(present)
    ranked[where[np.argsort(key.ravel()[where], kind="stable")]] = np.arange(len(where), dtype=np.int64)
    key_bits = max((len(where) - 1).bit_length(), 1)
    sample_bits = max(int(samples.max()).bit_length(), 1)
    if key_bits + sample_bits + position_bits > 63 or int(samples.min()) < 0:
        return None
    words = ranked[pair]
    words <<= sample_bits
    np.bitwise_or(words, samples, out=words, casting="unsafe")  # in place: no shifted copy of the samples
    words <<= position_bits
    words |= np.arange(n, dtype=np.int64)
    words.sort()
    return words, position_bits, sample_bits


def deal_by_batch(samples: np.ndarray, batch: np.ndarray, classes: np.ndarray, *, ordered: bool = False) -> np.ndarray:
    """:func:`deal` with the batch number (>= 0) of each position given (``ordered``: non-decreasing)."""
    n = len(samples)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    samples = np.unique(samples, return_inverse=True)[1] if int(np.max(samples)) >= 2**32 else samples
    classes = np.asarray(classes).astype(np.int64, copy=False)
    present = np.bincount(classes) > 0
    classes = (np.cumsum(present) - 1)[classes]  # dense 0..k-1
    batch = np.asarray(batch, dtype=np.int64)
    # by class, then batch, then position (a cut grouped by class is in that order already)
    order = None if ordered and bool(np.all(classes[1:] >= classes[:-1])) else (
        radix_argsort(classes) if ordered else _lsd((classes, batch)))
    by_class, by_batch = (classes, batch) if order is None else (classes[order], batch[order])
    starts = np.flatnonzero(np.concatenate([[True], (by_class[1:] != by_class[:-1]) | (by_batch[1:] != by_batch[:-1])]))
    rounds = np.arange(n, dtype=np.int64) - np.repeat(starts, np.diff(np.concatenate([starts, [n]])))
    within = _lsd((by_class, rounds))  # by class, round, then batch (kept from before)
    slots = within if order is None else order[within]
    room = np.bincount(by_class[starts])  # batches holding each class
    copies = np.bincount(samples)[samples]
    must_share = copies > room[classes]
    # samples that fit their class's batches first (most copies first), those that must share last
    items = _lsd((_dense(classes * 2 + must_share, int(copies.max()) - copies), samples))
    perm = np.empty(n, dtype=np.int64)
    perm[slots] = items
    return perm


def _dense(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """One key ordered like (``major``, ``minor``) (non-negative integers): the pair's rank among the
    pairs that occur, so a sort by it and a further key packs into fewer bits."""
    pair = major.astype(np.int64) * (int(minor.max()) + 1) + minor
    present = np.zeros(int(pair.max()) + 1, dtype=np.int64)
    present[pair] = 1
    return (np.cumsum(present) - 1)[pair]


def _lsd(keys: tuple[np.ndarray, ...]) -> np.ndarray:
    """Stable argsort by several non-negative integer keys below 2**32 (first = most significant):
    one packed sort when they fit (:func:`~tokenmill.batching.order.packed_argsort`), else one radix
    sort per key, least significant first."""
    if len(keys[0]) >= PACKED_MIN and (packed := packed_argsort(list(keys))) is not None:
        return packed
    perm = radix_argsort(keys[-1])
    for column in keys[-2::-1]:
        perm = perm[radix_argsort(column[perm])]
    return perm


def samples_in_order(samples: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``samples[order]`` and the copies of each one's sample among ``samples`` (None when the ids do not
    fit 32 bits). Counted in ``samples``' own order (a draw's ids come in runs: the counts are cheap
    there) and gathered together with the ids as one word per item: one gather in random order, not three.
    Every copy of a sample must be in ``order`` or none (copies have one length: a cut keeps or drops all)."""
    samples = np.asarray(samples)
    if not len(samples) or int(samples.min()) < 0 or int(samples.max()) >= 2**32:
        return samples[order], None
    words = np.bincount(samples)[samples].astype(np.uint64)
    words <<= np.uint64(32)
    words |= samples.astype(np.uint64, copy=False)
    words = words[order]
    ids = (words & np.uint64(0xFFFFFFFF)).astype(np.int64)
    words >>= np.uint64(32)
    return ids, words.view(np.int64)


def repeats_per_batch(samples_in_order: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Extra copies each batch holds (items minus distinct samples), for reports and benchmarks."""
    n = len(samples_in_order)
    batch = _batch_of(np.asarray(ends, dtype=np.int64), n)
    pairs = np.unique(np.stack([batch, np.asarray(samples_in_order, dtype=np.int64)]), axis=1)
    distinct = np.bincount(pairs[0], minlength=len(ends))
    return np.diff(np.concatenate([[0], ends])).astype(np.int64) - distinct


__all__ = ["by_class", "class_slots", "deal", "deal_by_batch", "has_copies", "items_dealt", "items_order",
           "length_classes", "repeats_per_batch", "samples_in_order", "take"]
