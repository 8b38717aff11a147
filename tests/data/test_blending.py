"""Blending indices and split strings: small examples, the scalar greedy as reference, megatron-core as oracle."""

from __future__ import annotations

import numpy as np
import pytest

from tests.data.peers_megatron import MegatronJobs
from tokenmill.data import blending
from tokenmill.data.blending import (
    BlendedDataset,
    build_blending_indices,
    build_exhaustive_blending_indices,
    normalize_weights,
    parse_split,
    samples_per_dataset,
    split_document_ranges,
)
from tokenmill.errors import ConfigError


def scalar_reference(weights, size, caps=None):
    """The greedy one sample at a time (the module's small-size path, used here as the reference)."""
    out = np.empty(size, dtype=np.int16)
    blending._scalar_greedy(np.asarray(weights, dtype=np.float64), 0, size, [0] * len(weights), caps, out)
    return out


def test_equal_weights_alternate_and_ties_go_to_the_first_dataset():
    dataset_index, sample_index = build_blending_indices([0.5, 0.5], 6)
    assert dataset_index.tolist() == [0, 1, 0, 1, 0, 1]
    assert sample_index.tolist() == [0, 0, 1, 1, 2, 2]
    assert dataset_index.dtype == np.int16 and sample_index.dtype == np.int64


def test_each_sample_is_the_next_one_of_its_dataset_and_shares_follow_weights():
    weights = normalize_weights([30, 70])
    dataset_index, sample_index = build_blending_indices(weights, 1000)
    for d in (0, 1):
        assert sample_index[dataset_index == d].tolist() == list(range(int(np.sum(dataset_index == d))))
    assert np.bincount(dataset_index).tolist() == [300, 700]
    # The running share never strays a full sample from the weight.
    running = np.cumsum(dataset_index == 0) - 0.3 * np.arange(1, 1001)
    assert np.abs(running).max() <= 1


@pytest.mark.parametrize(
    "weights",
    [
        [0.3, 0.7],
        [1 / 3, 1 / 3, 1 / 3],
        [0.5, 0.25, 0.25],
        [0.001, 0.499, 0.5],
        list(np.random.default_rng(1).random(6) + 0.01),
        list(np.random.default_rng(2).random(12) + 0.01),  # more than 8 datasets: argmax path
    ],
)
def test_block_parallel_greedy_equals_the_scalar_greedy(weights):
    weights = normalize_weights(weights)
    size = 60_000
    dataset_index, _ = build_blending_indices(weights, size)
    np.testing.assert_array_equal(dataset_index, scalar_reference(weights, size))


def test_block_parallel_greedy_recovers_from_wrong_guesses(monkeypatch):
    # With no warm-up every block starts from a guess; the seam check must repair all of them.
    monkeypatch.setattr(blending, "_WARMUP", 0)
    monkeypatch.setattr(blending, "_MIN_BLOCK", 16)
    weights = normalize_weights([5, 3, 2, 1, 1])
    dataset_index, _ = build_blending_indices(weights, 20_000)
    np.testing.assert_array_equal(dataset_index, scalar_reference(weights, 20_000))


def test_many_narrow_blocks_of_many_datasets_stay_exact(monkeypatch):
    # 3750 blocks side by side: flat count positions pass the int16 range of dataset ids.
    monkeypatch.setattr(blending, "_WARMUP", 8)
    monkeypatch.setattr(blending, "_MIN_BLOCK", 16)
    weights = normalize_weights(np.arange(1, 13))
    dataset_index, sample_index = build_blending_indices(weights, 60_000)
    np.testing.assert_array_equal(dataset_index, scalar_reference(weights, 60_000))
    np.testing.assert_array_equal(sample_index, blending._sample_numbers(dataset_index, 12))


def test_exhaustive_blend_uses_every_sample_exactly_once():
    sizes = [3000, 7001, 1234, 5]
    dataset_index, sample_index = build_exhaustive_blending_indices(sizes)
    assert np.bincount(dataset_index).tolist() == sizes
    for d, size in enumerate(sizes):
        assert sample_index[dataset_index == d].tolist() == list(range(size))
    caps = np.asarray(sizes)
    np.testing.assert_array_equal(dataset_index, scalar_reference(caps / caps.sum(), int(caps.sum()), caps))


def test_samples_per_dataset_rounds_up_with_surplus():
    assert samples_per_dataset([0.25, 0.75], 1001) == [251, 751]
    assert samples_per_dataset([0.25, 0.75], 1000, surplus=0.005) == [252, 754]


def test_split_string_document_ranges():
    assert split_document_ranges("969,30,1", 1000) == [(0, 969), (969, 999), (999, 1000)]
    assert split_document_ranges("99,1", 12345) == [(0, 12222), (12222, 12345), None]
    assert parse_split(" 98 , 2 ") == [0.98, 0.02, 0.0]


@pytest.mark.parametrize("bad", ["", "a,b", "1,2,3,4", "-1,2", "0,0,0", "1;2"])
def test_bad_split_strings_are_config_errors(bad):
    with pytest.raises(ConfigError, match="split"):
        parse_split(bad)


@pytest.mark.parametrize("bad", [[], [0.5, 0.0], [1, -2], [float("nan"), 1]])
def test_bad_weights_are_config_errors(bad):
    with pytest.raises(ConfigError, match="weights"):
        normalize_weights(bad)


def gpt_dataset(prefix, first_token: int, num_samples: int):
    """A small real GPTDataset whose tokens all lie in [first_token, first_token + 100)."""
    from tokenmill.data.gpt_dataset import GPTDataset, GPTDatasetConfig
    from tokenmill.store import IndexedDataset, IndexedWriter

    rng = np.random.default_rng(first_token)
    with IndexedWriter(prefix, layout="megatron", dtype=np.uint16) as writer:
        for _ in range(60):
            writer.add_item(first_token + rng.integers(0, 100, size=int(rng.integers(1, 40))))
            writer.end_document()
    return GPTDataset(IndexedDataset(prefix), GPTDatasetConfig(seq_length=16, seed=1, num_samples=num_samples))


def test_blended_rows_are_the_chosen_samples_of_their_datasets(tmp_path):
    datasets = [gpt_dataset(tmp_path / "a", 1000, 120), gpt_dataset(tmp_path / "b", 5000, 300)]
    blend = BlendedDataset(datasets, [0.3, 0.7], size=400)
    ids = np.arange(0, 400, 3)
    batch = blend.get_batch(ids)
    for row, i in enumerate(ids):
        d, inner = int(blend.dataset_index[i]), int(blend.dataset_sample_index[i])
        assert batch["dataset_id"][row] == d
        one = datasets[d][inner]
        np.testing.assert_array_equal(batch["tokens"][row], one["tokens"])
        np.testing.assert_array_equal(batch["labels"][row], one["labels"])
        cuts = batch["cu_seqlens"]
        np.testing.assert_array_equal(cuts[(cuts >= row * 16) & (cuts <= row * 16 + 16)] - row * 16, one["cu_seqlens"])
    assert np.all((batch["tokens"] >= 5000) == (batch["dataset_id"] == 1)[:, None])


def test_a_blend_that_oversamples_a_dataset_is_a_config_error(tmp_path):
    datasets = [gpt_dataset(tmp_path / "a", 1000, 50), gpt_dataset(tmp_path / "b", 5000, 50)]
    with pytest.raises(ConfigError, match="asks dataset 1 for"):
        BlendedDataset(datasets, [0.2, 0.8], size=len(datasets[1]) + 40)


def test_a_blend_without_size_uses_every_counted_sample_once_and_caches(tmp_path):
    datasets = [gpt_dataset(tmp_path / "a", 1000, 50), gpt_dataset(tmp_path / "b", 5000, 50)]
    counts = [len(datasets[0]) // 2, len(datasets[1])]
    blend = BlendedDataset(datasets, counts, cache=str(tmp_path / "cache"))
    again = BlendedDataset(datasets, counts, cache=str(tmp_path / "cache"))
    assert np.bincount(blend.dataset_index).tolist() == counts
    assert isinstance(again.dataset_index.base, np.memmap)
    np.testing.assert_array_equal(blend.dataset_sample_index, again.dataset_sample_index)
    with pytest.raises(ConfigError, match="integers"):
        BlendedDataset(datasets, [0.5, 0.5])


# ---------------------------------------------------------------- megatron-core as the oracle

BLENDS = {
    "two": ([30, 70], 10_000),
    "three_equal": ([1, 1, 1], 50_000),
    "skewed": ([0.6, 0.3, 0.05, 0.05], 200_003),
    "many": (list(np.round(np.random.default_rng(4).random(10) * 100 + 1, 3)), 120_000),
    "small": ([0.2, 0.8], 37),
    "large": ([2.5, 1.0, 0.25], 1_000_000),
}
EXHAUSTIVE = {"exhaustive": [4000, 10_001, 777, 3]}
SPLITS = ["969,30,1", "99,1", "1,0,0", "0.9,0.05,0.05", "80,10,10", "1,1,1"]
SPLIT_STORE_DOCUMENTS = 1001


@pytest.fixture(scope="module")
def megatron(tmp_path_factory):
    jobs = MegatronJobs(tmp_path_factory.mktemp("megatron-blending"))
    for name, (weights, size) in BLENDS.items():
        jobs.add(name, "blending", weights=[float(w) for w in weights], size=size)
    for name, sizes in EXHAUSTIVE.items():
        jobs.add(name, "exhaustive_blending", sizes=sizes)
    lengths = np.full(SPLIT_STORE_DOCUMENTS, 9, dtype=np.int64)
    jobs.add(
        "store",
        "write_store",
        prefix="splits",
        dtype="uint16",
        tokens=jobs.array("tokens", np.ones(int(lengths.sum()), dtype=np.int64)),
        lengths=jobs.array("lengths", lengths),
    )
    for i, split in enumerate(SPLITS):
        jobs.add(f"split{i}", "split", prefix="splits", split=split, seed=1, seq_length=4)
    jobs.run()
    return jobs


@pytest.mark.megatron
@pytest.mark.parametrize("name", sorted(BLENDS))
def test_blending_indices_equal_megatron(megatron, name):
    weights, size = BLENDS[name]
    normalized = normalize_weights(weights)
    assert normalized.tolist() == megatron.results[name]["weights"]
    dataset_index, sample_index = build_blending_indices(normalized, size)
    np.testing.assert_array_equal(dataset_index, megatron.get(name, "dataset_index"))
    np.testing.assert_array_equal(sample_index, megatron.get(name, "dataset_sample_index"))


@pytest.mark.megatron
def test_exhaustive_blending_equals_megatron(megatron):
    dataset_index, sample_index = build_exhaustive_blending_indices(EXHAUSTIVE["exhaustive"])
    np.testing.assert_array_equal(dataset_index, megatron.get("exhaustive", "dataset_index"))
    np.testing.assert_array_equal(sample_index, megatron.get("exhaustive", "dataset_sample_index"))


@pytest.mark.megatron
@pytest.mark.parametrize("i", range(len(SPLITS)))
def test_split_ranges_equal_megatron_builder(megatron, i):
    theirs = megatron.results[f"split{i}"]["ranges"]
    ours = split_document_ranges(SPLITS[i], SPLIT_STORE_DOCUMENTS)
    assert [None if r is None else list(r) for r in ours] == theirs
