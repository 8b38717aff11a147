"""Collate a batch of sample ids into padded numpy arrays: fairseq's batch dict or OpenNMT's features.

fairseq (``LanguagePairDataset.collate``)::

    {"id": (B,), "nsentences": B, "ntokens": target tokens (source tokens without a target),
     "net_input": {"src_tokens": (B, S) left-padded, "src_lengths": (B,),
                   "prev_output_tokens": (B, T) = target with </s> moved to the front},
     "target": (B, T) right-padded or None}

Rows are sorted by source length, longest first, as fairseq sorts them. Widths are padded
up to ``pad_to_multiple``. With alignments: ``alignments`` and ``align_weights`` as fairseq makes them.

OpenNMT-tf (``features``, ``labels``)::

    features = {"length": (B,) int32, "ids": (B, S)}
    labels   = {"length": (B,) int32, "ids": (B, T) = <s> + target, "ids_out": (B, T) = target + </s>,
                "alignment": (B, T-1, S) float32 when the dataset has alignments}

with the target taken without its stored ``</s>``; ``tokens`` (strings) on both sides when asked.
Rows stay in batch order; both sides are right-padded. Ids are the fairseq dictionary's (``<s>``=0,
``<pad>``=1, ``</s>``=2, ``<unk>``=3) unless ``CollateOptions(ids="opennmt")`` asks for OpenNMT-tf's:
``<blank>``=0 pads, ``<s>``=1, ``</s>``=2, symbol ``i >= 4`` -> ``i - 1``, ``<unk>`` -> the side's
dictionary size - 1: the line numbers of the vocabulary
:func:`~tokenmill.vocab.dictionary.write_opennmt_tf_vocab` writes from ``dict.{lang}.txt``, with
``<unk>`` just past its last line as OpenNMT-tf puts it.

Everything is built with a handful of vectorized numpy calls per batch, never a loop over rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tokenmill._core.ragged import pad_rows as pad_rows  # re-exported: part of the collate API
from tokenmill.batching.align import dense_batch, fairseq_alignments
from tokenmill.data.pairs import PairDataset, SideRows
from tokenmill.errors import ConfigError, FormatError
from tokenmill.vocab.dictionary import SPECIALS, opennmt_tf_id_table

ID_CONVENTIONS = ("fairseq", "opennmt")
"""``fairseq``: the dictionary's ids as stored; ``opennmt``: OpenNMT-tf's vocabulary ids (OpenNMT collate only)."""


@dataclass(frozen=True)
class CollateOptions:
    """Layout of collated batches."""

    left_pad_source: bool = True
    """fairseq: pad sources on the left (fairseq's default)."""
    left_pad_target: bool = False
    """fairseq: pad targets on the left."""
    pad_to_multiple: int = 1
    """Pad widths up to a multiple of this (fairseq's ``required_seq_len_multiple``)."""
    input_feeding: bool = True
    """fairseq: include ``prev_output_tokens``."""
    dtype: str = "int64"
    """Token dtype of the arrays (fairseq and OpenNMT-tf use int64)."""
    tokens: bool = False
    """OpenNMT: include ``tokens`` (strings from the dictionaries)."""
    ids: str = "fairseq"
    """OpenNMT: ``fairseq`` (the stored ids, padded with ``<pad>``=1, ``<s>``=0) or ``opennmt``
    (OpenNMT-tf's convention: ``<blank>``=0 pads, ``<s>``=1, ``</s>``=2, every other token its line
    in the vocabulary :func:`~tokenmill.vocab.dictionary.write_opennmt_tf_vocab` writes from the
    side's ``dict.{lang}.txt``, ``<unk>`` after the last line). ``opennmt`` needs the dataset's
    dictionaries (a dataset opened with ``PairDataset.from_dir``)."""

    def __post_init__(self) -> None:
        if self.ids not in ID_CONVENTIONS:
            raise ConfigError(f"collate ids {self.ids!r} is unknown; choose one of {', '.join(ID_CONVENTIONS)}")


def shift_eos_to_front(target: np.ndarray, lengths: np.ndarray, eos: int, pad: int, *, left: bool) -> np.ndarray:
    """fairseq's ``prev_output_tokens``: each row's tokens moved one place right, ``</s>`` first."""
    rows, width = target.shape
    if width == 0:
        return np.empty_like(target)
    if not left and rows and int(np.minimum.reduce(lengths)) > 0:
        # one spare slot at the end lets row r's stray last token at column lengths[r] be reset
        # with one flat write even when lengths[r] == width (it lands on the next row's column 0,
        # which is set to </s> afterwards)
        flat = np.empty(rows * width + 1, dtype=target.dtype)
        prev = flat[:-1].reshape(rows, width)
        prev[:, 1:] = target[:, :-1]
        flat[np.arange(0, rows * width, width) + lengths] = pad
        prev[:, 0] = eos
        return prev
    prev = np.empty_like(target)
    prev[:, 1:] = target[:, :-1]
    prev[:, 0] = pad
    index = np.arange(rows)
    start = (width - lengths) if left else np.zeros(rows, dtype=np.int64)
    filled = lengths > 0
    prev[index[filled], start[filled]] = eos
    if not left:
        short = lengths < width
        prev[index[short], lengths[short]] = pad
    return prev


def _order_by_source(dataset: PairDataset, indices: np.ndarray) -> np.ndarray:
    """fairseq's row order: by source length, longest first; equal lengths keep batch order.

    (fairseq uses ``torch.sort(descending=True)``, whose order among equal lengths is an accident
    of torch's sort algorithm for more than 16 rows; rows of equal source length may therefore
    come in another order than fairseq's, with identical contents.)
    """
    if dataset.src_sizes is None:
        return indices
    lengths = dataset.src_sizes[indices].astype(np.int64)
    np.negative(lengths, out=lengths)
    return indices[np.argsort(lengths, kind="stable")]


def collate_fairseq(dataset: PairDataset, indices: np.ndarray, options: CollateOptions | None = None) -> dict[str, Any]:
    """fairseq's batch dict for samples ``indices``."""
    o = options or CollateOptions()
    if o.ids != "fairseq":
        raise ConfigError(f"collate ids {o.ids!r} are for the OpenNMT collate; fairseq batches use fairseq's ids")
    pad, eos = dataset.options.pad, dataset.options.eos
    indices = _order_by_source(dataset, np.asarray(indices))
    src = dataset.padded(indices, "source", pad, left=o.left_pad_source, multiple=o.pad_to_multiple, dtype=o.dtype)
    tgt = dataset.padded(indices, "target", pad, left=o.left_pad_target, multiple=o.pad_to_multiple, dtype=o.dtype)
    batch: dict[str, Any] = {"id": indices.astype(np.int64), "nsentences": len(indices)}
    net_input: dict[str, Any] = {}
    if src is not None:
        net_input["src_tokens"], net_input["src_lengths"] = src
    target = None
    if tgt is not None:
        target, tgt_lengths = tgt
        batch["ntokens"] = int(tgt_lengths.sum())
        if o.input_feeding:
            net_input["prev_output_tokens"] = shift_eos_to_front(target, tgt_lengths, eos, pad, left=o.left_pad_target)
    else:
        batch["ntokens"] = int(src[1].sum()) if src is not None else 0
    batch["net_input"] = net_input
    batch["target"] = target
    aligned = dataset.alignment_pairs(indices)
    if aligned is not None and src is not None and tgt is not None:
        pairs, pair_offsets = aligned
        shifts = np.stack([dataset.shift(indices, "source"), dataset.shift(indices, "target")], axis=1)
        pairs = pairs + np.repeat(shifts, np.diff(pair_offsets), axis=0)
        result = fairseq_alignments(
            pairs,
            pair_offsets,
            src[1],
            tgt[1],
            src[0].shape[1],
            target.shape[1],  # type: ignore[union-attr]
            left_pad_source=o.left_pad_source,
            left_pad_target=o.left_pad_target,
        )
        if result is not None:
            batch["alignments"], batch["align_weights"] = result
    return batch


def _strip_eos(rows: SideRows, eos: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows without their trailing ``</s>`` (rows not ending in it are kept whole)."""
    lengths = rows.lengths
    ends = rows.offsets[1:]
    has = (
        (lengths > 0) & (rows.tokens[np.maximum(ends - 1, 0)] == eos)
        if len(rows.tokens)
        else np.zeros(len(lengths), bool)
    )
    if not has.any():
        return rows.tokens, rows.offsets
    keep = np.ones(len(rows.tokens), dtype=bool)
    keep[ends[has] - 1] = False
    new_lengths = lengths - has
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(new_lengths, out=offsets[1:])
    return rows.tokens[keep], offsets


def _with_token(tokens: np.ndarray, offsets: np.ndarray, token: int, *, front: bool) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.diff(offsets)
    n = len(lengths)
    new_offsets = offsets + np.arange(n + 1, dtype=np.int64)
    out = np.empty(len(tokens) + n, dtype=np.result_type(tokens.dtype, np.min_scalar_type(token)))
    extra = new_offsets[:-1] if front else new_offsets[1:] - 1
    mask = np.ones(len(out), dtype=bool)
    mask[extra] = False
    out[mask] = tokens
    out[extra] = token
    return out, new_offsets


def collate_opennmt(
    dataset: PairDataset, indices: np.ndarray, options: CollateOptions | None = None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """OpenNMT-tf's (features, labels) for samples ``indices`` (labels None without a target)."""
    o = options or CollateOptions()
    pad, eos, bos = dataset.options.pad, dataset.options.eos, dataset.options.bos
    opennmt = o.ids == "opennmt"
    indices = np.asarray(indices)
    src = dataset.rows(indices, "source")
    tgt = dataset.rows(indices, "target")
    features: dict[str, Any] = {}
    if src is not None:
        features["length"] = src.lengths.astype(np.int32)
        src_ids = _opennmt_ids(dataset, "source", src.tokens) if opennmt else src.tokens
        features["ids"] = pad_rows(
            src_ids, src.offsets, _OPENNMT_PAD if opennmt else pad, multiple=o.pad_to_multiple, dtype=o.dtype
        )
        if o.tokens:
            features["tokens"] = _strings(dataset, "source", src.tokens, src.offsets, o.pad_to_multiple)
    labels: dict[str, Any] | None = None
    body_lengths = None
    if tgt is not None:
        body, body_offsets = _strip_eos(tgt, eos)
        body_lengths = np.diff(body_offsets)
        body_ids, fill = body, pad
        if opennmt:
            body_ids, fill = _opennmt_ids(dataset, "target", body), _OPENNMT_PAD
            bos, eos = _OPENNMT_BOS, _OPENNMT_EOS
        ids_in, in_offsets = _with_token(body_ids, body_offsets, bos, front=True)
        ids_out, out_offsets = _with_token(body_ids, body_offsets, eos, front=False)
        labels = {
            "length": (body_lengths + 1).astype(np.int32),
            "ids": pad_rows(ids_in, in_offsets, fill, multiple=o.pad_to_multiple, dtype=o.dtype),
            "ids_out": pad_rows(ids_out, out_offsets, fill, multiple=o.pad_to_multiple, dtype=o.dtype),
        }
        if o.tokens:
            labels["tokens"] = _strings(dataset, "target", body, body_offsets, o.pad_to_multiple)
    aligned = dataset.alignment_pairs(indices)
    if aligned is not None and src is not None and labels is not None and body_lengths is not None:
        pairs, pair_offsets = aligned
        pairs = pairs + np.repeat(np.stack([src.shift, tgt.shift], axis=1), np.diff(pair_offsets), axis=0)  # type: ignore[union-attr]
        labels["alignment"] = dense_batch(pairs, pair_offsets, src.lengths, body_lengths, indices)
    return features, labels


_OPENNMT_PAD, _OPENNMT_BOS, _OPENNMT_EOS = 0, 1, 2  # OpenNMT-tf's <blank>, <s>, </s>


def _opennmt_ids(dataset: PairDataset, which: str, tokens: np.ndarray) -> np.ndarray:
    """Dictionary ids -> OpenNMT-tf vocabulary ids (:func:`~tokenmill.vocab.dictionary.opennmt_tf_id_table`)."""
    try:
        symbols = dataset.symbols(which)
    except ConfigError as error:
        raise ConfigError(f"OpenNMT ids need the {which} dictionary: {error}") from None
    if tuple(symbols[: len(SPECIALS)]) != SPECIALS:
        raise ConfigError(f"OpenNMT ids need a fairseq dictionary ({' '.join(SPECIALS)} first) on the {which} side")
    table = opennmt_tf_id_table(len(symbols))
    if len(tokens) and int(tokens.max()) >= len(table):
        raise FormatError(
            f"token id {int(tokens.max())} is outside the {which} dictionary ({len(table)} entries): the dictionary "
            "does not belong to this data"
        )
    return table[tokens]


def _strings(dataset: PairDataset, which: str, tokens: np.ndarray, offsets: np.ndarray, multiple: int) -> np.ndarray:
    symbols = dataset.symbols(which)
    ids = tokens.astype(np.int64)
    if len(ids) and int(ids.max()) >= len(symbols):
        raise FormatError(
            f"token id {int(ids.max())} is outside the {which} dictionary ({len(symbols)} entries): the dictionary "
            "does not belong to this data"
        )
    lengths = np.diff(offsets)
    width = int(lengths.max()) if len(lengths) else 0
    width = -(-width // multiple) * multiple if multiple > 1 else width
    out = np.full((len(lengths), width), "", dtype=object)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    cols = np.arange(len(tokens)) - np.repeat(offsets[:-1], lengths)
    out[rows, cols] = symbols[ids]
    return out


COLLATERS = {"fairseq": collate_fairseq, "opennmt": collate_opennmt}
