"""Megatron-style GPT sample index: which document tokens make up each packed training row.

Language-model rows of ``seq_length`` tokens (plus one extra token for the shifted labels) are
cut from the stream of all documents concatenated epoch after epoch. Three arrays describe it,
element for element the same as megatron-core's ``GPTDataset`` builds for the same sizes, seed
and settings (its ``_build_document_index``, ``helpers.build_sample_idx``, ``_build_shuffle_index``):

* ``document_index`` (P,): the document ids of every epoch, each epoch shuffled; when the last
  epoch is only partly used it is shuffled on its own ("separate final epoch") so that no document
  is under-sampled.
* ``sample_index`` (N + 1, 2): row k holds (position in ``document_index``, token offset) where
  sample k starts; sample k ends where sample k + 1 starts (plus the extra token).
* ``shuffle_index`` (N,): the order in which samples are served.

Unlike megatron-core's C++ loop, the sample index is computed in closed form: sample k starts at
global token k * seq_length of the concatenated stream, so its document position is found from a
running cumulative sum of document lengths (``np.repeat`` over per-position sample counts), in
bounded-size chunks. The document sizes ride along the document shuffle (each shuffled item is
``id << 32 | size``), so that pass reads them in stream order instead of gathering them at random.
All token counts are int64.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tokenmill.errors import ConfigError

INT32_MAX = int(np.iinfo(np.int32).max)
# megatron-core switches the shuffle index from uint32 to int64 at this size.
UINT32_SHUFFLE_LIMIT = int(np.iinfo(np.uint32).max) - 1
# Fraction of an epoch below which the final epoch is shuffled separately (megatron-core's value).
SEPARATE_FINAL_EPOCH_THRESHOLD = 0.80
# Document positions per chunk of the sample-index pass: small enough that the temporaries stay in
# the CPU cache (faster) and add almost nothing to peak memory.
_CHUNK = 1 << 15


@dataclass(frozen=True)
class GPTIndexConfig:
    """Every setting that changes the three index arrays (all of them go into the cache key)."""

    seq_length: int
    """Tokens per training row (the model's context length)."""
    seed: int = 1234
    """Seed of the ``numpy.random.RandomState`` shuffling documents and samples (Megatron's random_seed)."""
    num_samples: int | None = None
    """Minimum number of samples wanted; epochs are added until the stream holds them. None: one epoch
    (or ``num_epochs``). As in Megatron, the index holds every full sample of the epochs it needed."""
    num_epochs: int | None = None
    """Exactly this many passes over the documents (instead of ``num_samples``); no separate final epoch."""
    add_extra_token: bool = True
    """Draw seq_length + 1 tokens per sample so inputs and shifted labels are both seq_length long
    (Megatron's add_extra_token_to_sequence); consecutive samples then overlap by one token."""
    drop_last_partial_sequence: bool = True
    """Drop the final, shorter-than-seq_length sample (Megatron keeps it only for validation when
    drop_last_partial_validation_sequence is False)."""

    def __post_init__(self) -> None:
        if int(self.seq_length) < 2:
            raise ConfigError(f"seq_length must be at least 2 tokens, got {self.seq_length}")
        if not 0 <= int(self.seed) < 2**32:
            raise ConfigError(f"seed must be in [0, 2**32) for numpy's RandomState, got {self.seed}")
        if self.num_samples is not None and self.num_epochs is not None:
            raise ConfigError("give num_samples or num_epochs, not both")
        if self.num_samples is not None and int(self.num_samples) < 0:
            raise ConfigError(f"num_samples must be >= 0, got {self.num_samples}")
        if self.num_epochs is not None and int(self.num_epochs) < 1:
            raise ConfigError(f"num_epochs must be >= 1, got {self.num_epochs}")

    def settings(self) -> dict[str, object]:
        """The fields as plain JSON values (for cache keys and descriptions)."""
        return {
            "seq_length": int(self.seq_length),
            "seed": int(self.seed),
            "num_samples": None if self.num_samples is None else int(self.num_samples),
            "num_epochs": None if self.num_epochs is None else int(self.num_epochs),
            "add_extra_token": bool(self.add_extra_token),
            "drop_last_partial_sequence": bool(self.drop_last_partial_sequence),
        }


@dataclass(frozen=True)
class EpochPlan:
    """How many epochs the sample count needs and whether the last one is shuffled on its own."""

    num_epochs: int
    tokens_per_epoch: int
    separate_final_epoch: bool
    num_samples_sans_final_epoch: int
    """Samples that lie fully before the final epoch (the size of the first shuffle range when separate)."""


@dataclass(frozen=True)
class GPTIndex:
    """The three arrays plus the plan that produced them."""

    document_index: np.ndarray
    sample_index: np.ndarray
    shuffle_index: np.ndarray
    plan: EpochPlan

    def __len__(self) -> int:
        return int(self.shuffle_index.shape[0])


def count_samples(total_tokens: int, seq_length: int, add_extra_token: bool, drop_last: bool) -> int:
    """Number of samples megatron-core's ``build_sample_idx`` cuts from ``total_tokens``.

    With ``drop_last`` False the count is ``ceil`` of a *float32* quotient, exactly as the C++ helper
    computes it, so that very large streams round the same way.
    """
    extra = int(bool(add_extra_token))
    if drop_last:
        return max((int(total_tokens) - extra) // int(seq_length), 0)
    quotient = np.float32(int(total_tokens) - extra) / np.float32(int(seq_length))
    return max(int(np.ceil(quotient)), 0)


def plan_epochs(tokens_per_epoch: int, config: GPTIndexConfig) -> EpochPlan:
    """Epoch count and the separate-final-epoch rule of megatron-core's GPTDataset, in closed form."""
    tokens = int(tokens_per_epoch)
    length = int(config.seq_length)
    extra = int(bool(config.add_extra_token))
    if tokens <= 0:
        raise ConfigError("the selected documents hold no tokens; choose a split or documents with tokens")
    if config.num_epochs is not None:
        epochs = int(config.num_epochs)
        return EpochPlan(epochs, tokens, False, count_samples(epochs * tokens, length, bool(extra), True))
    if config.num_samples is None:
        return EpochPlan(1, tokens, False, 0)
    wanted = int(config.num_samples)
    needed = wanted * length + extra
    epochs = max(1, -(-needed // tokens))
    if epochs == 1:
        return EpochPlan(1, tokens, False, 0)
    sans_final = ((epochs - 1) * tokens - extra) // length
    from_final = wanted - sans_final
    per_epoch = (tokens - extra) // length
    if from_final < 0 or from_final > per_epoch + 1:
        raise ConfigError(
            f"cannot plan {wanted} samples of {length} tokens over epochs of {tokens} tokens "
            f"({from_final} would come from the final epoch, which holds {per_epoch})"
        )
    separate = from_final < int(SEPARATE_FINAL_EPOCH_THRESHOLD * per_epoch)
    return EpochPlan(epochs, tokens, separate, sans_final)


def _shuffle_epochs(work: np.ndarray, count: int, rng: np.random.RandomState, separate_final_epoch: bool) -> None:
    """Shuffle ``work`` (epochs of ``count`` items) in place with megatron-core's draws.

    numpy's legacy shuffle draws the same random numbers for every dtype, so shuffling int64 items
    (its fast 8-byte path) gives Megatron's permutation of its int32 document ids.
    """
    epochs = len(work) // count if count else 1
    if not separate_final_epoch or epochs == 1:
        rng.shuffle(work)
    else:
        split = count * (epochs - 1)
        rng.shuffle(work[:split])  # in place on the views
        rng.shuffle(work[split:])


def _epochs_of(items: np.ndarray, num_epochs: int) -> np.ndarray:
    """``items`` repeated ``num_epochs`` times in one int64 buffer (no intermediate copies)."""
    count = len(items)
    work = np.empty(count * int(num_epochs), dtype=np.int64)
    work[:count] = items
    for epoch in range(1, int(num_epochs)):
        work[epoch * count : (epoch + 1) * count] = work[:count]
    return work


def _packed_stream(
    sizes: np.ndarray, documents: np.ndarray, num_epochs: int, rng: np.random.RandomState, separate_final_epoch: bool
) -> np.ndarray | None:
    """The shuffled epochs as int64 items ``id << 32 | size``, or None when ids or sizes do not fit.

    The sizes ride along the shuffle, so the sample index then reads them in stream order instead of
    gathering ``sizes[document_index]`` at random; ``_halves`` splits the items without a copy.
    """
    if not np.little_endian or (len(documents) and int(documents.max()) > INT32_MAX):
        return None
    count = len(documents)
    work = np.empty(count * int(num_epochs), dtype=np.int64)
    first = work[:count]
    first[...] = documents
    first <<= 32
    first |= sizes[documents]
    for epoch in range(1, int(num_epochs)):
        work[epoch * count : (epoch + 1) * count] = first
    _shuffle_epochs(work, count, rng, separate_final_epoch)
    return work


def _halves(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sizes, ids) int32 views of packed little-endian items."""
    pairs = packed.view(np.int32).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def build_document_index(
    documents: np.ndarray, num_epochs: int, rng: np.random.RandomState, separate_final_epoch: bool
) -> np.ndarray:
    """Document ids for ``num_epochs`` epochs, shuffled; the last epoch on its own when separate.

    Same draws as megatron-core's ``_build_document_index``. int32 unless ids reach 2^31.
    """
    documents = np.asarray(documents)
    fits = len(documents) == 0 or int(documents.max()) <= INT32_MAX
    work = _epochs_of(documents, num_epochs)
    _shuffle_epochs(work, len(documents), rng, separate_final_epoch)
    return work.astype(np.int32 if fits else np.int64)


def sample_index_dtype(sizes: np.ndarray, positions: int) -> np.dtype:
    """int32 when positions and offsets fit (megatron-core's rule), else int64."""
    largest = max(int(positions), int(sizes.max()) if len(sizes) else 0)
    return np.dtype(np.int32) if largest <= INT32_MAX else np.dtype(np.int64)


def build_sample_index(
    sizes: np.ndarray,
    document_index: np.ndarray,
    seq_length: int,
    num_epochs: int,
    tokens_per_epoch: int,
    drop_last_partial_sequence: bool = True,
    add_extra_token: bool = True,
) -> np.ndarray:
    """The (N + 1, 2) sample index; same arguments and result as megatron-core's ``helpers.build_sample_idx``.

    Row k (k >= 1) is the first document position p whose end C[p + 1] reaches k * L + extra (the last
    token sample k - 1 reads) and the offset k * L - C[p], where C is the cumulative token count of the
    stream and L the sequence length. With ``drop_last_partial_sequence`` False a final partial sample
    ends at the last token of the stream.
    """
    return _sample_index(
        lambda begin, end: sizes[document_index[begin:end]],
        len(document_index),
        sample_index_dtype(sizes, len(document_index)),
        seq_length,
        int(num_epochs) * int(tokens_per_epoch),
        drop_last_partial_sequence,
        add_extra_token,
    )


# One chunked pass over the stream (running token ends, then each sample's document and first token) whose
# bookkeeping (samples placed, tokens before the chunk, whether it ran to the end) lives in locals: 67 lines.
def _sample_index(
    stream_lengths: Callable[[int, int], np.ndarray],
    positions: int,
    dtype: np.dtype,
    seq_length: int,
    total: int,
    drop_last_partial_sequence: bool,
    add_extra_token: bool,
) -> np.ndarray:
    """The sample index from the document lengths in stream order, read in chunks of _CHUNK positions.

    Per chunk: running token ends C[p + 1]; how many samples have their last token by each end,
    floor((C[p + 1] - extra) / L); ``np.repeat`` turns those counts into each sample's position.
    """
    length = int(seq_length)
    extra = int(bool(add_extra_token))
    if length < 2:
        raise ConfigError(f"seq_length must be at least 2, got {seq_length}")
    num_samples = count_samples(total, length, bool(extra), drop_last_partial_sequence)
    # Samples whose last token lies inside the stream; any further ones (drop_last False) are partial.
    full = min(num_samples, max((total - extra) // length, 0))
    out = np.empty((num_samples + 1, 2), dtype=dtype)
    out[0] = 0
    shift = length.bit_length() - 1 if length & (length - 1) == 0 else None
    done = 0  # samples placed so far (rows 1..done)
    base = 0  # tokens before the current chunk
    complete = True  # whether every position was visited (then base is the stream total)
    for start in range(0, positions, _CHUNK):
        if done >= full:
            complete = False  # the remaining positions start no sample
            break
        lengths = stream_lengths(start, min(start + _CHUNK, positions)).astype(np.int64)
        ends = np.cumsum(lengths)  # token ends relative to the chunk start
        chunk_tokens = int(ends[-1])
        reached = ends + (base - extra)
        if shift is not None:
            reached >>= shift  # floor division by a power of two
        else:
            reached //= length
        np.clip(reached, 0, full, out=reached)
        last = int(reached[-1])
        if last > done:
            per_position = np.empty_like(reached)
            per_position[0] = reached[0] - done
            np.subtract(reached[1:], reached[:-1], out=per_position[1:])
            owner = np.repeat(np.arange(len(lengths), dtype=np.int64), per_position)
            ends -= lengths  # now where each position starts, relative to the chunk
            first_token = np.arange(done + 1, last + 1, dtype=np.int64)
            first_token *= length
            first_token -= base
            first_token -= ends[owner]
            owner += start
            out[done + 1 : last + 1, 0] = owner
            out[done + 1 : last + 1, 1] = first_token
        base += chunk_tokens
        done = last
    if complete and positions and base != total:
        raise ConfigError(
            f"tokens_per_epoch * num_epochs is {total} but the documents in document_index hold {base} tokens"
        )
    if done < full:
        raise ConfigError(f"the document index holds too few tokens for {full} samples of {length}")
    if num_samples > full:
        # megatron-core: a sample running past the stream ends at the last token of the last document.
        out[full + 1 :, 0] = positions - 1
        out[full + 1 :, 1] = int(stream_lengths(positions - 1, positions)[0]) - extra
    return out


def build_shuffle_index(num_samples: int, total_size: int, rng: np.random.RandomState) -> np.ndarray:
    """[0, num_samples) shuffled, then [num_samples, total_size) shuffled after it (megatron-core's draws).

    uint32 unless the size reaches 2^32 - 2, then int64 (as megatron-core).
    """
    dtype = np.uint32 if int(total_size) < UINT32_SHUFFLE_LIMIT else np.int64
    out = np.empty(int(total_size), dtype=dtype)
    first = np.arange(int(num_samples), dtype=np.int64)
    rng.shuffle(first)
    out[: int(num_samples)] = first
    del first
    if int(num_samples) != int(total_size):
        rest = np.arange(int(num_samples), int(total_size), dtype=np.int64)
        rng.shuffle(rest)
        out[int(num_samples) :] = rest
    return out


def tokens_per_epoch(sizes: np.ndarray, documents: np.ndarray | None) -> int:
    """Tokens in one pass over ``documents`` (all items when None), summed in int64."""
    if documents is None:
        return int(np.asarray(sizes).sum(dtype=np.int64))
    return int(np.asarray(sizes)[documents].sum(dtype=np.int64))


def build_gpt_index(sizes: np.ndarray, config: GPTIndexConfig, documents: np.ndarray | None = None) -> GPTIndex:
    """Document, sample and shuffle index for the items ``documents`` of a store with item ``sizes``.

    ``documents`` are the item ids to draw from (Megatron's ``indexed_indices``, e.g. one split's
    range); None means every item. Equal to megatron-core's GPTDataset arrays for the same inputs.
    """
    sizes = np.asarray(sizes)
    if sizes.ndim != 1:
        raise ConfigError(f"sizes must be 1-D, got shape {sizes.shape}")
    if documents is None:
        documents = np.arange(len(sizes), dtype=np.int32 if len(sizes) <= INT32_MAX else np.int64)
    else:
        documents = np.asarray(documents)
        if documents.ndim != 1 or documents.dtype.kind not in "iu":
            raise ConfigError("documents must be a 1-D array of integer item ids")
        if len(documents) and (int(documents.min()) < 0 or int(documents.max()) >= len(sizes)):
            raise ConfigError(f"documents name items outside the store's {len(sizes)} items")
    plan = plan_epochs(tokens_per_epoch(sizes, documents), config)
    rng = np.random.RandomState(int(config.seed))
    total = plan.num_epochs * plan.tokens_per_epoch
    packed = _packed_stream(sizes, documents, plan.num_epochs, rng, plan.separate_final_epoch)
    if packed is not None:
        stream, ids = _halves(packed)
        sample_index = _sample_index(
            lambda begin, end, view=stream: view[begin:end],
            len(packed),
            sample_index_dtype(sizes, len(packed)),
            config.seq_length,
            total,
            config.drop_last_partial_sequence,
            config.add_extra_token,
        )
        document_index = np.ascontiguousarray(ids)
        del stream, ids, packed
    else:  # ids of 2^31 and more: the plain route
        document_index = build_document_index(documents, plan.num_epochs, rng, plan.separate_final_epoch)
        sample_index = build_sample_index(
            sizes,
            document_index,
            config.seq_length,
            plan.num_epochs,
            plan.tokens_per_epoch,
            config.drop_last_partial_sequence,
            config.add_extra_token,
        )
    num_rows = sample_index.shape[0] - 1
    first_range = plan.num_samples_sans_final_epoch if plan.separate_final_epoch else num_rows
    shuffle_index = build_shuffle_index(first_range, num_rows, rng)
    return GPTIndex(document_index, sample_index, shuffle_index, plan)


__all__ = [
    "EpochPlan",
    "GPTIndex",
    "GPTIndexConfig",
    "build_document_index",
    "build_gpt_index",
    "build_sample_index",
    "build_shuffle_index",
    "count_samples",
    "plan_epochs",
    "tokens_per_epoch",
]
