"""What is done to each sample of a pair dataset, and what the length filter did.

:class:`PairOptions` holds fairseq's per-item options (``PrependTokenDataset`` + ``LanguagePairDataset``)
and the length limits; :class:`SideRows` is one side of some samples after them; :class:`FilterReport`
counts the pairs the filter dropped, by reason. :func:`side_lengths` and :func:`length_filter` compute
lengths and the filter from the stored sizes alone (no token is read).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tokenmill.errors import ConfigError


@dataclass(frozen=True)
class PairOptions:
    """What is done to each sample before batching (fairseq's per-item options) and the length filter."""

    prepend_src: int | None = None
    """Token id put first in every source sentence (a language tag, or ``<s>``); None: nothing."""
    prepend_tgt: int | None = None
    """Token id put first in every target sentence; None: nothing."""
    append_bos: bool = False
    """Put ``<s>`` first on both sides unless already there (fairseq's ``append_bos``)."""
    remove_eos_from_source: bool = False
    """Drop the source's trailing ``</s>`` (OpenNMT-style features have none)."""
    append_eos_to_target: bool = False
    """Append ``</s>`` to targets that lack it (stored sentences already end with it)."""
    max_source_positions: int | None = None
    """Drop pairs whose source (after the options above) is longer; None: no limit."""
    max_target_positions: int | None = None
    """Drop pairs whose target is longer; None: no limit."""
    strict: bool = False
    """Raise instead of dropping when a pair is too long (for the length filter or the budget)."""
    bos: int = 0
    """Id of ``<s>`` (fairseq dictionary: 0)."""
    pad: int = 1
    """Id of ``<pad>`` (fairseq dictionary: 1)."""
    eos: int = 2
    """Id of ``</s>`` (fairseq dictionary: 2)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FilterReport:
    """What the length filter did."""

    num_total: int
    """Pairs in the split."""
    num_kept: int
    """Pairs kept."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Pairs dropped, by reason: ``source_too_long``, ``target_too_long``, ``both_too_long``, ``empty``."""

    @property
    def num_dropped(self) -> int:
        return self.num_total - self.num_kept


@dataclass
class SideRows:
    """One side of some samples after the per-item options: ragged rows as flat tokens + offsets."""

    tokens: np.ndarray
    """Concatenated row tokens (store dtype)."""
    offsets: np.ndarray
    """int64, len n+1; row i is ``tokens[offsets[i]:offsets[i+1]]``."""
    shift: np.ndarray
    """Tokens put in front of each row's stored tokens (alignment positions move by this)."""

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)



def side_lengths(raw: np.ndarray, prepend: int | None, bos: bool, drop_eos: bool) -> np.ndarray:
    """Lengths of one side after the options, from the stored lengths (every stored sentence ends with ``</s>``)."""
    delta = int(prepend is not None) + int(bos) - int(drop_eos)
    if delta == 0:
        return raw
    return (raw.astype(np.int64) + delta).clip(0).astype(np.int32)


def _too_long(sizes: np.ndarray | None, limit: int | None) -> np.ndarray | None:
    return sizes > limit if sizes is not None and limit is not None else None


def _empty(src_sizes: np.ndarray | None, tgt_sizes: np.ndarray | None) -> np.ndarray | None:
    """Pairs with nothing on any present side; None when there is none (the common case: no mask built)."""
    if src_sizes is not None and tgt_sizes is not None:
        if (src_sizes == 0).any() and (tgt_sizes == 0).any():
            return (src_sizes == 0) & (tgt_sizes == 0)
        return None
    only = src_sizes if src_sizes is not None else tgt_sizes
    return only == 0 if only is not None and (only == 0).any() else None


def _drop_reasons(long_src: np.ndarray | None, long_tgt: np.ndarray | None) -> dict[str, np.ndarray]:
    """Pairs dropped for length, by reason, each pair under one reason (``both_too_long`` first)."""
    if long_src is not None and long_tgt is not None:
        both = long_src & long_tgt
        return {"both_too_long": both, "source_too_long": long_src & ~both, "target_too_long": long_tgt & ~both}
    named = {"source_too_long": long_src, "target_too_long": long_tgt}
    return {reason: mask for reason, mask in named.items() if mask is not None}


def length_filter(
    src_sizes: np.ndarray | None, tgt_sizes: np.ndarray | None, options: PairOptions, n: int, what: str
) -> tuple[np.ndarray | None, FilterReport]:
    """(mask of the pairs kept, or None when all are; the report) for sides of these lengths.

    Pairs longer than ``max_source_positions``/``max_target_positions`` and pairs empty on every side
    are dropped and counted; with ``options.strict`` the first one raises, naming ``what``.
    """
    long_src = _too_long(src_sizes, options.max_source_positions)
    long_tgt = _too_long(tgt_sizes, options.max_target_positions)
    empty = _empty(src_sizes, tgt_sizes)
    if long_src is None and long_tgt is None and empty is None:
        return None, FilterReport(n, n)
    masks = _drop_reasons(long_src, long_tgt)
    drop = np.zeros(n, dtype=bool)
    for mask in masks.values():
        drop |= mask
    if empty is not None:
        masks["empty"] = empty & ~drop
        drop |= empty
    if options.strict and drop.any():
        first = int(np.flatnonzero(drop)[0])
        lengths = f"source {_size(src_sizes, first)}, target {_size(tgt_sizes, first)}"
        raise ConfigError(
            f"pair {first} of {what} is too long or empty ({lengths}; max_source_positions="
            f"{options.max_source_positions}, max_target_positions={options.max_target_positions}); "
            f"{int(drop.sum())} pairs in all — raise the limits or turn strict off to drop and count them"
        )
    dropped = {reason: int(mask.sum()) for reason, mask in masks.items()}
    return ~drop, FilterReport(n, n - int(drop.sum()), {k: v for k, v in dropped.items() if v})


def _size(sizes: np.ndarray | None, i: int) -> str:
    return "-" if sizes is None else str(int(sizes[i]))
