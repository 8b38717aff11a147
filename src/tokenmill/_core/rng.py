"""Seeded random streams: one fresh generator per (seed, epoch, purpose), never global state.

Every stage that draws (the batcher's shuffles, the sampling plan's counts and items) takes its
generator from here, so an order is a pure function of its inputs and two purposes never share a
stream.
"""

from __future__ import annotations

import numpy as np


def generator(seed: int, epoch: int, purpose: int, *part: int) -> np.random.Generator:
    """A fresh PCG64 generator for one (seed, epoch, purpose[, part...]); no global numpy state involved.

    ``part`` tells apart independent pieces of one choice (the blocks of a block-wise plan); without
    it the stream is the one earlier versions drew, so existing orders do not change."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, epoch, purpose, *part])))
