"""Collate a batch of packed rows into Tensor2Tensor's packed features (numpy int64).

For R rows at widths S (source) and T (target)::

    inputs, inputs_segmentation, inputs_position        (R, S)
    targets, targets_segmentation, targets_position     (R, T)
    prev_output_tokens                                  (R, T)  decoder input, per segment
    id (pairs,)  nsentences  ntokens (target tokens)  segments (R,) pairs per row

Segments are numbered 1, 2, 3 ... in each row and 0 on padding; positions restart at 0 in each
segment and are 0 on padding (T2T's ``pack_dataset`` conventions). Token padding is the
dataset's ``<pad>`` unless ``pad`` says otherwise (T2T vocabularies pad with 0).
``prev_output_tokens`` is fairseq's decoder input made per segment: each pair's target moved one
place right with ``</s>`` first, so no segment ever sees the previous segment's last token.
A missing side leaves its keys out. Everything is a handful of numpy calls per batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tokenmill.batching.packed_pairs import PackedBatch
from tokenmill.data.pairs import PairDataset
from tokenmill.errors import FormatError


def _layout(lengths: np.ndarray, row_ends: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per token of the flat side: (flat index in the (R, width) matrix, segment id, position in its pair)."""
    num_pairs = len(lengths)
    row_starts = np.concatenate([[0], row_ends[:-1]]).astype(np.int64)
    row_of_pair = np.repeat(np.arange(len(row_ends), dtype=np.int64), row_ends - row_starts)
    segment = np.arange(num_pairs, dtype=np.int64) - row_starts[row_of_pair] + 1
    pair_start = np.zeros(num_pairs + 1, dtype=np.int64)
    np.cumsum(lengths, out=pair_start[1:])
    row_token_start = pair_start[row_starts]
    total = int(pair_start[-1])
    flat = np.arange(total, dtype=np.int64)
    position = flat - np.repeat(pair_start[:-1], lengths)
    column = flat - np.repeat(row_token_start[row_of_pair], lengths)
    rows = np.repeat(row_of_pair, lengths)
    return rows * width + column, np.repeat(segment, lengths), position


def _side(
    dataset: PairDataset, batch: PackedBatch, which: str, width: int, pad: int
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray] | None:
    rows = dataset.rows(batch.ids, which)
    if rows is None:
        return None
    lengths = rows.lengths
    row_tokens = np.add.reduceat(lengths, np.concatenate([[0], batch.row_ends[:-1]])) if len(lengths) else lengths
    if len(row_tokens) and int(row_tokens.max()) > width:
        row = int(np.argmax(row_tokens > width))
        raise FormatError(
            f"a packed {which} row holds more than {width} tokens (row {row} of the batch, pairs "
            f"{batch.rows()[row].tolist()}): the stored sentences do not match the lengths the plan was made "
            f"from ({dataset.describe()}); re-run prepare, or check the per-item options"
        )
    index, segment, position = _layout(lengths, batch.row_ends, width)
    shape = (batch.num_rows, width)
    tokens = np.full(shape, pad, dtype=np.int64)
    tokens.reshape(-1)[index] = rows.tokens
    seg = np.zeros(shape, dtype=np.int64)
    seg.reshape(-1)[index] = segment
    pos = np.zeros(shape, dtype=np.int64)
    pos.reshape(-1)[index] = position
    return {"": tokens, "_segmentation": seg, "_position": pos}, index, position, rows.tokens


def collate_packed(
    dataset: PairDataset, batch: PackedBatch, *, pad: int | None = None, prev_output_tokens: bool = True
) -> dict[str, Any]:
    """T2T's packed features for one :class:`PackedBatch` (see the module docstring).

    Use ``functools.partial(collate_packed, pad=0)`` to pass options through ``BatchIterator``.
    """
    pad_id = dataset.options.pad if pad is None else pad
    out: dict[str, Any] = {
        "id": np.asarray(batch.ids, dtype=np.int64),
        "nsentences": len(batch.ids),
        "segments": np.diff(np.concatenate([[0], batch.row_ends])).astype(np.int64),
    }
    src = _side(dataset, batch, "source", batch.src_width, pad_id)
    if src is not None:
        out.update({f"inputs{k}": v for k, v in src[0].items()})
    tgt = _side(dataset, batch, "target", batch.tgt_width, pad_id)
    ntokens = 0
    if tgt is not None:
        features, index, position, tokens = tgt
        out.update({f"targets{k}": v for k, v in features.items()})
        ntokens = len(tokens)
        if prev_output_tokens:
            shifted = np.empty(len(tokens), dtype=np.int64)
            shifted[1:] = tokens[:-1]
            shifted[position == 0] = dataset.options.eos
            prev = np.full(features[""].shape, pad_id, dtype=np.int64)
            prev.reshape(-1)[index] = shifted
            out["prev_output_tokens"] = prev
    elif src is not None:
        ntokens = int((src[0]["_segmentation"] > 0).sum())
    out["ntokens"] = ntokens
    return out
