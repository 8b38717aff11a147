"""Collating batches of many translation directions (``MultiCollate``): a fairseq batch of global ids
equals each direction's own batch, tagged with its direction; an OpenNMT batch carries the
directions in batch order.

The ``multi_data_bin`` is the Open-NLLB-style one of ``tests/data/multi_corpus.py``.
"""

from __future__ import annotations

import numpy as np

from tokenmill.batching.collate import collate_fairseq, collate_opennmt
from tokenmill.batching.multi_collate import MultiCollate


def test_fairseq_batch_of_global_ids_equals_per_direction_batches(multi_dataset):
    """A batch from one direction collates exactly like that direction's own PairDataset;
    a mixed batch holds the same rows, tagged with their direction."""
    part = multi_dataset.part_index("eng_Latn-tur_Latn", 2)
    local = np.array([5, 0, 17, 3, 99])
    own = collate_fairseq(multi_dataset.parts[part], local)
    multi = collate_fairseq(multi_dataset, local + multi_dataset.offsets[part])
    assert np.array_equal(multi["id"], own["id"] + multi_dataset.offsets[part])
    for key in ("src_tokens", "src_lengths", "prev_output_tokens"):
        assert np.array_equal(multi["net_input"][key], own["net_input"][key])
    assert np.array_equal(multi["target"], own["target"]) and multi["ntokens"] == own["ntokens"]

    ids = np.array([3, 200, 460, 565, 120, 571, 401])  # every direction, several shards
    batch = MultiCollate("fairseq")(multi_dataset, ids)
    assert sorted(batch["id"].tolist()) == sorted(ids.tolist())
    assert np.array_equal(batch["direction"], multi_dataset.direction_of(batch["id"]))
    for r, g in enumerate(batch["id"]):
        item = multi_dataset[int(g)]
        src_row = batch["net_input"]["src_tokens"][r]
        assert src_row[src_row != 1].tolist() == item["source"].tolist()  # left-padded source
        assert batch["target"][r][: len(item["target"])].tolist() == item["target"].tolist()
        assert (
            batch["net_input"]["prev_output_tokens"][r][1 : len(item["target"])].tolist()
            == item["target"][:-1].tolist()
        )


def test_opennmt_batch_carries_directions_in_batch_order(multi_dataset):
    ids = np.array([571, 3, 460])
    features, labels = MultiCollate("opennmt")(multi_dataset, ids)
    assert features["direction"].tolist() == multi_dataset.direction_of(ids).tolist()
    own_features, own_labels = collate_opennmt(multi_dataset.parts[0], np.array([3]))
    assert features["ids"][1, : own_features["length"][0]].tolist() == own_features["ids"][0].tolist()
    assert labels["ids_out"][1, : own_labels["length"][0]].tolist() == own_labels["ids_out"][0].tolist()
