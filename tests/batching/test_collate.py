"""Collation to fairseq's batch dict and OpenNMT-tf's features/labels, as plain numpy arrays."""

from __future__ import annotations

import numpy as np
import pytest

from tests.batching.corpus import make_pair_dir
from tokenmill.batching.collate import CollateOptions, collate_fairseq, collate_opennmt, pad_rows, shift_eos_to_front
from tokenmill.data.pairs import PairDataset, PairOptions
from tokenmill.store import IndexedWriter

PAD, EOS, BOS = 1, 2, 0


def tiny_dir(tmp_path, alignments=None):
    """Three pairs with known tokens (</s> = 2 stored at the end of each sentence)."""
    src = [[7, 21, 10, EOS], [5, EOS], [4, 4, 4, 4, 4, EOS]]
    tgt = [[9, 17, 8, EOS], [6, 6, EOS], [3, EOS]]
    make_pair_dir(tmp_path, lengths=(np.array([3, 1, 5]), np.array([3, 2, 1])), alignments=alignments)
    for lang, rows in (("en", src), ("de", tgt)):
        with IndexedWriter(tmp_path / f"train.en-de.{lang}", layout="fairseq", vocab_size=200) as writer:
            for row in rows:
                writer.add_item(np.array(row))
    return PairDataset.from_dir(tmp_path)


def test_pad_rows_left_right_and_multiple():
    tokens, offsets = np.array([1, 2, 3, 4, 5, 6]), np.array([0, 3, 4, 6])
    assert pad_rows(tokens, offsets, 0).tolist() == [[1, 2, 3], [4, 0, 0], [5, 6, 0]]
    assert pad_rows(tokens, offsets, 0, left=True).tolist() == [[1, 2, 3], [0, 0, 4], [0, 5, 6]]
    assert pad_rows(tokens, offsets, 9, multiple=4).shape == (3, 4)
    assert pad_rows(np.array([1, 2, 3, 4]), np.array([0, 2, 4]), 0).tolist() == [[1, 2], [3, 4]]


def test_prev_output_tokens_moves_eos_to_the_front():
    target = np.array([[9, 17, 8, 2], [6, 2, 1, 1]])
    lengths = np.array([4, 2])
    assert shift_eos_to_front(target, lengths, EOS, PAD, left=False).tolist() == [[2, 9, 17, 8], [2, 6, 1, 1]]
    left = np.array([[9, 17, 8, 2], [1, 1, 6, 2]])
    assert shift_eos_to_front(left, lengths, EOS, PAD, left=True).tolist() == [[2, 9, 17, 8], [1, 1, 2, 6]]


def test_fairseq_batch(tmp_path):
    batch = collate_fairseq(tiny_dir(tmp_path), np.array([0, 1, 2]))
    assert batch["id"].tolist() == [2, 0, 1]  # longest source first
    assert batch["nsentences"] == 3 and batch["ntokens"] == 4 + 3 + 2
    net = batch["net_input"]
    assert net["src_tokens"].tolist() == [[4, 4, 4, 4, 4, 2], [1, 1, 7, 21, 10, 2], [1, 1, 1, 1, 5, 2]]
    assert net["src_lengths"].tolist() == [6, 4, 2]
    assert batch["target"].tolist() == [[3, 2, 1, 1], [9, 17, 8, 2], [6, 6, 2, 1]]
    assert net["prev_output_tokens"].tolist() == [[2, 3, 1, 1], [2, 9, 17, 8], [2, 6, 6, 1]]
    assert batch["target"].dtype == np.int64


def test_fairseq_batch_options(tmp_path):
    dataset = tiny_dir(tmp_path)
    options = CollateOptions(left_pad_source=False, pad_to_multiple=8, input_feeding=False)
    batch = collate_fairseq(dataset, np.array([0, 1]), options)
    assert batch["net_input"]["src_tokens"].tolist() == [[7, 21, 10, 2, 1, 1, 1, 1], [5, 2, 1, 1, 1, 1, 1, 1]]
    assert "prev_output_tokens" not in batch["net_input"]


def test_source_only_batch_counts_source_tokens(tmp_path):
    dataset = tiny_dir(tmp_path)
    source_only = PairDataset(dataset.src, None)
    batch = collate_fairseq(source_only, np.array([1, 2]))
    assert batch["target"] is None and batch["ntokens"] == 8


def test_opennmt_features_and_labels(tmp_path):
    # the seed's example row: source "▁he ▁knows ▁it" ids [7 21 10], target ids [9 17 8]
    dataset = tiny_dir(tmp_path)
    dataset = PairDataset(dataset.src, dataset.tgt, PairOptions(remove_eos_from_source=True))
    features, labels = collate_opennmt(dataset, np.array([0, 1]))
    assert features["length"].tolist() == [3, 1]
    assert features["ids"].tolist() == [[7, 21, 10], [5, 1, 1]]
    assert labels["length"].tolist() == [4, 3]
    assert labels["ids"].tolist() == [[0, 9, 17, 8], [0, 6, 6, 1]]
    assert labels["ids_out"].tolist() == [[9, 17, 8, 2], [6, 6, 2, 1]]
    assert features["length"].dtype == np.int32


def test_opennmt_alignment_matrix_of_the_seed_example(tmp_path):
    dataset = tiny_dir(tmp_path, alignments=["0-0 1-1 2-2", "0-1", "4-0"])
    dataset = PairDataset(dataset.src, dataset.tgt, PairOptions(remove_eos_from_source=True), align=dataset.align)
    _, labels = collate_opennmt(dataset, np.array([0]))
    assert labels["alignment"].tolist() == [[[1, 0, 0], [0, 1, 0], [0, 0, 1]]]
    assert labels["alignment"].dtype == np.float32
    _, labels = collate_opennmt(dataset, np.array([0, 1]))
    assert labels["alignment"].shape == (2, 3, 3)  # padded to (longest target, longest source)
    assert labels["alignment"][1].tolist() == [[0, 0, 0], [1, 0, 0], [0, 0, 0]]


def test_opennmt_token_strings_from_the_dictionary(tmp_path):
    dataset = tiny_dir(tmp_path)
    features, labels = collate_opennmt(dataset, np.array([1]), CollateOptions(tokens=True))
    assert features["tokens"].tolist() == [["w5", "</s>"]]
    assert labels["tokens"].tolist() == [["w6", "w6"]]


def test_prepended_language_tag_shifts_alignments(tmp_path):
    dataset = tiny_dir(tmp_path, alignments=["0-0 1-1 2-2", "0-1", "4-0"])
    tagged = PairDataset(dataset.src, dataset.tgt, PairOptions(prepend_src=150), align=dataset.align)
    batch = collate_fairseq(tagged, np.array([0]))
    assert batch["net_input"]["src_tokens"].tolist() == [[150, 7, 21, 10, 2]]
    assert batch["alignments"][:, 0].tolist() == [1, 2, 3]  # positions follow the tag


@pytest.mark.parametrize(
    "options", [PairOptions(), PairOptions(prepend_src=150, append_bos=True, remove_eos_from_source=True)]
)
def test_vectorized_rows_equal_item_by_item_rows(tmp_path, options):
    dataset = PairDataset.from_dir(make_pair_dir(tmp_path / "big", 1500), options=options)
    batch = collate_fairseq(dataset, np.arange(1500), CollateOptions(left_pad_source=False))
    lengths = batch["net_input"]["src_lengths"]
    for row, sample in enumerate(batch["id"].tolist()):
        item = dataset[sample]
        assert batch["net_input"]["src_tokens"][row, : lengths[row]].tolist() == item["source"].tolist()
        target = batch["target"][row]
        assert target[target != PAD].tolist() == item["target"].tolist()
