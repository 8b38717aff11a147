"""Packed translation pairs: rows within their caps, every pair once, T2T features, ranks and exact resume."""

from __future__ import annotations

import functools
import itertools
import json

import numpy as np
import pytest

from tests.batching.corpus import make_pair_dir, pair_lengths
from tests.peers import run_peer
from tokenmill.batching.packed_collate import collate_packed
from tokenmill.batching.packed_pairs import PackConfig, PackedPairPlanner
from tokenmill.batching.packed_rows import first_fit_decreasing, next_fit
from tokenmill.data.pairs import PairDataset, PairOptions
from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.loader import BatchIterator

CONFIG = PackConfig(max_length=48, max_tokens=48 * 6)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_pair_dir(tmp_path_factory.mktemp("packed") / "data", 400, seed=5)


@pytest.fixture(scope="module")
def dataset(data):
    return PairDataset.from_dir(data)


# ------------------------------------------------------------------------------ reference definitions
def next_fit_reference(src, tgt, cap_src, cap_tgt, max_segments):
    """T2T's stream packing, one pair at a time: close the row when the next pair does not fit."""
    ends, used_src, used_tgt, count = [], 0, 0, 0
    for i, (s, t) in enumerate(zip(src.tolist(), tgt.tolist(), strict=True)):
        if count and (used_src + s > cap_src or used_tgt + t > cap_tgt or count == max_segments):
            ends.append(i)
            used_src = used_tgt = count = 0
        used_src, used_tgt, count = used_src + s, used_tgt + t, count + 1
    return [*ends, len(src)]


def ffd_reference(ids, src, tgt, cap_src, cap_tgt, max_segments):
    """First-fit decreasing, one pair at a time, over the documented order."""
    order = np.lexsort((-src, -np.maximum(src, tgt), -(src + tgt)))
    rows = []
    for i in order.tolist():
        for row in rows:
            if row[0] + src[i] <= cap_src and row[1] + tgt[i] <= cap_tgt and len(row[2]) != max_segments:
                row[0] += src[i]
                row[1] += tgt[i]
                row[2].append(int(ids[i]))
                break
        else:
            rows.append([src[i], tgt[i], [int(ids[i])]])
    return [row[2] for row in rows]


def features_reference(dataset, batch, pad):
    """T2T's packed features built pair by pair (what collate_packed must equal)."""
    out = {}
    for which, key, width in (("source", "inputs", batch.src_width), ("target", "targets", batch.tgt_width)):
        tokens = np.full((batch.num_rows, width), pad)
        segmentation = np.zeros((batch.num_rows, width), dtype=np.int64)
        position = np.zeros((batch.num_rows, width), dtype=np.int64)
        prev = np.full((batch.num_rows, width), pad)
        for r, row in enumerate(batch.rows()):
            column = 0
            for segment, pair in enumerate(row.tolist(), start=1):
                sentence = dataset[pair][which].tolist()
                for p, token in enumerate(sentence):
                    tokens[r, column] = token
                    segmentation[r, column] = segment
                    position[r, column] = p
                    prev[r, column] = dataset.options.eos if p == 0 else sentence[p - 1]
                    column += 1
        out.update({key: tokens, f"{key}_segmentation": segmentation, f"{key}_position": position})
        if which == "target":
            out["prev_output_tokens"] = prev
    return out


# ------------------------------------------------------------------------------ packing rules
@pytest.mark.parametrize("seed", range(6))
def test_packers_equal_their_one_pair_at_a_time_definitions(seed):
    src, tgt = pair_lengths(1500, seed, top=60)
    max_segments = [None, 3, 8][seed % 3]
    assert next_fit(src, tgt, 64, 70, max_segments).tolist() == next_fit_reference(src, tgt, 64, 70, max_segments)
    ids = np.random.default_rng(seed).permutation(1500)
    order, ends = first_fit_decreasing(ids, src[ids], tgt[ids], 64, 70, max_segments)
    rows = [row.tolist() for row in np.split(order, ends[:-1])]
    assert rows == ffd_reference(ids, src[ids], tgt[ids], 64, 70, max_segments)


def test_t2t_example_rows():
    # T2T pack_dataset's docstring example: [8 7 1] + [2 3 4 1] and [4 1] + [5 6 1] share one row of 10
    assert next_fit(np.array([3, 4, 5]), np.array([2, 3, 9]), 10, 10).tolist() == [2, 3]


def test_ffd_fills_rows_better_than_greedy():
    src, tgt = pair_lengths(20000, 3)
    greedy_rows = len(next_fit(src, tgt, 128, 128))
    ffd_rows = len(first_fit_decreasing(np.arange(20000), src, tgt, 128, 128)[1])
    lower_bound = max(src.sum(), tgt.sum()) / 128
    assert lower_bound <= ffd_rows < greedy_rows
    assert ffd_rows < 1.03 * lower_bound  # within 3% of the fewest rows any packing could reach


# ------------------------------------------------------------------------------ epoch plans
def plan_pairs(plan) -> list[list[int]]:
    """Rows of every batch of every rank."""
    return [row.tolist() for r in range(plan.world_size) for batch in plan.rank_batches(r) for row in batch.rows()]


@pytest.mark.parametrize("strategy", ["ffd", "greedy"])
def test_every_kept_pair_once_and_rows_within_caps(dataset, strategy):
    config = PackConfig(max_src_length=40, max_tgt_length=44, max_tokens=400, strategy=strategy, max_segments=6)
    plan = PackedPairPlanner(dataset, config).plan(1)
    rows = plan_pairs(plan)
    src, tgt = dataset.src_sizes, dataset.tgt_sizes
    too_long = (src > 40) | (tgt > 44)
    assert sorted(itertools.chain(*rows)) == np.flatnonzero(~too_long).tolist()
    assert all(src[row].sum() <= 40 and tgt[row].sum() <= 44 and len(row) <= 6 for row in rows)
    stats = plan.stats
    assert stats.num_samples == int((~too_long).sum()) and stats.num_dropped == int(too_long.sum()) > 0
    assert sum(stats.dropped.values()) == stats.num_dropped
    assert stats.extra["rows"] == len(rows) and max(len(b.rows()) for b in plan.rank_batches(0)) == 400 // 44
    real = int(src[~too_long].sum() + tgt[~too_long].sum())
    assert stats.padding_fraction == pytest.approx(1 - real / (len(rows) * (40 + 44)))


def test_strict_names_the_over_long_pair(dataset):
    with pytest.raises(ConfigError, match="does not fit a packed row"):
        PackedPairPlanner(dataset, PackConfig(max_length=20, strict=True)).plan(1)


def test_length_filter_and_language_tokens_are_respected(data):
    options = PairOptions(prepend_src=7, prepend_tgt=8, max_source_positions=30)
    dataset = PairDataset.from_dir(data, options=options)
    plan = PackedPairPlanner(dataset, CONFIG).plan(1)
    rows = plan_pairs(plan)
    assert sorted(itertools.chain(*rows)) == np.flatnonzero(dataset.keep).tolist()
    assert plan.stats.dropped["source_too_long"] == dataset.filter_report.dropped["source_too_long"]
    batch = plan.indices(0, 0)
    features = collate_packed(dataset, batch)
    starts = features["inputs_position"] == 0
    assert (features["inputs"][starts & (features["inputs_segmentation"] > 0)] == 7).all()


def test_plans_are_deterministic_and_epochs_differ(dataset, tmp_path):
    first = PackedPairPlanner(dataset, CONFIG, world_size=2)
    again = PackedPairPlanner(dataset, CONFIG, world_size=2, cache=tmp_path)
    assert plan_pairs(first.plan(1)) == plan_pairs(again.plan(1))
    assert plan_pairs(again.plan(1)) == plan_pairs(
        PackedPairPlanner(dataset, CONFIG, world_size=2, cache=tmp_path).plan(1)
    )
    assert plan_pairs(first.plan(1)) != plan_pairs(first.plan(2))
    assert plan_pairs(first.plan(1)) != plan_pairs(
        PackedPairPlanner(dataset, PackConfig(max_length=48, max_tokens=288, seed=2), world_size=2).plan(1)
    )
    unshuffled = PackConfig(max_length=48, max_tokens=288, shuffle=False, strategy="greedy")
    plan = PackedPairPlanner(dataset, unshuffled).plan(3)
    assert (
        list(itertools.chain(*plan_pairs(plan)))
        == np.flatnonzero((dataset.src_sizes <= 48) & (dataset.tgt_sizes <= 48)).tolist()
    )


@pytest.mark.parametrize("world", range(1, 9))
def test_equal_steps_on_every_rank(dataset, world):
    for drop_last in (False, True):
        config = PackConfig(max_length=48, max_tokens=48 * 7, drop_last=drop_last)
        plan = PackedPairPlanner(dataset, config, world_size=world).plan(1)
        counts = [len(plan.rank_batches(r)) for r in range(world)]
        assert len(set(counts)) == 1 and counts[0] == plan.num_steps > 0
        seen = list(itertools.chain(*plan_pairs(plan)))
        assert len(seen) == len(set(seen)) == plan.stats.num_samples
        assert plan.stats.num_samples + plan.stats.num_dropped == len(dataset)
        if not drop_last:
            assert "drop_last_for_ranks" not in plan.stats.dropped


# ------------------------------------------------------------------------------ collate
@pytest.mark.parametrize("fixed_width", [True, False])
def test_collate_equals_the_pair_by_pair_features(dataset, fixed_width):
    config = PackConfig(max_length=48, max_tokens=288, fixed_width=fixed_width, pad_to_multiple=8)
    plan = PackedPairPlanner(dataset, config, world_size=2).plan(1)
    for step in (0, plan.num_steps - 1):
        batch = plan.indices(step, 1)
        features = collate_packed(dataset, batch, pad=0)
        expected = features_reference(dataset, batch, pad=0)
        for key, value in expected.items():
            assert features[key].dtype == np.int64
            np.testing.assert_array_equal(features[key], value, err_msg=key)
        widths = features["inputs"].shape[1], features["targets"].shape[1]
        assert widths == (48, 48) if fixed_width else all(w % 8 == 0 and w <= 48 for w in widths)
        assert features["nsentences"] == len(batch.ids) == int(features["segments"].sum())
        assert features["ntokens"] == int(dataset.tgt_sizes[batch.ids].sum())


# ------------------------------------------------------------------------------ the training iterator
def iterator(dataset, tmp_path, *, world=1, rank=0):
    planner = PackedPairPlanner(dataset, CONFIG, world_size=world, cache=tmp_path)
    return BatchIterator(
        dataset, planner=planner, rank=rank, world_size=world, collate=collate_packed, infinite=True, cache=tmp_path
    )


def test_resume_at_every_step_continues_the_same_stream(dataset, tmp_path):
    reference = iterator(dataset, tmp_path, world=3, rank=1)
    per_epoch = reference.num_steps(1)
    total = per_epoch * 2 + 2
    stream, states = [], []
    for batch in itertools.islice(reference, total):
        stream.append(batch["id"].tolist())
        states.append(json.loads(json.dumps(reference.state_dict())))
    assert states[per_epoch - 1]["epoch"] == 2 and states[per_epoch - 1]["step"] == 0
    for k, state in enumerate(states):
        resumed = iterator(dataset, tmp_path, world=3, rank=1)
        resumed.load_state_dict(state)
        rest = [b["id"].tolist() for b in itertools.islice(resumed, total - k - 1)]
        assert rest == stream[k + 1 :], f"resume after batch {k} diverged"


def test_resume_refuses_other_packing_settings(dataset, tmp_path):
    state = iterator(dataset, tmp_path).state_dict()
    other = PackedPairPlanner(dataset, PackConfig(max_length=64, max_tokens=288))
    with pytest.raises(TokenmillError, match="max_length: 48 -> 64"):  # the changed field is named
        BatchIterator(dataset, planner=other, collate=collate_packed, cache=tmp_path).load_state_dict(state)


def test_dataloader_workers_give_the_single_process_stream(dataset, tmp_path):
    torch = pytest.importorskip("torch")
    from tokenmill.loader.torch import StatefulLoader

    single = iterator(dataset, tmp_path)
    total = single.num_steps(1) + 2
    expected = [b["id"].tolist() for b in itertools.islice(single, total)]
    loader = StatefulLoader(iterator(dataset, tmp_path), num_workers=2)
    got = []
    for batch in itertools.islice(loader, total):
        assert batch["inputs_segmentation"].dtype == torch.int64
        got.append(batch["id"].tolist())
    assert got == expected


def test_collate_options_travel_with_partial(dataset, tmp_path):
    planner = PackedPairPlanner(dataset, CONFIG)
    batches = BatchIterator(dataset, planner=planner, collate=functools.partial(collate_packed, pad=0), cache=False)
    batch = next(iter(batches))
    assert (batch["inputs"][batch["inputs_segmentation"] == 0] == 0).all()


def test_bad_settings_are_clear_errors():
    with pytest.raises(ConfigError, match="strategy"):
        PackConfig(strategy="best")
    with pytest.raises(ConfigError, match="max_tokens=100 is smaller than one row"):
        PackConfig(max_length=256, max_tokens=100)
    with pytest.raises(ConfigError, match="rows_per_batch or max_tokens"):
        PackConfig(max_tokens=None)


# ------------------------------------------------------------------------------ Tensor2Tensor itself
T2T_PACK = """
import types
import tensorflow.compat.v1 as v1
if not hasattr(v1, "estimator"):  # T2T 1.15 reads tf.estimator at import; newer TF moved it out
    v1.estimator = types.SimpleNamespace(ModeKeys=types.SimpleNamespace(TRAIN="train", EVAL="eval", PREDICT="infer"))
from tensor2tensor.data_generators import generator_utils
examples = ({"inputs": s, "targets": t} for s, t in PAYLOAD["pairs"])
rows = generator_utils.pack_examples(examples, True, packed_length=PAYLOAD["length"], spacing=0, queue_size=1)
print("RESULT:" + json.dumps(list(rows)))
"""


@pytest.mark.t2t
def test_greedy_rows_equal_tensor2tensor_pack_examples(dataset):
    """T2T's pack_examples with one open row and no spacing is the greedy strategy: same rows, same features."""
    config = PackConfig(max_length=48, rows_per_batch=10_000, max_tokens=None, strategy="greedy", shuffle=False)
    plan = PackedPairPlanner(dataset, config).plan(1)
    batch = plan.indices(0, 0)
    assert plan.num_steps == 1
    pairs = [[dataset[i]["source"].tolist(), dataset[i]["target"].tolist()] for i in batch.ids.tolist()]
    rows = run_peer("t2t", T2T_PACK, {"pairs": pairs, "length": 48})
    features = collate_packed(dataset, batch, pad=0, prev_output_tokens=False)
    assert len(rows) == batch.num_rows
    for r, row in enumerate(rows):
        for key, value in row.items():
            np.testing.assert_array_equal(features[key][r, : len(value)], value, err_msg=f"row {r} {key}")
            assert not features[key][r, len(value) :].any()
