"""How many items each dataset (language direction) gives to an epoch, and which ones.

Probabilities follow fairseq's multilingual sampling (``sampling_method.py``,
``sampled_multi_dataset.py``): with a temperature T, ``p_i ∝ (n_i / N) ** (1 / T)`` (T = 1 is
proportional, a large T tends to uniform); or explicit weights by dataset name; or fairseq's
``ConcatDataset`` mode where dataset 0 is repeated ``upsample_primary`` times and the others once.
The virtual size V of an epoch is fairseq's ``default_virtual_size_func`` unless given: every
dataset scaled like the largest one, ``int(sum_i (r_i / r_L) * n_L)`` with L the largest dataset
(the first on ties) and r the unnormalized ratios, capped at ``max_virtual_ratio * N``. The
arithmetic is done in the same order as fairseq's, so V is the same integer.

Per epoch (all random choices from ``generator(seed, epoch, purpose)``):

* counts: ``floor(p_i * V)`` plus one more for a set of datasets drawn so that dataset i gets the
  extra item with probability exactly ``frac(p_i * V)`` (systematic sampling over a seeded
  permutation of the datasets). So every count is within one item of ``p_i * V``, its expectation
  is exactly ``p_i * V``, and the counts sum to V. (fairseq draws the remainder by a multinomial
  over p, whose expectation is off by up to one item per dataset.)
* items: a uniform random subset without replacement while ``count_i <= n_i``. Past that, with
  ``upsample="copies"`` (default) every item ``count_i // n_i`` times plus a random subset of the
  rest (each item is used floor or ceil of count/size times), or with ``upsample="replacement"``
  ``count_i`` independent uniform draws (fairseq's choice).

``sample(epoch)`` returns global ids (``offsets[i] + j``) grouped by dataset in dataset order,
ascending inside a without-replacement draw: the batcher re-sorts by length anyway.

Virtual-epoch slices (fairseq's ``SampledMultiEpochDataset``): with ``virtual_epoch_size = s``,
``k = ceil(V / s)`` training epochs consume one virtual epoch. Training epoch e belongs to virtual
epoch ``E = (e - 1) // k + 1`` and is its slice ``j = (e - 1) % k``; slices 0..k-2 hold s items and
the last one the remaining ``V - (k - 1) * s`` (never padded, nothing dropped). The slices are a
seeded uniformly random partition of ``sample(E)`` with exactly those sizes: every item of
``sample(E)`` is in exactly one slice, and each slice's content is distributed as a slice of a
uniform permutation (its order is that of ``sample(E)``). fairseq redraws the virtual epoch with
the training epoch number as seed; here the seed is E.

Memory: O(number of datasets) for the plan, 8 bytes per sampled id, and transient work arrays of at
most about 8 bytes per item of the dataset being drawn (a byte mask over its items, used only when
it holds at most 8 items per sampled one). Slices keep the current virtual epoch (8 B/item) and
its slice labels (1-2 B/item) cached.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tokenmill._core.rng import generator
from tokenmill._core.temperature import temperature_probabilities as temperature_probabilities  # re-exported
from tokenmill._core.temperature import temperature_ratios
from tokenmill.errors import ConfigError

# purposes of the random streams (distinct from the batcher's 1-3 so that the same seed and epoch
# never give correlated choices)
COUNTS = 101
ITEMS = 102
SLICES = 103

# ids are produced and post-processed in blocks of this many, bounding temporary arrays
_BLOCK = 1 << 22
# a byte mask over a dataset's items is used when it has at most this many items per sampled one;
# sparser draws dedupe by sorting
_MASK_DENSITY = 8


@dataclass(frozen=True)
class SamplingConfig:
    """How datasets are mixed in one epoch (fairseq's multilingual sampling options)."""

    temperature: float = 1.0
    """``p_i ∝ n_i ** (1/T)`` (fairseq's ``temperature_sampling``): 1 proportional, large T -> uniform."""
    weights: Mapping[str, float] | None = None
    """Explicit weights by dataset name (normalized; 0 leaves a dataset out); replaces the temperature."""
    virtual_size: int | None = None
    """Items per virtual epoch; None: fairseq's rule, ``sum_i (r_i / r_L) * n_L`` capped (see module doc)."""
    max_virtual_ratio: float = 1.5
    """Cap of the default virtual size as a multiple of the total number of items (fairseq: 1.5)."""
    upsample_primary: int | None = None
    """fairseq's ``ConcatDataset`` mode: dataset 0 repeated this many times, the others once; no
    randomness in counts, so it excludes temperature, weights and virtual_size."""
    virtual_epoch_size: int | None = None
    """fairseq's ``SampledMultiEpochDataset``: each virtual epoch is consumed in slices of this many
    items, one slice per training epoch; None: one training epoch is one virtual epoch."""
    upsample: Literal["copies", "replacement"] = "copies"
    """Datasets sampled past their size: whole copies plus a random remainder ("copies"), or
    independent draws with replacement as fairseq does ("replacement")."""
    seed: int = 1
    """Seed of every random choice (with the epoch and a purpose)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able settings (weights as a plain dict in their given order)."""
        return {  # numbers as floats: temperature=5 and 5.0 are one setting, with one fingerprint
            "temperature": float(self.temperature),
            "weights": None if self.weights is None else {str(k): float(v) for k, v in self.weights.items()},
            "virtual_size": self.virtual_size,
            "max_virtual_ratio": float(self.max_virtual_ratio),
            "upsample_primary": self.upsample_primary,
            "virtual_epoch_size": self.virtual_epoch_size,
            "upsample": self.upsample,
            "seed": self.seed,
        }

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> SamplingConfig:
        """The settings :meth:`to_dict` wrote (e.g. the mix a resume state recorded); unknown keys are an error."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown sampling settings {unknown}; known: {sorted(known)}")
        return cls(**dict(values))

    @property
    def mode(self) -> str:
        """Which rule sets the counts: ``concat`` (upsample_primary), ``weights`` or ``temperature``."""
        if self.upsample_primary is not None:
            return "concat"
        return "weights" if self.weights is not None else "temperature"


@dataclass
class SamplingPlan:
    """The per-dataset probabilities and virtual size of a mix, and the ids each epoch draws.

    Build it with :meth:`build`; everything an epoch holds is a pure function of (config, sizes,
    epoch). Item j of dataset i has global id ``offsets[i] + j``.
    """

    names: list[str]
    """Dataset (direction) names, in the order of their global id ranges."""
    sizes: np.ndarray
    """Items per dataset (int64)."""
    probabilities: np.ndarray
    """Share of each dataset in a virtual epoch (float64, sums to 1)."""
    virtual_size: int
    """Items per virtual epoch (V)."""
    offsets: np.ndarray
    """int64, len n + 1: global ids of dataset i are ``offsets[i] .. offsets[i + 1] - 1``."""
    config: SamplingConfig = field(default_factory=SamplingConfig)
    """The settings the plan was built from."""
    ratios: np.ndarray | None = None
    """Unnormalized weights as fairseq computes them (temperature ratios, weights or repeat factors)."""
    _cache: tuple[int, np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False, compare=False)

    # ---------------------------------------------------------------- building

    @classmethod
    def build(cls, names: Sequence[str], sizes: Sequence[int] | np.ndarray, config: SamplingConfig) -> SamplingPlan:
        """Check the settings against the datasets and compute probabilities and the virtual size."""
        names = [str(name) for name in names]
        sizes_array = _check_sizes(names, sizes)
        _check_config(config)
        total = int(sizes_array.sum())
        if total == 0:
            raise ConfigError(f"all {len(names)} datasets are empty ({', '.join(names)}): nothing to sample")
        offsets = np.zeros(len(names) + 1, dtype=np.int64)
        np.cumsum(sizes_array, out=offsets[1:])
        mode = config.mode
        if mode == "concat":
            ratios = np.ones(len(names), dtype=np.float64)
            ratios[0] = config.upsample_primary
            counts = sizes_array.copy()
            counts[0] *= int(config.upsample_primary)
            virtual = int(counts.sum())
            probabilities = counts / float(virtual)
        else:
            ratios = (
                _weight_ratios(names, sizes_array, config)
                if mode == "weights"
                else temperature_ratios(sizes_array, config.temperature)
            )
            probabilities = ratios / ratios.sum()
            virtual = config.virtual_size or default_virtual_size(sizes_array, ratios, config.max_virtual_ratio)
        return cls(names, sizes_array, probabilities, int(virtual), offsets, config, ratios)

    # ---------------------------------------------------------------- epochs and slices

    @property
    def slice_size(self) -> int:
        """Items per training epoch in slice mode (virtual_epoch_size, at most V); V otherwise."""
        size = self.config.virtual_epoch_size
        return self.virtual_size if size is None else min(int(size), self.virtual_size)

    @property
    def num_slices(self) -> int:
        """Training epochs per virtual epoch (``ceil(V / slice_size)``; 1 without slices)."""
        return -(-self.virtual_size // self.slice_size)

    def virtual_epoch(self, epoch: int) -> tuple[int, int]:
        """(virtual epoch E, slice j) of training epoch ``epoch`` (both epochs count from 1)."""
        _check_epoch(epoch)
        return (epoch - 1) // self.num_slices + 1, (epoch - 1) % self.num_slices

    def num_items(self, epoch: int) -> int:
        """Items training epoch ``epoch`` holds (V, or its slice's size)."""
        _, j = self.virtual_epoch(epoch)
        start = j * self.slice_size
        return min(self.slice_size, self.virtual_size - start)

    def expected_counts(self) -> np.ndarray:
        """Samples per virtual epoch per dataset, ``p_i * V`` (float64)."""
        if self.config.mode == "concat":
            return self._concat_counts().astype(np.float64)
        return self.probabilities * float(self.virtual_size)

    def virtual_counts(self, virtual_epoch: int) -> np.ndarray:
        """Items per dataset in virtual epoch ``virtual_epoch`` (int64, sums to V)."""
        _check_epoch(virtual_epoch)
        if self.config.mode == "concat":
            return self._concat_counts()
        rng = generator(self.config.seed, virtual_epoch, COUNTS)
        return apportion(self.probabilities * float(self.virtual_size), self.virtual_size, rng)

    def counts(self, epoch: int) -> np.ndarray:
        """Items per dataset in training epoch ``epoch`` (int64; sums to ``num_items(epoch)``)."""
        big, j = self.virtual_epoch(epoch)
        if self.num_slices == 1:
            return self.virtual_counts(big)
        _, labels = self._virtual(big)
        bounds = np.zeros(len(self.names) + 1, dtype=np.int64)
        np.cumsum(self.virtual_counts(big), out=bounds[1:])
        return _segment_counts(labels == j, bounds)

    def sample_virtual(self, virtual_epoch: int) -> np.ndarray:
        """Global ids of a whole virtual epoch (int64, V of them), grouped by dataset."""
        counts = self.virtual_counts(virtual_epoch)
        out = np.empty(self.virtual_size, dtype=np.int64)
        if self.config.mode == "concat":
            _fill_concat(out, self.sizes, self.offsets, int(self.config.upsample_primary))
            return out
        streams = generator(self.config.seed, virtual_epoch, ITEMS).bit_generator.seed_seq.spawn(len(self.names))
        start = 0
        for i, count in enumerate(counts.tolist()):
            if count:
                rng = np.random.Generator(np.random.PCG64(streams[i]))
                part = out[start : start + count]
                _fill_dataset(part, int(self.sizes[i]), rng, self.config.upsample)
                part += self.offsets[i]
                start += count
        return out

    def sample(self, epoch: int) -> np.ndarray:
        """Global ids (int64) of training epoch ``epoch``: its virtual epoch, or its slice of one."""
        big, j = self.virtual_epoch(epoch)
        if self.num_slices == 1:
            return self.sample_virtual(big)
        ids, labels = self._virtual(big)
        return ids[labels == j]

    def _virtual(self, big: int) -> tuple[np.ndarray, np.ndarray]:
        """The ids and slice labels of virtual epoch ``big``, cached for the slices that follow."""
        if self._cache is None or self._cache[0] != big:
            self._cache = None  # free the previous one first
            ids = self.sample_virtual(big)
            labels = slice_labels(self.virtual_size, self.slice_size, generator(self.config.seed, big, SLICES))
            self._cache = (big, ids, labels)
        return self._cache[1], self._cache[2]

    def _concat_counts(self) -> np.ndarray:
        counts = self.sizes.copy()
        counts[0] *= int(self.config.upsample_primary)
        return counts

    # ---------------------------------------------------------------- reports

    def table(self) -> str:
        """A printable table: per dataset its size, weight, probability, expected samples per virtual
        epoch and the effective epochs over its data (expected / size), with the totals."""
        expected = self.expected_counts()
        weights = self.ratios if self.ratios is not None else self.probabilities
        header = ("dataset", "size", "weight", "prob", "expected/epoch", "epochs over data")
        rows = []
        for name, size, weight, prob, exp in zip(
            self.names, self.sizes.tolist(), weights, self.probabilities, expected, strict=True
        ):
            epochs = f"{exp / size:.3f}" if size else "-"
            rows.append((name, f"{size:,}", f"{weight:.6g}", f"{prob:.4%}", f"{exp:,.1f}", epochs))
        total = int(self.sizes.sum())
        rows.append(("total", f"{total:,}", "", "100%", f"{self.virtual_size:,}", f"{self.virtual_size / total:.3f}"))
        widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
        lines = [self._describe()]
        for k, row in enumerate([header, *rows]):
            if k == len(rows):
                lines.append("  ".join("-" * w for w in widths))
            cells = [row[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(row[1:], widths[1:], strict=True)]
            lines.append("  ".join(cells).rstrip())
        return "\n".join(lines)

    def _describe(self) -> str:
        config = self.config
        mode = {
            "concat": f"concat, dataset 0 repeated {config.upsample_primary}x",
            "weights": "explicit weights",
            "temperature": f"temperature {config.temperature:g}",
        }[config.mode]
        text = f"sampling: {mode}; virtual epoch {self.virtual_size:,} items"
        if self.num_slices > 1:
            text += f" in {self.num_slices} slices of {self.slice_size:,}"
        return text + f"; seed {config.seed}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary for manifests, logs and fingerprints."""
        return {
            "config": self.config.to_dict(),
            "mode": self.config.mode,
            "virtual_size": self.virtual_size,
            "num_slices": self.num_slices,
            "slice_size": self.slice_size,
            "datasets": [
                {"name": name, "size": size, "weight": weight, "probability": prob, "expected": exp}
                for name, size, weight, prob, exp in zip(
                    self.names,
                    self.sizes.tolist(),
                    (self.ratios if self.ratios is not None else self.probabilities).tolist(),
                    self.probabilities.tolist(),
                    self.expected_counts().tolist(),
                    strict=True,
                )
            ],
        }


# -------------------------------------------------------------------- probabilities and sizes


def default_virtual_size(sizes: np.ndarray, ratios: np.ndarray, max_ratio: float = 1.5) -> int:
    """fairseq's ``default_virtual_size_func``: the datasets scaled like the largest one, capped.

    ``int(min(sum_i (r_i / r_L) * n_L, max_ratio * N))``, summed left to right as fairseq does. A
    largest dataset with ratio 0 makes the sum infinite in fairseq, so the cap applies.
    """
    largest = int(np.argmax(sizes))
    cap = int(sizes.sum()) * max_ratio
    if ratios[largest] == 0:
        return int(cap)
    scaled = (ratios / ratios[largest]) * float(sizes[largest])
    virtual = float(np.cumsum(scaled)[-1])
    return int(virtual if virtual < cap else cap)


def apportion(expected: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """Integers summing to ``total``, each ``floor(e_i)`` or ``floor(e_i) + 1``, with mean ``e_i``.

    The ``total - sum(floor)`` extra units go by systematic sampling over a random order of the
    entries: one uniform offset, then entry i is picked when a point ``u + k`` falls in its share
    ``frac(e_i)`` of the line, which happens with probability exactly ``frac(e_i)``.
    """
    floors = np.floor(expected)
    counts = floors.astype(np.int64)
    extra = total - int(counts.sum())
    fractions = expected - floors
    order = rng.permutation(len(expected))
    u = rng.random()
    if extra > 0:
        edges = np.concatenate(([0.0], np.cumsum(fractions[order])))
        edges *= extra / edges[-1]  # the fractions sum to `extra` up to rounding: make it exact
        picked = np.diff(np.floor(edges + u)).astype(np.int64).clip(0, 1)
        counts[order] += picked
    # rounding can only leave a unit or so off; settle it on the largest fractions (or smallest)
    left = total - int(counts.sum())
    if left:
        rank = np.argsort(-fractions if left > 0 else fractions, kind="stable")
        if left < 0:
            rank = rank[counts[rank] > 0]
        counts[rank[: abs(left)]] += 1 if left > 0 else -1
    return counts


def slice_labels(total: int, slice_size: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random assignment of ``total`` positions to slices of ``slice_size`` (the last
    one shorter): labels (uint8/uint16/int32) with exactly the slice sizes as counts.

    Labels are drawn independently with the slice sizes as weights; then the excess of each
    over-full slice (a few standard deviations, O(sqrt(total))) is chosen among its positions by
    rejection sampling and dealt at random to the short slices. No step tells positions apart, so
    every labelling with those counts is equally likely.
    """
    k = -(-total // slice_size)
    last = total - (k - 1) * slice_size
    dtype = np.uint8 if k <= 2**8 else np.uint16 if k <= 2**16 else np.int32
    labels = np.empty(total, dtype=dtype)
    have = np.zeros(k, dtype=np.int64)
    for start in range(0, total, _BLOCK):
        block = labels[start : start + _BLOCK]
        block[:] = rng.integers(0, k, len(block), dtype=dtype)
        if last < slice_size:  # the last slice is lighter: redraw its labels with probability 1 - last/size
            redo = np.flatnonzero(block == k - 1)
            while len(redo):
                redo = redo[rng.random(len(redo)) * slice_size >= last]
                block[redo] = rng.integers(0, k, len(redo), dtype=dtype)
                redo = redo[block[redo] == k - 1]
        if k <= 32:  # a few compares are cheaper than bincount's cast to intp
            have += [np.count_nonzero(block == j) for j in range(k)]
        else:
            have += np.bincount(block, minlength=k)
    want = np.full(k, slice_size, dtype=np.int64)
    want[-1] = last
    moved = [_members(labels, j, int(have[j] - want[j]), int(have[j]), rng) for j in np.flatnonzero(have > want)]
    if moved:
        positions = np.concatenate(moved)
        rng.shuffle(positions)
        short = np.flatnonzero(have < want)
        labels[positions] = np.repeat(short, (want - have)[short]).astype(dtype)
    return labels


def _members(labels: np.ndarray, label: int, count: int, population: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` distinct uniformly random positions whose label is ``label`` (``population`` of them),
    by drawing positions uniformly and keeping the first new ones that carry the label."""
    chosen = np.empty(0, dtype=np.int64)
    while len(chosen) < count:
        need = count - len(chosen)
        draws = rng.integers(0, len(labels), need * (len(labels) // population + 1) + 16, dtype=np.int64)
        draws = draws[labels[draws] == label]
        draws = draws[~np.isin(draws, chosen)]
        _, first = np.unique(draws, return_index=True)
        chosen = np.concatenate((chosen, draws[np.sort(first)][:need]))
    return chosen


def _segment_counts(mask: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Number of True values of ``mask`` in each range ``bounds[i] .. bounds[i + 1]``."""
    cumulative = np.zeros(len(mask) + 1, dtype=np.int64) if len(mask) < _BLOCK else None
    if cumulative is not None:
        np.cumsum(mask, out=cumulative[1:])
        return cumulative[bounds[1:]] - cumulative[bounds[:-1]]
    return np.array(
        [np.count_nonzero(mask[a:b]) for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)],
        dtype=np.int64,
    )


# -------------------------------------------------------------------- drawing items


def _fill_concat(out: np.ndarray, sizes: np.ndarray, offsets: np.ndarray, repeat: int) -> None:
    """fairseq's ConcatDataset order: dataset 0's ids ``repeat`` times, then every other once."""
    first = int(sizes[0])
    _fill_arange(out[:first], 0)
    if repeat > 1 and first:
        out[: first * repeat].reshape(repeat, first)[1:] = out[:first]
    _fill_arange(out[first * repeat :], int(offsets[1]))


def _fill_arange(out: np.ndarray, start: int) -> None:
    for a in range(0, len(out), _BLOCK):
        b = min(a + _BLOCK, len(out))
        out[a:b] = np.arange(start + a, start + b, dtype=np.int64)


def _fill_dataset(out: np.ndarray, size: int, rng: np.random.Generator, upsample: str) -> None:
    """Local ids of ``len(out)`` items of a dataset of ``size`` items (see the module doc)."""
    count = len(out)
    if count <= size:
        _fill_without_replacement(out, size, rng)
    elif upsample == "replacement":
        for a in range(0, count, _BLOCK):
            b = min(a + _BLOCK, count)
            out[a:b] = rng.integers(0, size, b - a, dtype=np.int64)
    else:
        copies = count // size
        _fill_arange(out[:size], 0)
        out[: copies * size].reshape(copies, size)[1:] = out[:size]
        _fill_without_replacement(out[copies * size :], size, rng)


def _fill_without_replacement(out: np.ndarray, size: int, rng: np.random.Generator) -> None:
    """A uniform random ``len(out)``-subset of ``range(size)`` written to ``out``.

    Dense draws (at most ``_MASK_DENSITY`` items per sampled one) mark a byte mask, or the
    complement's when more than half is taken, and read it back in ascending order; sparse draws
    sort random integers in place and replace duplicates. Both add fresh uniform draws until the
    set is full, which treats every item alike, so every subset is equally likely.
    """
    count = len(out)
    if count == 0:
        return
    if count == size:
        _fill_arange(out, 0)
    elif size <= _MASK_DENSITY * count:
        if 2 * count <= size:
            mask = _random_mask(size, count, rng)
        else:
            mask = _random_mask(size, size - count, rng)
            np.logical_not(mask, out=mask)
        written = 0
        for a in range(0, size, _BLOCK):
            hits = np.flatnonzero(mask[a : a + _BLOCK])
            hits += a
            out[written : written + len(hits)] = hits
            written += len(hits)
    else:
        _sparse_subset(out, size, rng)


def _random_mask(size: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """A byte mask over ``range(size)`` with exactly ``count`` (at most half) random items set."""
    mask = np.zeros(size, dtype=np.bool_)
    have = 0
    while have < count:
        draws = rng.integers(0, size, min(count - have, _BLOCK), dtype=np.int64)
        if len(draws) * 64 > size:
            mask[draws] = True
            have = int(np.count_nonzero(mask))
        else:
            fresh = np.unique(draws[~mask[draws]])
            mask[fresh] = True
            have += len(fresh)
    return mask


def _sparse_subset(out: np.ndarray, size: int, rng: np.random.Generator) -> None:
    """Fill ``out`` with distinct random items of ``range(size)`` by sorting and topping up."""
    count = len(out)
    for a in range(0, count, _BLOCK):
        b = min(a + _BLOCK, count)
        out[a:b] = rng.integers(0, size, b - a, dtype=np.int64)
    out.sort()
    kept = 0  # compact the distinct values to the front, block by block (reads stay ahead of writes)
    for a in range(0, count, _BLOCK):
        b = min(a + _BLOCK, count)
        block = out[a:b]
        keep = np.ones(b - a, dtype=np.bool_)
        np.not_equal(block[1:], block[:-1], out=keep[1:])
        if a:
            keep[0] = block[0] != out[a - 1]
        distinct = block[keep]
        out[kept : kept + len(distinct)] = distinct
        kept += len(distinct)
    base = out[:kept]  # sorted, distinct
    extra = np.empty(0, dtype=np.int64)
    while kept + len(extra) < count:
        draws = np.unique(rng.integers(0, size, count - kept - len(extra), dtype=np.int64))
        draws = draws[~_contains_sorted(base, draws)]
        draws = draws[~_contains_sorted(extra, draws)]
        extra = np.sort(np.concatenate((extra, draws)))
    out[kept:] = extra


def _contains_sorted(haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """For each needle, whether it occurs in the sorted array ``haystack``."""
    if not len(haystack):
        return np.zeros(len(needles), dtype=np.bool_)
    where = np.searchsorted(haystack, needles).clip(max=len(haystack) - 1)
    return haystack[where] == needles


# -------------------------------------------------------------------- checks


def _check_sizes(names: list[str], sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    if not names:
        raise ConfigError("no datasets to sample from: give at least one direction")
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise ConfigError(f"dataset names must be unique; repeated: {', '.join(twice)}")
    array = np.asarray(sizes)
    if array.shape != (len(names),):
        raise ConfigError(f"got {len(names)} dataset names but sizes of shape {array.shape}: give one size per name")
    if array.dtype.kind not in "iu" and not (array.dtype.kind == "f" and np.all(array == np.round(array))):
        raise ConfigError(f"dataset sizes must be whole numbers, got {array.tolist()}")
    array = array.astype(np.int64)
    negative = np.flatnonzero(array < 0)
    if len(negative):
        i = int(negative[0])
        raise ConfigError(f"dataset {names[i]!r} has a negative size {int(array[i])}")
    return array


def _check_config(config: SamplingConfig) -> None:
    temperature = config.temperature
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0):
        raise ConfigError(
            f"sampling temperature must be a finite number > 0, got {temperature!r}: "
            "use 1 for proportional sampling, 5 (say) to upsample small directions, weights for uniform"
        )
    if not (math.isfinite(config.max_virtual_ratio) and config.max_virtual_ratio > 0):
        raise ConfigError(f"max_virtual_ratio must be a finite number > 0, got {config.max_virtual_ratio!r}")
    for name in ("virtual_size", "virtual_epoch_size", "upsample_primary"):
        value = getattr(config, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
            raise ConfigError(f"{name} must be a whole number >= 1 or None, got {value!r}")
    if config.upsample not in ("copies", "replacement"):
        raise ConfigError(f"upsample must be 'copies' or 'replacement', got {config.upsample!r}")
    if config.upsample_primary is not None:
        clash = [
            what
            for what, bad in (
                ("weights", config.weights is not None),
                (f"temperature {config.temperature:g}", config.temperature != 1.0),
                ("virtual_size", config.virtual_size is not None),
            )
            if bad
        ]
        if clash:
            raise ConfigError(
                f"upsample_primary (fairseq's concat mode, fixed repeat counts) cannot be combined with "
                f"{' and '.join(clash)}: drop upsample_primary to sample, or drop {' and '.join(clash)}"
            )


def _weight_ratios(names: list[str], sizes: np.ndarray, config: SamplingConfig) -> np.ndarray:
    weights = dict(config.weights or {})
    unknown = [str(k) for k in weights if k not in names]
    if unknown:
        raise ConfigError(
            f"sampling weights name unknown dataset(s) {', '.join(unknown)}; the datasets are {', '.join(names)}"
        )
    missing = [n for n in names if n not in weights]
    if missing:
        raise ConfigError(f"no sampling weight for dataset(s) {', '.join(missing)}: give every direction a weight")
    ratios = np.empty(len(names), dtype=np.float64)
    for i, name in enumerate(names):
        value = weights[name]
        try:
            ratios[i] = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"sampling weight of {name!r} must be a number, got {value!r}") from None
        if not math.isfinite(ratios[i]) or ratios[i] < 0:
            raise ConfigError(f"sampling weight of {name!r} must be finite and >= 0, got {value!r}")
        if ratios[i] > 0 and sizes[i] == 0:
            raise ConfigError(
                f"dataset {name!r} has no items but sampling weight {value!r}: give it weight 0 or add its data"
            )
    if not ratios.sum() > 0:
        raise ConfigError(f"sampling weights sum to {ratios.sum():g}: give at least one direction a weight > 0")
    return ratios


def _check_epoch(epoch: int) -> None:
    if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 1:
        raise ConfigError(f"epochs count from 1 (fairseq's convention), got {epoch!r}")
