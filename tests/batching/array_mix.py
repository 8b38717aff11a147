"""A temperature-sampled mix of in-memory directions: the ``Selection`` a sampled mix is, without the files.

One copy for the plan digests (``tests/batching/plan_digests.py``) and the re-plan benchmark
(``benchmarks/bench_mix_change.py``, which imports it from the checkout): six directions with
long-tailed sizes and lengths, the mix a job starts with (temperature 5) and the one it changes to.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tokenmill.batching.copies import has_copies
from tokenmill.batching.costs import Sizes
from tokenmill.batching.select import EpochSample
from tokenmill.data.sampling import SamplingConfig, SamplingPlan

SHARES = np.array([0.55, 0.25, 0.12, 0.05, 0.02, 0.01])
NAMES = [f"d{i}" for i in range(len(SHARES))]


class ArrayMix:
    """A sampled mix of in-memory directions (a ``Selection`` that can change its mix); the last epoch's
    draw is kept, as a sampled mix keeps it."""

    varies_by_epoch = True

    def __init__(self, src: np.ndarray, tgt: np.ndarray, sizes: np.ndarray, sampling: SamplingConfig) -> None:
        self.src, self.tgt, self.sizes, self.sampling = src, tgt, sizes, sampling
        self.plan = SamplingPlan.build(NAMES, sizes, sampling)
        self._last: tuple[int, EpochSample] | None = None

    def fingerprint(self) -> str:
        return f"array-mix-{len(self.src)}-{sorted(self.sampling.to_dict().items(), key=str)}"

    def settings(self) -> dict[str, Any]:
        return {"sampling": self.sampling.to_dict()}

    def with_settings(self, settings: dict[str, Any]) -> ArrayMix:
        return ArrayMix(self.src, self.tgt, self.sizes, SamplingConfig.from_dict(settings["sampling"]))

    def sample(self, epoch: int) -> EpochSample:
        if self._last is None or self._last[0] != epoch:
            ids = self.plan.sample(epoch)
            copies = ids if has_copies(ids) else None
            self._last = (epoch, EpochSample(ids, Sizes(self.src[ids], self.tgt[ids], copies=copies), {}))
        return self._last[1]


def lengths(pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Source and target lengths (1..250, a few over 200 to exercise the drops) and direction sizes."""
    rng = np.random.default_rng(seed)
    src = np.clip(rng.lognormal(3.0, 0.6, pairs), 1, 250).astype(np.int32)
    tgt = np.clip(src * rng.lognormal(0.0, 0.25, pairs), 1, 250).astype(np.int32)
    sizes = np.floor(SHARES * pairs).astype(np.int64)
    sizes[0] += pairs - int(sizes.sum())
    return src, tgt, sizes


def new_mix(pairs: int, seed: int) -> SamplingConfig:
    """The mix a job changes to: the largest direction halved, the smallest retired."""
    weights = {"d0": 0.5 * SHARES[0], **{n: float(s) for n, s in zip(NAMES[1:], SHARES[1:], strict=True)}, "d5": 0.0}
    return SamplingConfig(weights=weights, virtual_size=pairs, seed=seed + 1)
