"""What the framework adapters share: which collate makes a layout, and fixed row counts for jit.

A *layout* is the form of one batch: ``"ours"`` (whatever the :class:`BatchIterator`'s own
``collate`` gives: fairseq's dict by default, packed features, sample ids ...), ``"fairseq"``
(fairseq's batch dict) or ``"opennmt"`` (OpenNMT-tf's ``(features, labels)``). The tf.data and
Grain adapters serve the batch of any (epoch, step, rank) through :func:`batch_maker`, so they
give exactly the numpy iterator's batches; nothing here imports a framework.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tokenmill.batching.collate import COLLATERS
from tokenmill.batching.multi_collate import MultiCollate
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.errors import ConfigError
from tokenmill.loader.iterator import BatchIterator

LAYOUTS = ("ours", "fairseq", "opennmt")
"""``ours``: the iterator's own collate; ``fairseq``: fairseq's batch dict; ``opennmt``: OpenNMT-tf's
``(features, labels)``."""

BatchAt = Callable[[int, int, int], Any]
"""``(epoch, step, rank) -> batch``."""


def check_layout(layout: str) -> str:
    """``layout`` if it is one of :data:`LAYOUTS`, else a :class:`ConfigError` naming them."""
    if layout not in LAYOUTS:
        raise ConfigError(f"layout {layout!r} is unknown; choose one of {', '.join(LAYOUTS)}")
    return layout


def collate_for(batches: BatchIterator, layout: str) -> Callable[[Any], Any]:
    """The function turning a plan's batch (sample ids) into a batch of ``layout``."""
    check_layout(layout)
    if batches.update_freq != 1:
        raise ConfigError(
            f"update_freq={batches.update_freq}: the adapters yield single batches; group them for update_freq "
            "in the training step"
        )
    if layout == "ours":
        return batches.collate
    dataset, options = batches.dataset, batches.collate_options
    if isinstance(dataset, MultiPairDataset):
        multi = MultiCollate(layout, options)
        return lambda ids: multi(dataset, ids)
    collate = COLLATERS[layout]
    return lambda ids: collate(dataset, ids, options)


def batch_maker(batches: BatchIterator, layout: str) -> BatchAt:
    """``(epoch, step, rank) -> batch``: random access to any rank's batch of the iterator's plans."""
    collate = collate_for(batches, layout)

    def batch_at(epoch: int, step: int, rank: int) -> Any:
        return collate(batches.plan(epoch).indices(step, rank))

    return batch_at


def advance(batches: BatchIterator, epoch: int, step: int, count: int) -> tuple[int, int]:
    """The position ``count`` batches after (epoch, step), across epoch ends."""
    if count < 0:
        raise ConfigError(f"cannot go back {-count} batches from epoch {epoch}, step {step}")
    while True:
        left = batches.num_steps(epoch) - step
        if count < left:
            return epoch, step + count
        count -= left
        epoch, step = epoch + 1, 0


# ---------------------------------------------------------------- fixed row counts
ROW_KEYS_NOT_PER_ROW = frozenset({"alignments", "align_weights"})
"""fairseq keys whose first dimension is not the batch's rows (alignment pairs)."""
TOKEN_KEYS = frozenset({"src_tokens", "prev_output_tokens", "target", "inputs", "targets", "ids", "ids_out", "tokens"})
"""Token matrices: extra rows are filled with the pad id (so losses that skip ``<pad>`` skip them)."""


def rows_of(batch: Any) -> int:
    """Rows of a batch of any layout (fairseq dict, OpenNMT tuple, packed features)."""
    if isinstance(batch, tuple):
        return len(batch[0]["length"])
    if "segments" in batch:  # packed rows: one entry per row; ``id`` has one per pair
        return len(batch["segments"])
    return len(batch["id"])


def pad_rows_to(batch: Any, rows: int, pad: int) -> Any:
    """``batch`` with every per-row array grown to ``rows`` rows (for ``jax.jit``'s static shapes).

    Token matrices get ``pad``, fairseq's per-row ``id`` gets -1, lengths, segment ids and
    positions get 0 (so masks built from them ignore the extra rows). Packed batches keep their
    ``id`` (one per pair, not per row) and scalars (``nsentences``, ``ntokens``) keep counting the
    real rows. A batch with more rows is an error naming the setting that bounds rows.
    """
    have = rows_of(batch)
    if have > rows:
        raise ConfigError(
            f"a batch has {have} rows, more than static_rows={rows}: bound the rows with "
            "BatchConfig(max_sentences=...) or PackConfig(rows_per_batch=...), or raise static_rows"
        )
    packed = isinstance(batch, dict) and "segments" in batch
    return _pad_tree(batch, have, rows, pad, packed)


def _pad_tree(value: Any, have: int, rows: int, pad: int, packed: bool, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _pad_tree(v, have, rows, pad, packed, k) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_pad_tree(v, have, rows, pad, packed, key) for v in value)
    if not isinstance(value, np.ndarray) or value.ndim == 0 or rows == have:
        return value
    if key in ROW_KEYS_NOT_PER_ROW or (packed and key == "id") or value.shape[0] != have:
        return value
    fill: Any = pad if key in TOKEN_KEYS else -1 if key == "id" else 0
    if value.dtype == object:
        fill = ""
    out = np.full((rows, *value.shape[1:]), fill, dtype=value.dtype)
    out[:have] = value
    return out
