"""The settings that decide how an epoch is cut into batches.

Everything in :class:`BatchConfig` enters the plan fingerprint: change any field and a cached
plan, or a resumed iterator state, no longer matches (the resume then fails with a message that
names the field instead of silently changing the order).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any, TypeVar

from tokenmill.batching.modes import registered_modes
from tokenmill.errors import ConfigError

T = TypeVar("T")

MODES = ("lowpad", "fairseq", "opennmt")
"""``lowpad``: ours, least padding (the default); ``fairseq``: fairseq's order and batch_by_size;
``opennmt``: OpenNMT-tf's shuffled stream grouped into length buckets."""
LOWPAD_CUT = 2
"""Version of lowpad's cut rule, part of a lowpad plan's identity: 1 (absent from older states) was a
per-batch local rule, 2 the exact least pad slots + price x batches. The same settings cut by another
rule give another plan, so a state or cached plan of the old rule is refused, naming ``lowpad_cut``."""


def settings_from_dict(cls: type[T], values: dict[str, Any], what: str) -> T:
    """A settings dataclass from its plain form; unknown keys are an error naming them."""
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown {what} settings {unknown}; known: {sorted(known)}")
    return cls(**values)


@dataclass(frozen=True)
class BatchConfig:
    """How samples are ordered and grouped into batches, and how batches are dealt to ranks."""

    mode: str = "lowpad"
    """One of :data:`MODES`, or a mode registered with :func:`~tokenmill.batching.modes.register_cut`."""
    max_tokens: int | None = 4096
    """Budget per batch and side: rows x longest row (after ``pad_to_multiple``) <= max_tokens.
    In ``opennmt`` mode this is OpenNMT-tf's token ``batch_size``. None: no token budget."""
    max_sentences: int | None = None
    """At most this many rows per batch (None: no limit). In ``opennmt`` mode without
    ``max_tokens`` it is OpenNMT-tf's ``batch_type: examples`` batch size."""
    required_batch_size_multiple: int = 1
    """Rows per batch are a multiple of this when there are at least this many (8 for fp16);
    OpenNMT-tf's ``batch_size_multiple``."""
    pad_to_multiple: int = 1
    """Sequence lengths are padded up to a multiple of this; the budget counts that padding."""
    seed: int = 1
    """Seed of every random choice; the order is a pure function of (seed, epoch, sizes, config)."""
    shuffle: bool = True
    """Shuffle the batch order each epoch (False for validation: plan order)."""
    drop_last: bool = False
    """Drop the few batches that do not fill the last step across ranks instead of splitting batches
    to make every rank's count equal; in ``fairseq`` mode also drop fairseq's irregular last batch."""
    length_bucket_width: int = 1
    """``opennmt`` mode: OpenNMT-tf's ``length_bucket_width``."""
    sample_buffer_size: int = -1
    """``opennmt`` mode: OpenNMT-tf's ``sample_buffer_size``: -1 (or >= corpus size) shuffles the
    whole corpus, 0 keeps file order, k > 0 uses ``random_shard``: blocks of k consecutive samples
    in random order, shuffled inside each block."""
    batch_penalty: float = 0.25
    """``lowpad`` mode: the price of one more batch, in pad slots, as a fraction of ``max_tokens``. The cut
    is the exact least ``pad slots + batch_penalty x max_tokens x batches`` over the cuts of lowpad's
    order (:func:`~tokenmill.batching.pack.pack_lowpad`): a batch stops short of the budget only where
    that saves more padding than the extra batch costs. 0: always the longest batch that fits (the
    fewest batches, fairseq's greedy rule on our order). On the corpora of
    ``benchmarks/bench_padding_optimum.py`` the default 0.25 has 0.30-0.43x fairseq's padding at the
    same budget with -16% to +0.2% of its batch count; lower values trade more batches for less padding
    (and more batches made of whole length cells, the same every epoch)."""
    block_size: int | None = 1 << 25
    """``lowpad`` mode: an epoch of more items than this is planned block by block (each block a
    random set of 1/64-block pieces of the items, new every epoch), so building a plan needs memory
    for one block, not the corpus (:mod:`tokenmill.batching.blocks`); None: always one block. Epochs
    of at most ``block_size`` items are planned whole, exactly as without blocks."""
    compute_balance: float | None = None
    """Deal batches to ranks by compute instead of padded tokens: a batch costs its real tokens plus
    ``compute_balance`` x the sum of its rows' squared lengths (both sides; the quadratic term of
    attention), and each step's batches are of about the same cost, so ranks get equal compute, not only
    equal token counts. None (the default): dealt by padded tokens, as before (and not part of the plan's
    identity, so plans and states made before the setting existed stay valid)."""
    plan_threads: int = 1
    """``lowpad`` block-wise plans: cut this many blocks at the same time on threads (the sorts and
    gathers run without the GIL). Each thread holds one block's arrays, so the memory to build a plan
    grows with it. The plan is the same for any value: it is not part of the plan's identity
    (:meth:`plan_identity`), so a cached plan or a saved state stays valid when it changes."""

    def __post_init__(self) -> None:
        """Refuse a bad setting with one ConfigError naming it (each concern is one check, in order)."""
        for check in _CHECKS:
            check(self)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (what the fingerprint and a saved iterator state record)."""
        return asdict(self)

    def plan_identity(self) -> dict[str, Any]:
        """The settings a plan depends on: its cache key and what a resumed state must match. Not in it:
        how many threads build the plan, and ``batch_penalty`` outside ``lowpad`` mode (the peer modes
        cut as their peers do, so a state saved before the setting existed still resumes there). In
        ``lowpad`` mode it also holds :data:`LOWPAD_CUT`, the version of the cut rule."""
        values = self.to_dict()
        del values["plan_threads"]
        if self.compute_balance is None:
            del values["compute_balance"]
        if self.mode != "lowpad":
            del values["batch_penalty"]
        else:
            values["lowpad_cut"] = LOWPAD_CUT
        return values

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> BatchConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error naming them."""
        return settings_from_dict(cls, values, "batching")

    def replace(self, **changes: Any) -> BatchConfig:
        """A copy with some fields changed (validated again)."""
        values = self.to_dict()
        values.update(changes)
        return BatchConfig.from_dict(values)


def _check_mode(config: BatchConfig) -> None:
    if config.mode not in MODES and config.mode not in registered_modes():
        known = ", ".join(dict.fromkeys(MODES + registered_modes()))
        raise ConfigError(f"batching mode {config.mode!r} is unknown; choose one of {known}")


def _check_budget(config: BatchConfig) -> None:
    """A token budget, a row limit or both, each a positive integer."""
    if config.max_tokens is None and config.max_sentences is None:
        raise ConfigError("batching needs max_tokens or max_sentences (or both); neither is set")
    for name in ("max_tokens", "max_sentences"):
        value = getattr(config, name)
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ConfigError(f"{name} must be a positive integer or None, got {value!r}")


def _check_multiples(config: BatchConfig) -> None:
    for name in ("required_batch_size_multiple", "pad_to_multiple", "length_bucket_width"):
        value = getattr(config, name)
        if not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")


def _check_seed(config: BatchConfig) -> None:
    if not isinstance(config.seed, int) or not 0 <= config.seed < 2**32 - 1024:
        raise ConfigError(f"seed must be an integer in [0, 2**32 - 1024), got {config.seed!r}")


def _is_number(value: object) -> bool:
    """An int or float, not a bool."""
    return not isinstance(value, bool) and isinstance(value, int | float)


def _is_count(value: object) -> bool:
    """An int, not a bool."""
    return not isinstance(value, bool) and isinstance(value, int)


def _check_batch_penalty(config: BatchConfig) -> None:
    if not _is_number(config.batch_penalty) or not 0 <= config.batch_penalty <= 1:
        raise ConfigError(f"batch_penalty must be a number in [0, 1], got {config.batch_penalty!r}")


def _check_plan_threads(config: BatchConfig) -> None:
    if not _is_count(config.plan_threads) or config.plan_threads < 1:
        raise ConfigError(f"plan_threads must be an integer >= 1, got {config.plan_threads!r}")


def _check_block_size(config: BatchConfig) -> None:
    if config.block_size is not None and (not isinstance(config.block_size, int) or config.block_size < 64):
        raise ConfigError(f"block_size must be an integer >= 64 or None, got {config.block_size!r}")


def _check_compute_balance(config: BatchConfig) -> None:
    value = config.compute_balance
    if value is not None and (not _is_number(value) or not 0 <= value < float("inf")):
        raise ConfigError(f"compute_balance must be a number >= 0 or None, got {value!r}")


def _check_sample_buffer_size(config: BatchConfig) -> None:
    if not isinstance(config.sample_buffer_size, int) or config.sample_buffer_size < -1:
        raise ConfigError(f"sample_buffer_size must be -1, 0 or a positive integer, got {config.sample_buffer_size!r}")


_CHECKS: tuple[Callable[[BatchConfig], None], ...] = (
    _check_mode, _check_budget, _check_multiples, _check_seed, _check_batch_penalty, _check_plan_threads,
    _check_block_size, _check_compute_balance, _check_sample_buffer_size,
)
"""The checks of :meth:`BatchConfig.__post_init__`, in the order they report (the first problem wins)."""
