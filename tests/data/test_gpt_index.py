"""The GPT sample index: the seed's worked example, a step-by-step reference, and megatron-core itself."""

from __future__ import annotations

import numpy as np
import pytest

from tests.data.peers_megatron import MegatronJobs
from tokenmill.data import gpt_index
from tokenmill.data.gpt_index import (
    GPTIndexConfig,
    build_document_index,
    build_gpt_index,
    build_sample_index,
    plan_epochs,
)
from tokenmill.errors import ConfigError

SEED_SIZES = np.array([20, 50, 60, 30, 100, 5], dtype=np.int32)
SEED_TABLE = [[0, 0], [1, 10], [1, 40], [2, 20], [2, 50], [3, 20], [4, 20], [4, 50], [4, 80]]


def walk_sample_index(sizes, document_index, seq_length, total, drop_last=True, extra=1):
    """Sample index by walking the documents token budget by token budget, the way the seed describes it."""
    if drop_last:
        count = (total - extra) // seq_length
    else:
        count = int(np.ceil(np.float32(total - extra) / np.float32(seq_length)))
    rows = [[0, 0]]
    position, offset = 0, 0
    while len(rows) <= count:
        remaining = seq_length + extra
        while remaining:
            available = int(sizes[document_index[position]]) - offset
            remaining -= available
            if remaining <= 0:
                offset += remaining + available - extra
                remaining = 0
            elif position == len(document_index) - 1:
                offset = int(sizes[document_index[position]]) - extra
                break
            else:
                position, offset = position + 1, 0
        rows.append([position, offset])
    return np.array(rows, dtype=np.int64)


def test_seed_worked_example_gives_the_seed_table():
    # _build_sample_idx(sizes=[20,50,60,30,100,5], doc_idx=[0..5], seq_length=30, num_epochs=1, tokens=265)
    table = build_sample_index(SEED_SIZES, np.arange(6, dtype=np.int32), 30, 1, int(SEED_SIZES.sum()))
    assert table.tolist() == SEED_TABLE
    assert table.dtype == np.int32


def test_seed_example_rows_read_31_tokens_each_overlapping_by_one():
    table = build_sample_index(SEED_SIZES, np.arange(6, dtype=np.int32), 30, 1, 265)
    starts = np.concatenate([[0], np.cumsum(SEED_SIZES)])[table[:, 0]] + table[:, 1]
    assert np.all(np.diff(starts) == 30)  # sample k starts at token 30k; it reads 31 tokens (30 + extra)


@pytest.mark.parametrize("extra", [0, 1])
@pytest.mark.parametrize("drop_last", [True, False])
def test_closed_form_equals_the_document_walk(extra, drop_last):
    rng = np.random.default_rng(7)
    for trial in range(40):
        sizes = rng.integers(0, 40, size=int(rng.integers(1, 30))).astype(np.int32)
        sizes[0] = max(int(sizes[0]), 1) if trial % 3 else 0  # sometimes an empty first document
        if sizes.sum() < 3:
            continue
        epochs = int(rng.integers(1, 4))
        document_index = np.tile(np.arange(len(sizes), dtype=np.int32), epochs)
        rng.shuffle(document_index)
        length = int(rng.integers(2, 25))
        total = epochs * int(sizes.sum())
        per_epoch = int(sizes.sum())
        ours = build_sample_index(sizes, document_index, length, epochs, per_epoch, drop_last, bool(extra))
        walk = walk_sample_index(sizes, document_index, length, total, drop_last, extra)
        np.testing.assert_array_equal(ours, walk)


def test_chunked_construction_matches_one_chunk(monkeypatch):
    rng = np.random.default_rng(3)
    sizes = rng.integers(0, 300, size=5000).astype(np.int32)
    config = GPTIndexConfig(seq_length=64, seed=5, num_samples=40_000)
    whole = build_gpt_index(sizes, config)
    monkeypatch.setattr(gpt_index, "_CHUNK", 97)
    chunked = build_gpt_index(sizes, config)
    np.testing.assert_array_equal(whole.sample_index, chunked.sample_index)
    assert whole.plan.num_epochs > 1


def test_unpacked_route_for_huge_document_ids_gives_the_same_arrays(monkeypatch):
    # Ids of 2^31 and more cannot ride along the shuffle packed with their sizes; that route must agree.
    rng = np.random.default_rng(8)
    sizes = rng.integers(0, 200, size=3000).astype(np.int32)
    config = GPTIndexConfig(seq_length=50, seed=2, num_samples=20_000)
    packed = build_gpt_index(sizes, config)
    monkeypatch.setattr(gpt_index, "_packed_stream", lambda *args: None)
    plain = build_gpt_index(sizes, config)
    for name in ("document_index", "sample_index", "shuffle_index"):
        np.testing.assert_array_equal(getattr(packed, name), getattr(plain, name))
        assert getattr(packed, name).dtype == getattr(plain, name).dtype


def test_token_counts_past_two_to_the_31_stay_exact():
    sizes = np.array([2**30, 2**30 - 7, 2**30 + 13], dtype=np.int32)  # 3.2e9 tokens in one epoch
    document_index = np.array([2, 0, 1], dtype=np.int32)
    total = int(sizes.sum(dtype=np.int64))
    table = build_sample_index(sizes, document_index, 2**28, 1, total)
    np.testing.assert_array_equal(table, walk_sample_index(sizes, document_index, 2**28, total))
    stream_starts = np.concatenate([[0], np.cumsum(sizes[document_index], dtype=np.int64)])
    starts = stream_starts[table[:, 0]] + table[:, 1]
    assert starts[-1] == (len(table) - 1) * 2**28 > 2**31


def test_separate_final_epoch_shuffles_the_last_epoch_alone():
    sizes = np.full(100, 10, dtype=np.int32)  # 1000 tokens an epoch, 99 samples of 10 (+1 extra)
    config = GPTIndexConfig(seq_length=10, seed=1, num_samples=99 * 2 + 10)  # final epoch only ~10% used
    index = build_gpt_index(sizes, config)
    assert index.plan.num_epochs == 3 and index.plan.separate_final_epoch
    first, last = index.document_index[:200], index.document_index[200:]
    assert np.array_equal(np.bincount(first, minlength=100), np.full(100, 2))
    assert sorted(last.tolist()) == list(range(100))
    # The samples before the final epoch are shuffled among themselves, the rest after them.
    sans = index.plan.num_samples_sans_final_epoch
    assert sorted(index.shuffle_index[:sans].tolist()) == list(range(sans))
    assert index.shuffle_index[sans:].min() >= sans


def test_a_mostly_used_final_epoch_is_shuffled_with_the_others():
    # 1000 tokens an epoch; the third epoch supplies 90 of its 99 samples (>= 80%)
    plan = plan_epochs(1000, GPTIndexConfig(seq_length=10, num_samples=99 * 2 + 90))

    assert plan.num_epochs == 3 and not plan.separate_final_epoch


def test_num_epochs_gives_every_sample_of_those_epochs():
    sizes = np.arange(1, 50, dtype=np.int32)
    index = build_gpt_index(sizes, GPTIndexConfig(seq_length=16, num_epochs=3))
    assert len(index) == (3 * int(sizes.sum()) - 1) // 16
    assert np.array_equal(np.bincount(index.document_index), np.full(49, 3))


def test_document_index_is_the_same_permutation_as_numpy_shuffle():
    documents = np.arange(10, 30, dtype=np.int32)
    ours = build_document_index(documents, 2, np.random.RandomState(9), False)
    expected = np.tile(documents, 2)
    np.random.RandomState(9).shuffle(expected)
    np.testing.assert_array_equal(ours, expected)
    assert ours.dtype == np.int32


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seq_length": 1}, "at least 2"),
        ({"seq_length": 8, "num_samples": 5, "num_epochs": 2}, "not both"),
        ({"seq_length": 8, "seed": -1}, "seed"),
        ({"seq_length": 8, "num_epochs": 0}, "num_epochs"),
    ],
)
def test_bad_settings_name_the_setting(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        GPTIndexConfig(**kwargs)


def test_documents_without_tokens_or_out_of_range_are_errors():
    with pytest.raises(ConfigError, match="no tokens"):
        build_gpt_index(np.zeros(4, dtype=np.int32), GPTIndexConfig(seq_length=4))
    with pytest.raises(ConfigError, match="outside"):
        build_gpt_index(np.ones(4, dtype=np.int32), GPTIndexConfig(seq_length=4), documents=np.array([1, 9]))


# ---------------------------------------------------------------- megatron-core as the oracle

CASES = {
    # id: (GPTIndexConfig kwargs, document range or None)
    "one_epoch": ({"seq_length": 32, "seed": 1234}, None),
    "separate_final": ({"seq_length": 32, "seed": 7, "num_samples": 2 * 1700 + 40}, None),
    "joint_final": ({"seq_length": 32, "seed": 7, "num_samples": 2 * 1700 + 1400}, None),
    "no_extra_token": ({"seq_length": 48, "seed": 3, "num_samples": 3000, "add_extra_token": False}, None),
    "keep_partial": ({"seq_length": 50, "seed": 11, "drop_last_partial_sequence": False}, None),
    "keep_partial_no_extra": (
        {
            "seq_length": 50,
            "seed": 11,
            "num_samples": 1500,
            "drop_last_partial_sequence": False,
            "add_extra_token": False,
        },
        None,
    ),
    "document_range": ({"seq_length": 16, "seed": 99, "num_samples": 5000}, (100, 700)),
}


@pytest.fixture(scope="module")
def corpus_sizes():
    rng = np.random.default_rng(2024)
    sizes = np.minimum(rng.lognormal(3.5, 1.0, size=1000), 600).astype(np.int32)
    sizes[::97] = 0  # a few empty documents
    return sizes


@pytest.fixture(scope="module")
def megatron(tmp_path_factory, corpus_sizes):
    jobs = MegatronJobs(tmp_path_factory.mktemp("megatron-gpt-index"))
    tokens = np.arange(int(corpus_sizes.sum()), dtype=np.int64) % 1000
    jobs.add(
        "store",
        "write_store",
        prefix="corpus",
        dtype="uint16",
        tokens=jobs.array("tokens", tokens),
        lengths=jobs.array("lengths", corpus_sizes),
    )
    for case, (settings, documents) in CASES.items():
        params = {
            "seed": settings["seed"],
            "seq_length": settings["seq_length"],
            "num_samples": settings.get("num_samples"),
            "add_extra_token": settings.get("add_extra_token", True),
            "drop_last_partial_sequence": settings.get("drop_last_partial_sequence", True),
        }
        if documents is not None:
            params["documents"] = list(documents)
        jobs.add(case, "gpt_dataset", prefix="corpus", **params)
    rng = np.random.default_rng(5)
    for extra in (0, 1):
        for drop_last in (True, False):
            sizes = rng.integers(0, 90, size=400).astype(np.int32)
            document_index = np.tile(np.arange(400, dtype=np.int32), 2)
            rng.shuffle(document_index)
            jobs.add(
                f"helper_{extra}_{int(drop_last)}",
                "sample_idx",
                sizes=jobs.array(f"sizes_{extra}_{int(drop_last)}", sizes),
                document_index=jobs.array(f"docs_{extra}_{int(drop_last)}", document_index),
                seq_length=37,
                num_epochs=2,
                tokens_per_epoch=int(sizes.sum()),
                drop_last_partial_sequence=drop_last,
                add_extra_token=bool(extra),
            )
    jobs.run()
    return jobs


@pytest.mark.megatron
@pytest.mark.parametrize("case", sorted(CASES))
def test_three_arrays_equal_megatron_gpt_dataset(megatron, corpus_sizes, case):
    settings, documents = CASES[case]
    selected = None if documents is None else np.arange(*documents, dtype=np.int32)
    ours = build_gpt_index(corpus_sizes, GPTIndexConfig(**settings), documents=selected)
    for name in ("document_index", "sample_index", "shuffle_index"):
        theirs = megatron.get(case, name)
        np.testing.assert_array_equal(getattr(ours, name), theirs, err_msg=f"{case}: {name}")
        assert getattr(ours, name).dtype == theirs.dtype, f"{case}: {name} dtype"
    assert len(ours) == megatron.results[case]["length"]


def test_cases_cover_both_final_epoch_rules(corpus_sizes):
    plans = {
        case: plan_epochs(int(corpus_sizes.sum()), GPTIndexConfig(**settings))
        for case, (settings, documents) in CASES.items()
        if documents is None
    }
    assert plans["separate_final"].separate_final_epoch and plans["separate_final"].num_epochs == 3
    assert not plans["joint_final"].separate_final_epoch and plans["joint_final"].num_epochs == 3


@pytest.mark.megatron
@pytest.mark.parametrize("extra", [0, 1])
@pytest.mark.parametrize("drop_last", [True, False])
def test_sample_index_equals_megatron_cpp_helper(megatron, extra, drop_last):
    job = f"helper_{extra}_{int(drop_last)}"
    sizes = np.load(megatron.workdir / f"input.sizes_{extra}_{int(drop_last)}.npy")
    document_index = np.load(megatron.workdir / f"input.docs_{extra}_{int(drop_last)}.npy")
    ours = build_sample_index(sizes, document_index, 37, 2, int(sizes.sum()), drop_last, bool(extra))
    np.testing.assert_array_equal(ours, megatron.get(job, "sample_index"))
