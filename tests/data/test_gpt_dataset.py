"""Packed LM samples: windows of the epoch stream, document boundaries, masks, caching, megatron-core equality."""

from __future__ import annotations

import numpy as np
import pytest

from tests.data.peers_megatron import MegatronJobs
from tokenmill.data import gpt_dataset
from tokenmill.data.gpt_dataset import GPTDataset, GPTDatasetConfig
from tokenmill.errors import ConfigError
from tokenmill.store import IndexedDataset, IndexedWriter

EOD = 1


def make_documents(count: int, seed: int, eod: bool = True) -> list[np.ndarray]:
    """Documents of varied lengths with recognisable ids (doc d, token j -> 2 + (31 d + j) % 997), EOD-ended."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(rng.lognormal(2.8, 1.0, size=count).astype(int), 300)
    lengths[::13] = 0  # some empty documents
    docs = []
    for d, n in enumerate(lengths):
        body = 2 + (31 * d + np.arange(n)) % 997
        docs.append(np.append(body, EOD) if eod else body)
    return docs


def write_store(prefix, documents) -> IndexedDataset:
    with IndexedWriter(prefix, layout="megatron", dtype=np.uint16) as writer:
        for doc in documents:
            writer.add_item(doc)
            writer.end_document()
    return IndexedDataset(prefix)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    documents = make_documents(300, seed=1)
    return write_store(tmp_path_factory.mktemp("corpus") / "docs", documents), documents


def stream_of(dataset: GPTDataset, documents) -> tuple[np.ndarray, np.ndarray]:
    """All epochs' tokens in document-index order, and where each document position starts."""
    ordered = [documents[d] for d in np.asarray(dataset.document_index)]
    starts = np.concatenate([[0], np.cumsum([len(doc) for doc in ordered])])
    return np.concatenate(ordered).astype(np.int64), starts


@pytest.fixture(params=["gather", "slices"])
def read_by(request, monkeypatch):
    """Both ways rows are read: one gather of every token, or one slice of the map per piece."""
    if request.param == "slices":
        monkeypatch.setattr(gpt_dataset, "SLICE_COPY_MIN_PIECE", 0)
    else:
        monkeypatch.setattr(gpt_dataset, "SLICE_COPY_MIN_PIECE", 1 << 40)
    return request.param


@pytest.mark.parametrize("extra", [True, False])
def test_every_sample_is_a_window_of_the_shuffled_epoch_stream(corpus, extra, read_by):
    store, documents = corpus
    config = GPTDatasetConfig(seq_length=64, seed=3, num_samples=900, add_extra_token=extra)
    dataset = GPTDataset(store, config)
    stream, _ = stream_of(dataset, documents)
    batch = dataset.get_batch(np.arange(len(dataset)))
    rows = np.asarray(dataset.shuffle_index, dtype=np.int64)
    for i in range(len(dataset)):
        window = stream[rows[i] * 64 : rows[i] * 64 + 64 + extra]  # sample r starts at token r * seq_length
        np.testing.assert_array_equal(batch["tokens"][i], window[:64])
        if extra:
            np.testing.assert_array_equal(batch["labels"][i], window[1:])
        else:
            np.testing.assert_array_equal(batch["labels"][i][:-1], window[1:])
    assert batch["tokens"].dtype == np.int64 and batch["loss_mask"].dtype == np.float32


def test_cu_seqlens_mark_every_document_start_inside_each_row(corpus):
    store, documents = corpus
    dataset = GPTDataset(store, GPTDatasetConfig(seq_length=48, seed=5))
    _, starts = stream_of(dataset, documents)
    ids = np.arange(0, len(dataset), 7)
    batch = dataset.get_batch(ids)
    expected = []
    for b, row in enumerate(np.asarray(dataset.shuffle_index)[ids].astype(np.int64)):
        inside = starts[(starts > row * 48) & (starts < row * 48 + 48)] - row * 48
        expected.extend([b * 48, *sorted(set((inside + b * 48).tolist()))])
    expected.append(len(ids) * 48)
    assert batch["cu_seqlens"].tolist() == expected
    assert batch["cu_seqlens"].dtype == np.int32
    assert batch["max_seqlen"] == int(np.diff(batch["cu_seqlens"]).max())


def test_document_and_eod_boundaries_agree_when_documents_end_in_eod(corpus):
    store, _ = corpus
    common = {"seq_length": 40, "seed": 9, "reset_position_ids": True, "eod_id": EOD}
    by_documents = GPTDataset(store, GPTDatasetConfig(**common, boundaries="documents"))
    by_eod = GPTDataset(store, GPTDatasetConfig(**common, boundaries="eod"))
    ids = np.arange(len(by_eod))
    a, b = by_documents.get_batch(ids), by_eod.get_batch(ids)
    np.testing.assert_array_equal(a["position_ids"], b["position_ids"])
    np.testing.assert_array_equal(a["cu_seqlens"], b["cu_seqlens"])
    # positions restart right after every EOD input token
    after_eod = np.zeros_like(a["tokens"], dtype=bool)
    after_eod[:, 1:] = a["tokens"][:, :-1] == EOD
    assert np.all(a["position_ids"][after_eod] == 0)


def test_boundaries_without_eod_tokens_come_from_the_index(tmp_path):
    documents = make_documents(50, seed=4, eod=False)
    store = write_store(tmp_path / "plain", documents)
    dataset = GPTDataset(store, GPTDatasetConfig(seq_length=32, seed=1, reset_position_ids=True))
    _, starts = stream_of(dataset, documents)
    sample = dataset[0]
    row = int(dataset.shuffle_index[0])
    inside = starts[(starts > row * 32) & (starts < row * 32 + 32)] - row * 32
    assert sample["cu_seqlens"].tolist() == [0, *sorted(set(inside.tolist())), 32]
    for begin, end in zip(sample["cu_seqlens"][:-1], sample["cu_seqlens"][1:], strict=True):
        assert sample["position_ids"][begin:end].tolist() == list(range(end - begin))


def test_eod_inputs_can_be_masked_out_of_the_loss(corpus):
    store, _ = corpus
    dataset = GPTDataset(store, GPTDatasetConfig(seq_length=40, seed=2, eod_id=EOD, eod_mask_loss=True))
    batch = dataset.get_batch(np.arange(len(dataset)))
    assert np.all(batch["loss_mask"][batch["tokens"] == EOD] == 0)
    assert np.all(batch["loss_mask"][batch["tokens"] != EOD] == 1)


def test_a_kept_partial_last_sample_is_padded_and_its_padding_masked(corpus):
    store, documents = corpus
    config = GPTDatasetConfig(seq_length=50, seed=8, drop_last_partial_sequence=False, pad_id=0)
    dataset = GPTDataset(store, config)
    stream, _ = stream_of(dataset, documents)
    last_row = len(dataset) - 1
    i = int(np.flatnonzero(np.asarray(dataset.shuffle_index) == last_row)[0])
    sample = dataset[i]
    tail = stream[last_row * 50 :]
    assert 0 < len(tail) < 51
    np.testing.assert_array_equal(sample["tokens"][: len(tail)], tail[:50])
    assert np.all(sample["tokens"][len(tail) :] == 0) and np.all(sample["labels"][len(tail) - 1 :] == 0)
    assert sample["loss_mask"].tolist() == [1.0] * (len(tail) - 1) + [0.0] * (50 - len(tail) + 1)


def test_batch_rows_equal_single_samples(corpus, read_by):
    store, _ = corpus
    dataset = GPTDataset(store, GPTDatasetConfig(seq_length=30, seed=4, reset_position_ids=True))
    ids = [5, 0, 17, 5, len(dataset) - 1, -1]
    batch = dataset.get_batch(ids)
    for b, i in enumerate(ids):
        one = dataset[i]
        for key in ("tokens", "labels", "loss_mask", "position_ids"):
            np.testing.assert_array_equal(batch[key][b], one[key])
        row = batch["cu_seqlens"][(batch["cu_seqlens"] >= b * 30) & (batch["cu_seqlens"] <= (b + 1) * 30)]
        np.testing.assert_array_equal(row - b * 30, one["cu_seqlens"])


def test_an_empty_batch_has_empty_rows(corpus, read_by):
    store, _ = corpus
    batch = GPTDataset(store, GPTDatasetConfig(seq_length=30, seed=4)).get_batch([])
    assert batch["tokens"].shape == batch["labels"].shape == (0, 30)
    assert batch["cu_seqlens"].tolist() == [0] and batch["max_seqlen"] == 0


def test_cached_index_is_built_once_and_memory_mapped(corpus, tmp_path):
    store, _ = corpus
    config = GPTDatasetConfig(seq_length=32, seed=6, num_samples=1000)
    first = GPTDataset(store, config, cache=tmp_path)
    again = GPTDataset(store, config, cache=tmp_path)
    assert first.cache_path == again.cache_path
    assert isinstance(again.sample_index.base, np.memmap)
    np.testing.assert_array_equal(first.get_batch(range(50))["tokens"], again.get_batch(range(50))["tokens"])
    in_memory = GPTDataset(store, config)
    np.testing.assert_array_equal(in_memory.shuffle_index, again.shuffle_index)
    # any index setting, the document selection or the data itself gives another entry
    others = [
        GPTDataset(store, GPTDatasetConfig(seq_length=32, seed=7, num_samples=1000), cache=tmp_path),
        GPTDataset(store, GPTDatasetConfig(seq_length=32, seed=6, num_samples=1001), cache=tmp_path),
        GPTDataset(
            store, GPTDatasetConfig(seq_length=32, seed=6, num_samples=1000, add_extra_token=False), cache=tmp_path
        ),
        GPTDataset(store, config, documents=(0, 200), cache=tmp_path),
        GPTDataset(write_store(tmp_path / "other", make_documents(300, seed=2)), config, cache=tmp_path),
    ]
    assert len({first.cache_path, *(other.cache_path for other in others)}) == 6
    # settings that only shape the outputs share the index entry
    masked = GPTDatasetConfig(seq_length=32, seed=6, num_samples=1000, eod_id=EOD, eod_mask_loss=True)
    assert GPTDataset(store, masked, cache=tmp_path).cache_path == first.cache_path


def test_split_strings_select_document_ranges(corpus):
    store, _ = corpus
    config = GPTDatasetConfig(seq_length=16, seed=1)
    train = GPTDataset.for_split(store, config, "90,10", "train")
    valid = GPTDataset.for_split(store, config, "90,10", "valid")
    assert set(np.unique(train.document_index)) <= set(range(270))
    assert set(np.unique(valid.document_index)) <= set(range(270, 300))
    assert GPTDataset.for_split(store, config, "90,10", "test") is None
    with pytest.raises(ConfigError, match="split name"):
        GPTDataset.for_split(store, config, "90,10", "dev")


def test_bad_settings_and_indices_are_clear_errors(corpus):
    store, _ = corpus
    with pytest.raises(ConfigError, match="eod_id"):
        GPTDatasetConfig(seq_length=8, eod_mask_loss=True)
    with pytest.raises(ConfigError, match="boundaries"):
        GPTDatasetConfig(seq_length=8, boundaries="sentences")
    with pytest.raises(ConfigError, match="document range"):
        GPTDataset(store, GPTDatasetConfig(seq_length=8), documents=(10, 5000))
    dataset = GPTDataset(store, GPTDatasetConfig(seq_length=8))
    with pytest.raises(IndexError, match="out of range"):
        dataset.get_batch([len(dataset)])


# ---------------------------------------------------------------- megatron-core as the oracle

MEGATRON_CASES = {
    # our settings; Megatron gets the same through the oracle job
    "masks": {"seq_length": 64, "seed": 21, "num_samples": 700, "reset_position_ids": True, "eod_mask_loss": True},
    "no_extra": {"seq_length": 64, "seed": 22, "add_extra_token": False, "reset_position_ids": True},
    "partial": {
        "seq_length": 70,
        "seed": 23,
        "drop_last_partial_sequence": False,
        "reset_position_ids": True,
        "eod_mask_loss": True,
    },
    "partial_eod": {
        "seq_length": 70,
        "seed": 23,
        "drop_last_partial_sequence": False,
        "reset_position_ids": True,
        "boundaries": "eod",
    },
    "plain": {"seq_length": 33, "seed": 24, "num_samples": 2000},
}


@pytest.fixture(scope="module")
def megatron(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("megatron-gpt-dataset")
    store = write_store(workdir / "ours", make_documents(400, seed=11))  # Megatron reads our store
    jobs = MegatronJobs(workdir)
    ours = {}
    for case, settings in MEGATRON_CASES.items():
        dataset = GPTDataset(store, GPTDatasetConfig(**settings, eod_id=EOD))
        last_row = int(np.flatnonzero(np.asarray(dataset.shuffle_index) == len(dataset) - 1)[0])
        ids = sorted({0, 1, 2, 10, len(dataset) // 2, len(dataset) - 1, last_row})
        ours[case] = (dataset, ids)
        jobs.add(case, "gpt_dataset", prefix="ours", eod=EOD, vocab_size=1000, samples=ids, **settings)
    jobs.run()
    return jobs, ours


@pytest.mark.megatron
@pytest.mark.parametrize("case", sorted(MEGATRON_CASES))
def test_samples_equal_megatron_gpt_dataset(megatron, case):
    jobs, ours = megatron
    dataset, ids = ours[case]
    assert len(dataset) == jobs.results[case]["length"]
    batch = dataset.get_batch(ids)
    for key in ("tokens", "labels", "loss_mask", "position_ids"):
        np.testing.assert_array_equal(batch[key], jobs.get(case, key), err_msg=f"{case}: {key}")
