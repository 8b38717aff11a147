"""Word alignments: Pharaoh lines in, fairseq's flat position pairs or OpenNMT's dense matrices out.

Storage (written by prepare, read through :meth:`tokenmill.data.pairs.PairDataset.alignment_pairs`):
``{split}.align.{src}-{tgt}.bin/.idx`` (or ``{split}.align.bin/.idx``), one item per sentence pair,
holding the pairs of its Pharaoh line flattened as ``s0 t0 s1 t1 ...`` — 0-based positions of
the stored source and target tokens. ``"0-0 1-1 2-2"`` is stored as ``[0 0 1 1 2 2]``.

Delivery:

* fairseq (``LanguagePairDataset.collate``): ``alignments`` is a (K, 2) int64 array of
  (source column in its padded row, target position in the flattened (B x T) target) for every
  pair of every row that passes fairseq's check (all positions before the final ``</s>``), and
  ``align_weights`` is 1 / (how often the pair's target position occurs) as float32.
* OpenNMT-tf (``alignment_matrix_from_pharaoh``): a dense (target_length x source_length) matrix
  with 1 where a pair aligns target t to source s — the transpose of the (source x target) sparse
  matrix the Pharaoh pairs index; padded to (B x T x S) for a batch.
"""

from __future__ import annotations

import warnings

import numpy as np

from tokenmill.errors import FormatError


def parse_pharaoh(line: str, *, where: str = "alignment") -> np.ndarray:
    """``"0-0 1-2"`` -> int64 array ``[0 0 1 2]`` (flat source/target pairs)."""
    values: list[int] = []
    for item in line.split():
        left, dash, right = item.partition("-")
        if not dash or not left.isdigit() or not right.isdigit():
            raise FormatError(f"{where}: {item!r} is not a Pharaoh pair 'source-target' (e.g. '0-0 1-2')")
        values.extend((int(left), int(right)))
    return np.asarray(values, dtype=np.int64)


def dense_matrix(pairs: np.ndarray, source_length: int, target_length: int) -> np.ndarray:
    """OpenNMT-tf's ``alignment_matrix_from_pharaoh`` for one sentence: (target x source) float32."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if len(pairs) and (pairs[:, 0].max() >= source_length or pairs[:, 1].max() >= target_length):
        raise FormatError(
            f"alignment pair out of range for a {source_length}-token source and {target_length}-token target"
        )
    matrix = np.zeros((target_length, source_length), dtype=np.float32)
    matrix[pairs[:, 1], pairs[:, 0]] = 1.0
    return matrix


def fairseq_alignments(
    pairs: np.ndarray,
    pair_offsets: np.ndarray,
    src_lengths: np.ndarray,
    tgt_lengths: np.ndarray,
    src_width: int,
    tgt_width: int,
    *,
    left_pad_source: bool,
    left_pad_target: bool,
) -> tuple[np.ndarray, np.ndarray] | None:
    """fairseq's ``alignments`` and ``align_weights`` for a batch (rows already in batch order).

    ``pairs`` (K, 2) with row i owning ``pairs[pair_offsets[i]:pair_offsets[i+1]]``. Rows whose
    pairs are empty or reach the final ``</s>`` are skipped as fairseq skips them (with a warning).
    Returns None when no row has usable alignments (fairseq then leaves the keys out).
    """
    counts = np.diff(pair_offsets)
    n = len(counts)
    if len(pairs) == 0:
        return None
    row_of = np.repeat(np.arange(n), counts)
    starts = pair_offsets[:-1][counts > 0]
    max_src = np.full(n, -1, dtype=np.int64)
    max_tgt = np.full(n, -1, dtype=np.int64)
    max_src[counts > 0] = np.maximum.reduceat(pairs[:, 0], starts)
    max_tgt[counts > 0] = np.maximum.reduceat(pairs[:, 1], starts)
    valid = (counts > 0) & (max_src < src_lengths - 1) & (max_tgt < tgt_lengths - 1)
    mismatched = int(((counts > 0) & ~valid).sum())
    if mismatched:
        warnings.warn(
            f"{mismatched} alignment(s) reach past their sentence and were skipped, as fairseq does", stacklevel=3
        )
    if not valid.any():
        return None
    take = valid[row_of]
    rows = row_of[take]
    out = pairs[take].copy()
    if left_pad_source:
        out[:, 0] += (src_width - src_lengths)[rows]
    out[:, 1] += rows * tgt_width
    if left_pad_target:
        out[:, 1] += (tgt_width - tgt_lengths)[rows]
    _, inverse, frequency = np.unique(out[:, 1], return_inverse=True, return_counts=True)
    weights = (1.0 / frequency[inverse]).astype(np.float32)
    return out, weights


def dense_batch(
    pairs: np.ndarray, pair_offsets: np.ndarray, src_lengths: np.ndarray, tgt_lengths: np.ndarray, ids: np.ndarray
) -> np.ndarray:
    """(B, max target length, max source length) float32 of OpenNMT-tf alignment matrices, zero-padded."""
    n = len(src_lengths)
    height = int(tgt_lengths.max()) if n else 0
    width = int(src_lengths.max()) if n else 0
    out = np.zeros((n, height, width), dtype=np.float32)
    counts = np.diff(pair_offsets)
    rows = np.repeat(np.arange(n), counts)
    if len(pairs):
        bad = (pairs[:, 0] >= src_lengths[rows]) | (pairs[:, 1] >= tgt_lengths[rows]) | (pairs < 0).any(axis=1)
        if bad.any():
            row = int(rows[np.flatnonzero(bad)[0]])
            raise FormatError(
                f"alignment of pair {int(ids[row])} points outside the sentence (source length "
                f"{int(src_lengths[row])}, target length {int(tgt_lengths[row])}): the alignment file does not "
                "match the token data — re-run prepare with the right alignment file"
            )
        out[rows, pairs[:, 1], pairs[:, 0]] = 1.0
    return out
