"""Word alignments from Pharaoh lines: OpenNMT-tf's dense matrices and fairseq's flat pairs."""

from __future__ import annotations

import numpy as np
import pytest

from tokenmill.batching.align import dense_batch, dense_matrix, fairseq_alignments, parse_pharaoh
from tokenmill.errors import FormatError


def test_seed_example_identity_alignment():
    # "0-0 1-1 2-2" for "▁you ▁know ▁it" -> "▁вы ▁знаете ▁это": a 3 x 3 identity, float32
    pairs = parse_pharaoh("0-0 1-1 2-2")
    assert pairs.tolist() == [0, 0, 1, 1, 2, 2]
    matrix = dense_matrix(pairs, source_length=3, target_length=3)
    assert matrix.dtype == np.float32
    assert matrix.tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


def test_dense_matrix_is_target_by_source():
    # source 2 tokens, target 3 tokens; source 0 aligns to targets 1 and 2, source 1 to target 0
    matrix = dense_matrix(parse_pharaoh("0-1 0-2 1-0"), source_length=2, target_length=3)
    assert matrix.shape == (3, 2)
    assert matrix.tolist() == [[0, 1], [1, 0], [1, 0]]


def test_bad_pharaoh_and_out_of_range_pairs_are_errors():
    with pytest.raises(FormatError, match="not a Pharaoh pair"):
        parse_pharaoh("0-0 1:1")
    with pytest.raises(FormatError, match="out of range"):
        dense_matrix(parse_pharaoh("3-0"), 3, 3)


def test_dense_batch_pads_to_longest_sentences():
    pairs = np.array([[0, 0], [1, 1], [0, 1]])
    out = dense_batch(pairs, np.array([0, 2, 3]), np.array([2, 1]), np.array([2, 3]), ids=np.array([10, 11]))
    assert out.shape == (2, 3, 2)
    assert out[0].tolist() == [[1, 0], [0, 1], [0, 0]]
    assert out[1].tolist() == [[0, 0], [1, 0], [0, 0]]
    with pytest.raises(FormatError, match="pair 11"):
        dense_batch(np.array([[5, 0]]), np.array([0, 0, 1]), np.array([2, 1]), np.array([2, 3]), ids=np.array([10, 11]))


def test_fairseq_flat_pairs_offsets_and_weights():
    # two rows; source lengths 4 and 3 (with </s>), target lengths 3 and 4, padded widths 4 and 4
    pairs = np.array([[0, 0], [1, 0], [2, 1], [1, 2]])
    offsets = np.array([0, 3, 4])
    result = fairseq_alignments(
        pairs, offsets, np.array([4, 3]), np.array([3, 4]), 4, 4, left_pad_source=True, left_pad_target=False
    )
    assert result is not None
    flat, weights = result
    # row 0: no left padding (length 4 = width); row 1: source shifted by 1, target by one row (4)
    assert flat.tolist() == [[0, 0], [1, 0], [2, 1], [2, 6]]
    assert weights.tolist() == [0.5, 0.5, 1.0, 1.0]  # target position 0 is aligned twice


def test_fairseq_skips_rows_reaching_the_final_eos():
    pairs = np.array([[3, 0]])  # source position 3 is </s> of a 4-token source
    with pytest.warns(UserWarning, match="skipped"):
        result = fairseq_alignments(
            pairs, np.array([0, 1]), np.array([4]), np.array([3]), 4, 3, left_pad_source=True, left_pad_target=False
        )
    assert result is None
