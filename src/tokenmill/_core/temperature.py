"""Temperature shares: ``p_i ∝ n_i ** (1 / T)``, in fairseq's arithmetic.

Used where a mix of corpora is drawn: the tokenizer's training sample in ``prepare`` (so small
languages keep their characters) and the sampled mix of directions at training time (``data``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def temperature_ratios(sizes: np.ndarray, temperature: float) -> np.ndarray:
    """``(n_i / N) ** (1 / T)`` (not normalized), as fairseq computes it."""
    return (sizes / float(int(sizes.sum()))) ** (1.0 / temperature)


def temperature_probabilities(sizes: Sequence[int] | np.ndarray, temperature: float) -> np.ndarray:
    """``p_i ∝ n_i ** (1 / T)``, normalized (float64)."""
    ratios = temperature_ratios(np.asarray(sizes, dtype=np.int64), temperature)
    return ratios / ratios.sum()
