"""Seeded random streams: one fresh generator per (seed, epoch, purpose), never global state.

Every stage that draws (the batcher's shuffles, the sampling plan's counts and items) takes its
generator from here, so an order is a pure function of its inputs and two purposes never share a
stream.
"""

from __future__ import annotations

import numpy as np


def generator(seed: int, epoch: int, purpose: int) -> np.random.Generator:
    """A fresh PCG64 generator for one (seed, epoch, purpose); no global numpy state involved."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, epoch, purpose])))
