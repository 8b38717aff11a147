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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from tokenmill._core.rng import generator
from tokenmill._core.temperature import temperature_probabilities as temperature_probabilities  # re-exported
from tokenmill._core.temperature import temperature_ratios
from tokenmill.data.mix_schedule import WeightsSchedule
from tokenmill.data.sampling_checks import check_config, check_epoch, check_sizes, weight_ratios
from tokenmill.data.sampling_counts import apportion as apportion  # re-exported
from tokenmill.data.sampling_counts import default_virtual_size as default_virtual_size  # re-exported
from tokenmill.data.sampling_counts import segment_counts
from tokenmill.data.sampling_counts import slice_labels as slice_labels  # re-exported
from tokenmill.data.sampling_draw import fill_concat, fill_dataset
from tokenmill.data.sampling_draw import fill_without_replacement as _fill_without_replacement  # noqa: F401 (tests)
from tokenmill.errors import ConfigError

# purposes of the random streams (distinct from the batcher's 1-3 so that the same seed and epoch
# never give correlated choices)
COUNTS = 101
ITEMS = 102
SLICES = 103



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
    weights_schedule: Sequence[Mapping[str, Any]] | None = None
    """Weights as a function of the training step, ``[{"step": 0, "weights": {...}}, {"step": 1000,
    "weights": {...}}]``: linear in between, the last point's after it (:mod:`tokenmill.data.mix_schedule`).
    Replaces weights and temperature; the batch iterator changes the mix as the steps go on."""
    schedule_every: int = 1000
    """With ``weights_schedule``: steps between two re-draws of the mix (each one a mix segment)."""

    @property
    def schedule(self) -> WeightsSchedule | None:
        """The checked weights schedule (None without one)."""
        if self.weights_schedule is None:
            return None
        return WeightsSchedule.parse(list(self.weights_schedule), self.schedule_every)

    def at_step(self, step: int) -> SamplingConfig:
        """The fixed mix a weights schedule gives from training step ``step`` on (self without a schedule)."""
        schedule = self.schedule
        if schedule is None:
            return self
        return replace(self, weights=schedule.weights_at(step), weights_schedule=None, schedule_every=1000)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able settings (weights as a plain dict in their given order; a schedule only when set)."""
        schedule = self.schedule
        extra = {} if schedule is None else {"weights_schedule": schedule.to_list(), "schedule_every": schedule.every}
        return extra | {  # numbers as floats: temperature=5 and 5.0 are one setting, with one fingerprint
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
        sizes_array = check_sizes(names, sizes)
        check_config(config)
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
                weight_ratios(names, sizes_array, config)
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
        check_epoch(epoch)
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
        check_epoch(virtual_epoch)
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
        return segment_counts(labels == j, bounds)

    def sample_virtual(self, virtual_epoch: int) -> np.ndarray:
        """Global ids of a whole virtual epoch (int64, V of them), grouped by dataset."""
        counts = self.virtual_counts(virtual_epoch)
        out = np.empty(self.virtual_size, dtype=np.int64)
        if self.config.mode == "concat":
            fill_concat(out, self.sizes, self.offsets, int(self.config.upsample_primary))
            return out
        streams = generator(self.config.seed, virtual_epoch, ITEMS).bit_generator.seed_seq.spawn(len(self.names))
        start = 0
        for i, count in enumerate(counts.tolist()):
            if count:
                rng = np.random.Generator(np.random.PCG64(streams[i]))
                part = out[start : start + count]
                fill_dataset(part, int(self.sizes[i]), rng, self.config.upsample)
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


__all__ = ["SamplingConfig", "SamplingPlan", "apportion", "default_virtual_size", "slice_labels",
           "temperature_probabilities"]
