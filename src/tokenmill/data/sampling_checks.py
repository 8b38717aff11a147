"""Checks of a sampled mix's settings against its datasets, each failure one ConfigError that names
the setting and the fix; and the explicit weights turned into ratios."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from tokenmill.errors import ConfigError

if TYPE_CHECKING:
    from tokenmill.data.sampling import SamplingConfig


def check_sizes(names: list[str], sizes: Sequence[int] | np.ndarray) -> np.ndarray:
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


def check_config(config: SamplingConfig) -> None:
    if config.weights_schedule is not None:
        raise ConfigError(
            "a weights schedule is a mix that changes with the step: batch it with tokenmill.batches / "
            "multilingual_batches (they plan it as a chain of mixes), or take one step's mix with config.at_step(step)"
        )
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


def weight_ratios(names: list[str], sizes: np.ndarray, config: SamplingConfig) -> np.ndarray:
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


def check_epoch(epoch: int) -> None:
    if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 1:
        raise ConfigError(f"epochs count from 1 (fairseq's convention), got {epoch!r}")


__all__ = ["check_config", "check_epoch", "check_sizes", "weight_ratios"]
