"""Dataset blending and split strings, equal to megatron-core's.

Blending: sample ``i`` of a blend comes from the dataset whose share lags furthest behind its
weight — ``argmax_d(w_d * max(i, 1) - count_d)``, ties to the lowest index — and is that dataset's
next sample. This is megatron-core's greedy ``helpers.build_blending_indices`` (and, with sizes in
place of weights and exhausted datasets skipped, ``build_exhaustive_blending_indices``); we return
the same ``dataset_index`` (int16) and ``dataset_sample_index`` (int64) bit for bit.

The greedy is sequential, but its state is tiny and forgets its past within a few dozen steps:
started from any near-proportional count vector it falls into the true trajectory. So the
sample range is cut into blocks that run side by side as numpy vectors, each block starting a short
warm-up before its first sample from a proportional guess; the guess is then checked exactly — the
state a block ends with must equal the state its successor started from — and any block whose
check fails is run again from its predecessor's true end state until every seam matches. The
result is exact by induction from block 0 (which starts from zero counts).

Split strings (``"969,30,1"``): the document ranges megatron-core's dataset builder gives the
train, valid and test splits of a store with ``n`` documents.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections.abc import Sequence

import numpy as np
import xxhash

from tokenmill.cache import CacheLike, array_cache
from tokenmill.data.blend_members import knows_content, member_keys
from tokenmill.errors import ConfigError

# Blending sizes up to this run the plain scalar loop (no numpy overhead per step).
_SCALAR_LIMIT = 4_096
# Steps each block runs before its first recorded sample to forget its guessed start state.
_WARMUP = 64
# Samples per block; blocks run side by side, so a bigger block means fewer, wider numpy steps.
_MIN_BLOCK = 512
_MAX_BLOCKS = 32_768
# Steps staged in memory before they are written to the (block-major) outputs.
_TILE = 64
SPLIT_NAMES = ("train", "valid", "test")


def normalize_weights(weights: Sequence[float]) -> np.ndarray:
    """Weights divided by their sum in float64, as megatron-core's ``normalize`` (finite, > 0 each)."""
    array = np.asarray(weights, dtype=np.float64).reshape(-1)
    if array.size == 0:
        raise ConfigError("blend weights are empty; give one positive weight per dataset")
    if not np.all(np.isfinite(array)) or np.any(array <= 0):
        raise ConfigError(f"blend weights must be finite and > 0, got {array.tolist()}")
    if array.size >= 32767:
        raise ConfigError(f"at most 32766 datasets can be blended (int16 dataset index), got {array.size}")
    return array / array.sum()


def samples_per_dataset(normalized_weights: Sequence[float], size: int, surplus: float = 0.0) -> list[int]:
    """Samples to request from each dataset for a blend of ``size`` (megatron-core's per-dataset sizes).

    ``ceil(ceil(size * w) * (1 + surplus))``; megatron-core builds its datasets with a surplus of
    0.005 (``mid_level_dataset_surplus``) so the blend never asks a dataset for more than it has.
    """
    return [math.ceil(math.ceil(int(size) * float(w)) * (1 + surplus)) for w in normalized_weights]


# ---------------------------------------------------------------- the greedy, scalar


def _scalar_greedy(
    weights: np.ndarray, begin: int, end: int, counts: list[int], caps: np.ndarray | None, out: np.ndarray
) -> list[int]:
    """Steps ``begin``..``end`` one by one from ``counts``; writes chosen datasets into ``out``."""
    w = [float(x) for x in weights]
    cap = None if caps is None else [int(x) for x in caps]
    num = len(w)
    for i in range(begin, end):
        s = max(float(i), 1.0)
        best = -1
        best_error = -math.inf
        for d in range(num):
            if cap is not None and counts[d] >= cap[d]:
                continue
            error = w[d] * s - float(counts[d])
            if best < 0 or error > best_error:
                best, best_error = d, error
        out[i - begin] = best
        counts[best] += 1
    return counts


# ---------------------------------------------------------------- the greedy, blocks side by side


class _Blocks:
    """Many independent runs of the greedy advanced in lockstep, one column per run.

    All work buffers are allocated once (fresh multi-megabyte temporaries every step would cost
    more in page faults than the arithmetic).
    """

    def __init__(self, weights: np.ndarray, caps: np.ndarray | None, width: int) -> None:
        num = len(weights)
        self.w = weights.reshape(-1, 1)
        self.caps = None if caps is None else caps.astype(np.float64).reshape(-1, 1)
        self.labels = np.arange(num, dtype=np.int16).reshape(-1, 1)
        self.s = np.empty(width, dtype=np.float64)
        self.errors = np.empty((num, width), dtype=np.float64)
        self.best = np.empty(width, dtype=np.float64)
        self.better = np.empty(width, dtype=bool)
        self.choice = np.empty(width, dtype=np.int16)
        self.onehot = np.empty((num, width), dtype=bool)
        self.taken = np.empty(width, dtype=np.float64)
        self.where = np.empty(width, dtype=np.int64)
        self.columns = np.arange(width, dtype=np.int64)

    def step(self, counts: np.ndarray, first: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
        """One greedy step of every run (sample number ``first + t``); updates ``counts`` (D, runs) in
        place and returns the chosen datasets and each choice's sample number (views of buffers)."""
        width = counts.shape[1]
        s = self.s[:width]
        np.add(first, float(t), out=s)
        np.maximum(s, 1.0, out=s)  # megatron-core uses max(i, 1)
        errors = self.errors[:, :width]
        np.multiply(self.w, s, out=errors)  # the same two roundings as the C++ helper
        np.subtract(errors, counts, out=errors)
        if self.caps is not None:
            np.copyto(errors, -np.inf, where=counts >= self.caps)
        best, better, choice = self.best[:width], self.better[:width], self.choice[:width]
        taken = self.taken[:width]
        if errors.shape[0] == 2:  # two datasets: one comparison decides, no one-hot needed
            np.greater(errors[1], errors[0], out=better)
            np.copyto(taken, counts[0])
            np.copyto(taken, counts[1], where=better)
            counts[1] += better
            np.logical_not(better, out=better)
            counts[0] += better
            np.logical_not(better, out=choice, casting="unsafe")
            return choice, taken
        # The first dataset holding the maximum wins, as the C++ loop's strict ">" picks it.
        np.max(errors, axis=0, out=best)
        for d in range(errors.shape[0] - 1, -1, -1):
            np.equal(errors[d], best, out=better)
            np.copyto(choice, d, where=better)
        if errors.shape[0] <= 3:
            onehot = self.onehot[:, :width]
            np.equal(choice, self.labels, out=onehot)
            np.sum(np.multiply(onehot, counts, out=errors), axis=0, out=taken)
            counts += onehot
        else:  # many datasets: touch only the chosen count of each run
            flat = counts.reshape(-1)
            assert np.shares_memory(flat, counts), "counts must be C-contiguous"
            where = self.where[:width]
            np.multiply(choice, width, out=where, dtype=np.int64)  # not int16: it would wrap
            where += self.columns[:width]
            np.take(flat, where, out=taken)
            flat[where] = taken + 1
        return choice, taken

    def run(
        self,
        counts: np.ndarray,
        starts: np.ndarray,
        steps: int,
        chosen: np.ndarray | None = None,
        numbers: np.ndarray | None = None,
    ) -> None:
        """Advance every run ``steps`` steps from sample numbers ``starts``; when given, write step t's
        choices and sample numbers into column t of ``chosen`` / ``numbers`` (runs, steps)."""
        first = starts.astype(np.float64)
        record = chosen is not None and numbers is not None
        if record:
            # Stage _TILE steps in contiguous rows, then write them as one (runs, _TILE) block: writing
            # each step straight into its column would touch a different page for every run.
            tile_chosen = np.empty((_TILE, counts.shape[1]), dtype=np.int16)
            tile_numbers = np.empty((_TILE, counts.shape[1]), dtype=np.float64)
        for t in range(steps):
            choice, taken = self.step(counts, first, t)
            if record:
                tile_chosen[t % _TILE] = choice
                tile_numbers[t % _TILE] = taken
                if t % _TILE == _TILE - 1 or t == steps - 1:
                    low = t - t % _TILE
                    chosen[:, low : t + 1] = tile_chosen[: t + 1 - low].T
                    numbers[:, low : t + 1] = tile_numbers[: t + 1 - low].T


def _guess_counts(weights: np.ndarray, at: np.ndarray, caps: np.ndarray | None) -> np.ndarray:
    """Near-proportional count vectors summing to ``at`` (largest remainders get the extra samples)."""
    ideal = weights.reshape(-1, 1) * at.astype(np.float64).reshape(1, -1)
    counts = np.floor(ideal)
    short = at - counts.sum(axis=0).astype(np.int64)
    order = np.argsort(-(ideal - counts), axis=0, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(len(weights)).reshape(-1, 1), axis=0)
    counts += rank < short.reshape(1, -1)
    if caps is not None:
        np.minimum(counts, caps.astype(np.float64).reshape(-1, 1), out=counts)
    return counts


def _blocked_greedy(weights: np.ndarray, size: int, caps: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The greedy's choices and sample numbers for samples 0..size-1, block-parallel, verified exact."""
    num = len(weights)
    blocks = max(1, min(_MAX_BLOCKS, size // _MIN_BLOCK))
    length = -(-size // blocks)
    starts = np.arange(blocks, dtype=np.int64) * length
    engine = _Blocks(weights, caps, blocks)
    # Guessed states a warm-up before each block (block 0 starts exactly from zero counts). Blocks
    # are at least _MIN_BLOCK > _WARMUP long, so every warm-up starts at a non-negative sample number.
    counts = np.zeros((num, blocks), dtype=np.float64)
    if blocks > 1:
        warm_starts = starts[1:] - _WARMUP
        guessed = _guess_counts(weights, warm_starts, caps)
        engine.run(guessed, warm_starts, _WARMUP)
        counts[:, 1:] = guessed
    start_state = counts.copy()
    # Block b's samples are row b: the flat arrays are in sample order without any transpose.
    dataset_index = np.empty(blocks * length, dtype=np.int16)
    sample_index = np.empty(blocks * length, dtype=np.int64)
    chosen, numbers = dataset_index.reshape(blocks, length), sample_index.reshape(blocks, length)
    engine.run(counts, starts, length, chosen, numbers)
    end_state = counts
    # Check every seam; re-run blocks whose guessed start differs from their predecessor's true end.
    while True:
        bad = np.flatnonzero(np.any(end_state[:, :-1] != start_state[:, 1:], axis=0)) + 1
        if bad.size == 0:
            break
        redo = end_state[:, bad - 1].copy()
        start_state[:, bad] = redo
        redo_chosen = np.empty((bad.size, length), dtype=np.int16)
        redo_numbers = np.empty((bad.size, length), dtype=np.int64)
        engine.run(redo, starts[bad], length, redo_chosen, redo_numbers)
        chosen[bad] = redo_chosen
        numbers[bad] = redo_numbers
        end_state[:, bad] = redo
    return dataset_index[:size], sample_index[:size]


def _sample_numbers(dataset_index: np.ndarray, num: int) -> np.ndarray:
    """For each position, how many earlier positions chose the same dataset (its sample number)."""
    out = np.empty(len(dataset_index), dtype=np.int64)
    for d in range(num):
        where = np.flatnonzero(dataset_index == d)
        out[where] = np.arange(len(where), dtype=np.int64)
    return out


def _greedy(weights: np.ndarray, size: int, caps: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    num = len(weights)
    if size == 0:
        return np.zeros(0, dtype=np.int16), np.zeros(0, dtype=np.int64)
    if num == 1:
        return np.zeros(size, dtype=np.int16), np.arange(size, dtype=np.int64)
    if size <= _SCALAR_LIMIT:
        dataset_index = np.empty(size, dtype=np.int16)
        _scalar_greedy(weights, 0, size, [0] * num, caps, dataset_index)
        return dataset_index, _sample_numbers(dataset_index, num)
    return _blocked_greedy(weights, size, caps)


def build_blending_indices(weights: Sequence[float], size: int) -> tuple[np.ndarray, np.ndarray]:
    """(dataset_index int16, dataset_sample_index int64) for ``size`` samples — megatron-core's greedy.

    ``weights`` are used as given, like megatron-core's helper; pass ``normalize_weights(raw)`` for
    what megatron-core's ``BlendedDataset`` does with user weights.
    """
    array = np.asarray(weights, dtype=np.float64).reshape(-1)
    if array.size == 0 or not np.all(np.isfinite(array)):
        raise ConfigError(f"blend weights must be finite numbers, got {array.tolist()}")
    if int(size) < 0:
        raise ConfigError(f"blend size must be >= 0, got {size}")
    return _greedy(array, int(size), None)


def build_exhaustive_blending_indices(sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Exactly ``sizes[d]`` samples of every dataset, interleaved in proportion (megatron-core's
    ``build_exhaustive_blending_indices``, used when a blend gives no total size)."""
    caps = np.asarray(sizes, dtype=np.int64).reshape(-1)
    if caps.size == 0 or np.any(caps <= 0):
        raise ConfigError(f"dataset sizes for an exhaustive blend must be > 0, got {caps.tolist()}")
    total = int(caps.sum())
    weights = caps.astype(np.float64) / float(total)
    return _greedy(weights, total, caps)


# ---------------------------------------------------------------- split strings


def parse_split(split: str) -> list[float]:
    """``"969,30,1"`` -> normalized train/valid/test fractions (megatron-core's parse_and_normalize_split).

    Missing trailing parts are 0; a bad string is a ConfigError naming it.
    """
    parts = [part.strip() for part in str(split).split(",")]
    if not 1 <= len(parts) <= 3 or any(not re.fullmatch(r"\d+(\.\d*)?|\.\d+", part) for part in parts):
        raise ConfigError(f"split {split!r} must be up to three comma-separated non-negative numbers, e.g. '969,30,1'")
    values = [float(part) for part in parts] + [0.0] * (3 - len(parts))
    if sum(values) <= 0:
        raise ConfigError(f"split {split!r} gives every split zero weight")
    return normalize_weights_allow_zero(values)


def normalize_weights_allow_zero(values: Sequence[float]) -> list[float]:
    """Non-negative values over their float64 sum (zeros allowed, as split fractions need)."""
    array = np.asarray(values, dtype=np.float64)
    return (array / np.sum(array)).tolist()


def split_matrix(fractions: Sequence[float]) -> list[tuple[float, float] | None]:
    """Book-ends of each split in [0, 1] from its fractions; None for an empty split (megatron-core's
    ``convert_split_vector_to_split_matrix`` with one vector)."""
    edges = functools.reduce(lambda acc, value: [*acc, acc[-1] + value], fractions, [0])
    matrix: list[tuple[float, float] | None] = []
    for low, high in itertools.pairwise(edges):
        matrix.append(None if high <= low else (low, high))
    return matrix


def split_document_ranges(split: str, num_documents: int) -> list[tuple[int, int] | None]:
    """[begin, end) document range of the train, valid and test split (None where a split is empty),
    the same ranges megatron-core's builder hands its datasets."""
    ranges: list[tuple[int, int] | None] = []
    for bookends in split_matrix(parse_split(split)):
        if bookends is None:
            ranges.append(None)
        else:
            # Python's round (half to even) on float products, as the builder does
            low, high = bookends
            ranges.append((round(low * float(num_documents)), round(high * float(num_documents))))
    return ranges


def blend_arrays(settings: dict, cache: CacheLike = True) -> tuple[np.ndarray, np.ndarray]:
    """(dataset_index, dataset_sample_index) of a blend from its settings (``{"weights": normalized,
    "size": n}`` or ``{"exhaustive": counts}``), cached like the GPT index (one entry per settings)."""

    def build_arrays() -> dict[str, np.ndarray]:
        if "exhaustive" in settings:
            dataset_index, sample_index = build_exhaustive_blending_indices(settings["exhaustive"])
        else:
            dataset_index, sample_index = build_blending_indices(np.asarray(settings["weights"]), int(settings["size"]))
        return {"dataset_index": dataset_index, "dataset_sample_index": sample_index}

    entry = array_cache(cache).get_or_build("blend", settings, build_arrays)
    return entry.arrays["dataset_index"], entry.arrays["dataset_sample_index"]


def blend_fingerprint(mix: dict) -> str:
    """The fingerprint of a blend from its identity (:attr:`BlendedDataset.mix`)."""
    return xxhash.xxh3_128(json.dumps(mix, sort_keys=True).encode()).hexdigest()


class BlendedDataset:
    """Samples of several datasets interleaved by weight, as megatron-core's ``BlendedDataset``.

    ``datasets`` need ``len`` and ``get_batch(ids) -> dict`` (e.g. ``GPTDataset``). With ``size``,
    ``size`` samples follow the normalized ``weights``; without it, ``weights`` are whole sample
    counts and every one of them is used exactly once (megatron-core's exhaustive blend). Asking a
    dataset for more samples than it has is a ConfigError that says by how much (give it more
    ``num_samples``: megatron-core requests ``samples_per_dataset(..., surplus=0.005)``).
    ``cache`` caches the two index arrays like the GPT index (:mod:`tokenmill.cache`; on by default).
    """

    def __init__(
        self,
        datasets: Sequence,
        weights: Sequence[float],
        size: int | None = None,
        *,
        cache: CacheLike = True,
    ) -> None:
        if len(datasets) != len(weights) or not datasets:
            raise ConfigError(f"give one weight per dataset: {len(datasets)} datasets, {len(weights)} weights")
        self.datasets = list(datasets)
        self.cache = cache
        self._fingerprint: str | None = None
        self._members: list[str] | None = None
        if size is None:
            counts = [int(w) for w in weights]
            if [float(c) for c in counts] != [float(w) for w in weights]:
                raise ConfigError(f"without a blend size the weights are sample counts (integers), got {weights}")
            settings: dict[str, object] = {"exhaustive": counts}
        else:
            settings = {"weights": normalize_weights(weights).tolist(), "size": int(size)}
        self.settings = settings
        self.dataset_index, self.dataset_sample_index = blend_arrays(settings, cache)
        wanted = np.bincount(np.asarray(self.dataset_index), minlength=len(self.datasets))
        for d, dataset in enumerate(self.datasets):
            if wanted[d] > len(dataset):
                raise ConfigError(
                    f"the blend asks dataset {d} for {int(wanted[d])} samples but it has {len(dataset)}; "
                    f"build it with at least {int(wanted[d])} samples (num_samples)"
                )

    def __len__(self) -> int:
        return int(self.dataset_index.shape[0])

    def fingerprint(self) -> str:
        """Hash of the blend settings and every blended dataset's own fingerprint (what a resumed
        loader state must match)."""
        if self._fingerprint is None:
            self._fingerprint = blend_fingerprint(self.mix)
        return self._fingerprint

    @property
    def mix(self) -> dict[str, object]:
        """The blend's identity: its settings and each member's key (its fingerprint and content,
        :mod:`~tokenmill.data.blend_members`), in member order (what a mix change at resume compares, a
        resume segment records and the consumption ledger counts by)."""
        if self._members is None:
            self._members = member_keys(self.datasets)
        return {"blend": self.settings, "datasets": list(self._members)}

    def content(self) -> dict[str, str]:
        """Each member's content identity (:meth:`GPTDataset.content`) by member key."""
        return {key: d.content()[d.fingerprint()] for key, d in zip(self.mix["datasets"], self.datasets, strict=True)
                if knows_content(key)}

    def content_stores(self) -> dict[str, str]:
        """The store each :meth:`content` name (member key) stands for (for messages)."""
        return {key: str(getattr(d.dataset, "prefix", key)) for key, d in zip(self.mix["datasets"], self.datasets,
                                                                              strict=True) if knows_content(key)}

    def describe(self) -> str:
        """Short name for messages: the blended datasets."""
        names = [d.describe() if hasattr(d, "describe") else type(d).__name__ for d in self.datasets]
        return "blend of " + " + ".join(names)

    def get_batch(self, sample_ids: Sequence[int] | np.ndarray) -> dict[str, np.ndarray | int]:
        """The samples' rows from their datasets, in order, plus ``dataset_id`` per row.

        Row arrays are stacked back in request order; a flat ``cu_seqlens`` (over the flattened
        batch) is rebuilt from each row's own boundaries.
        """
        ids = np.asarray(sample_ids, dtype=np.int64).reshape(-1)
        n = len(self)
        if ids.size and (int(ids.min()) < -n or int(ids.max()) >= n):
            raise IndexError(f"sample index out of range for a blend of {n} samples")
        ids = np.where(ids < 0, ids + n, ids)
        which = np.asarray(self.dataset_index[ids], dtype=np.int64)
        inner = np.asarray(self.dataset_sample_index[ids], dtype=np.int64)
        out: dict[str, np.ndarray | int] = {"dataset_id": which.astype(np.int16)}
        cuts: list[np.ndarray] = []
        width = 0
        for d in np.unique(which):
            rows = np.flatnonzero(which == d)
            part = self.datasets[int(d)].get_batch(inner[rows])
            for key, value in part.items():
                if key in ("cu_seqlens", "max_seqlen"):
                    continue
                if key not in out:
                    out[key] = np.empty((len(ids), *value.shape[1:]), dtype=value.dtype)
                out[key][rows] = value  # type: ignore[index]
            if "cu_seqlens" in part:
                width = part["tokens"].shape[1]
                boundaries = np.asarray(part["cu_seqlens"][:-1], dtype=np.int64)
                cuts.append(rows[boundaries // width] * width + boundaries % width)
        if cuts:
            flat = np.sort(np.concatenate(cuts))
            cu_seqlens = np.append(flat, len(ids) * width).astype(np.int32)
            out["cu_seqlens"] = cu_seqlens
            out["max_seqlen"] = int(np.diff(cu_seqlens).max())
        return out

    def __getitem__(self, i: int) -> dict[str, np.ndarray | int]:
        """One sample as 1-D arrays (``cu_seqlens`` for its row alone)."""
        batch = self.get_batch([int(i)])
        return {
            key: value[0] if isinstance(value, np.ndarray) and key != "cu_seqlens" else value
            for key, value in batch.items()
        }


__all__ = [
    "SPLIT_NAMES",
    "BlendedDataset",
    "blend_arrays",
    "blend_fingerprint",
    "build_blending_indices",
    "build_exhaustive_blending_indices",
    "normalize_weights",
    "parse_split",
    "samples_per_dataset",
    "split_document_ranges",
    "split_matrix",
]
