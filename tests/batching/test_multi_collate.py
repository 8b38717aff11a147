"""Collating batches of many translation directions (``MultiCollate``): a fairseq batch of global ids
equals each direction's own batch, tagged with its direction; an OpenNMT batch carries the
directions in batch order.

The ``data_bin`` is the Open-NLLB-style one of ``tests/data/multi_corpus.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.data.multi_corpus import make_data_bin
from tokenmill.batching.collate import collate_fairseq, collate_opennmt
from tokenmill.batching.multi_collate import MultiCollate
from tokenmill.data.multi_pairs import MultiPairDataset


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory) -> Path:
    return make_data_bin(tmp_path_factory.mktemp("multi-collate") / "data_bin")


@pytest.fixture(scope="module")
def dataset(data_bin) -> MultiPairDataset:
    return MultiPairDataset.from_dir(data_bin)


def test_fairseq_batch_of_global_ids_equals_per_direction_batches(dataset):
    """A batch from one direction collates exactly like that direction's own PairDataset;
    a mixed batch holds the same rows, tagged with their direction."""
    part = dataset.part_index("eng_Latn-tur_Latn", 2)
    local = np.array([5, 0, 17, 3, 99])
    own = collate_fairseq(dataset.parts[part], local)
    multi = collate_fairseq(dataset, local + dataset.offsets[part])
    assert np.array_equal(multi["id"], own["id"] + dataset.offsets[part])
    for key in ("src_tokens", "src_lengths", "prev_output_tokens"):
        assert np.array_equal(multi["net_input"][key], own["net_input"][key])
    assert np.array_equal(multi["target"], own["target"]) and multi["ntokens"] == own["ntokens"]

    ids = np.array([3, 200, 460, 565, 120, 571, 401])  # every direction, several shards
    batch = MultiCollate("fairseq")(dataset, ids)
    assert sorted(batch["id"].tolist()) == sorted(ids.tolist())
    assert np.array_equal(batch["direction"], dataset.direction_of(batch["id"]))
    for r, g in enumerate(batch["id"]):
        item = dataset[int(g)]
        src_row = batch["net_input"]["src_tokens"][r]
        assert src_row[src_row != 1].tolist() == item["source"].tolist()  # left-padded source
        assert batch["target"][r][: len(item["target"])].tolist() == item["target"].tolist()
        assert (
            batch["net_input"]["prev_output_tokens"][r][1 : len(item["target"])].tolist()
            == item["target"][:-1].tolist()
        )


def test_opennmt_batch_carries_directions_in_batch_order(dataset):
    ids = np.array([571, 3, 460])
    features, labels = MultiCollate("opennmt")(dataset, ids)
    assert features["direction"].tolist() == dataset.direction_of(ids).tolist()
    own_features, own_labels = collate_opennmt(dataset.parts[0], np.array([3]))
    assert features["ids"][1, : own_features["length"][0]].tolist() == own_features["ids"][0].tolist()
    assert labels["ids_out"][1, : own_labels["length"][0]].tolist() == own_labels["ids_out"][0].tolist()
