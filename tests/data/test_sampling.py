"""Multilingual sampling plan: probabilities, virtual size, per-epoch counts and ids, slices; fairseq as oracle."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.peers import run_peer
from tokenmill.data import sampling
from tokenmill.data.sampling import SamplingConfig, SamplingPlan
from tokenmill.errors import ConfigError

NAMES = ["eng-tur", "eng-deu", "eng-swh", "eng-zul", "eng-fao"]
SIZES = [60_000, 25_000, 4_000, 900, 100]  # 600x between the largest and the smallest


def plan(sizes=SIZES, names=None, **settings) -> SamplingPlan:
    if names is None:
        names = NAMES if len(sizes) == len(NAMES) else [f"d{i}" for i in range(len(sizes))]
    return SamplingPlan.build(names, sizes, SamplingConfig(**settings))


def dataset_of(p: SamplingPlan, ids: np.ndarray) -> np.ndarray:
    """Which dataset each global id belongs to."""
    return np.searchsorted(p.offsets, ids, side="right") - 1


def fairseq_virtual_size(sizes, ratios, cap=1.5):
    """fairseq's default_virtual_size_func written out in plain Python (sum left to right)."""
    largest = max(range(len(sizes)), key=lambda i: (sizes[i], -i))
    scaled = sum((r / ratios[largest]) * sizes[largest] for r in ratios)
    return int(min(scaled, sum(sizes) * cap))


# ------------------------------------------------------------------ probabilities and virtual size


@pytest.mark.parametrize("temperature", [1, 2, 5])
def test_probabilities_are_sizes_to_the_power_one_over_t(temperature):
    p = plan(temperature=temperature)
    expected = np.array(SIZES, dtype=float) ** (1 / temperature)
    np.testing.assert_allclose(p.probabilities, expected / expected.sum(), rtol=1e-13)
    assert p.probabilities.sum() == pytest.approx(1.0, abs=1e-15)


def test_temperature_one_is_proportional_and_a_large_temperature_nears_uniform():
    np.testing.assert_allclose(plan(temperature=1).probabilities, np.array(SIZES) / sum(SIZES), rtol=1e-13)
    assert np.ptp(plan(temperature=1000).probabilities) < 0.002


def test_default_virtual_size_is_fairseqs_rule():
    # T = 2: the scaled sizes sum to less than 1.5 x total, so no cap
    p = plan(temperature=2)
    ratios = [(n / sum(SIZES)) ** 0.5 for n in SIZES]
    assert p.virtual_size == fairseq_virtual_size(SIZES, ratios) < 1.5 * sum(SIZES)
    # T = 5 upsamples the small directions so much that the 1.5 x total cap applies
    assert plan(temperature=5).virtual_size == int(1.5 * sum(SIZES))
    assert plan(temperature=5, max_virtual_ratio=2.0).virtual_size == 2 * sum(SIZES)
    # proportional: about the total (fairseq truncates, so it can be one less)
    assert sum(SIZES) - 1 <= plan(temperature=1).virtual_size <= sum(SIZES)
    assert plan(temperature=5, virtual_size=12_345).virtual_size == 12_345


def test_weights_are_normalized_and_the_virtual_size_scales_from_the_largest_dataset():
    weights = {"eng-tur": 1, "eng-deu": 1, "eng-swh": 2, "eng-zul": 0.5, "eng-fao": 0}
    p = plan(weights=weights)
    np.testing.assert_allclose(p.probabilities, np.array([1, 1, 2, 0.5, 0]) / 4.5)
    ratios = list(weights.values())
    assert p.virtual_size == fairseq_virtual_size(SIZES, ratios)
    assert p.virtual_counts(1)[-1] == 0
    # the largest dataset left out: fairseq's sum is infinite, so the cap applies
    assert plan(weights={**weights, "eng-tur": 0}).virtual_size == int(1.5 * sum(SIZES))


# ------------------------------------------------------------------ counts per epoch


@pytest.mark.parametrize(
    "settings",
    [
        {"temperature": 1},
        {"temperature": 2},
        {"temperature": 5},
        {"weights": dict(zip(NAMES, [3, 1, 1, 1, 1], strict=True))},
    ],
)
def test_sampled_proportions_match_p_times_v(settings):
    p = plan(**settings)
    ids = p.sample(1)
    assert len(ids) == p.virtual_size == p.num_items(1)
    got = np.bincount(dataset_of(p, ids), minlength=len(NAMES))
    expected = p.probabilities * p.virtual_size
    sigma = np.sqrt(p.virtual_size * p.probabilities * (1 - p.probabilities))
    assert np.all(np.abs(got - expected) <= 5 * sigma + 1)  # the binomial bound
    assert np.all(np.abs(got - expected) < 1)  # what the apportioning actually guarantees
    np.testing.assert_array_equal(got, p.counts(1))


def test_counts_average_to_exactly_p_times_v_over_epochs():
    p = plan(sizes=[7, 5, 3], temperature=3, virtual_size=10)
    expected = p.expected_counts()  # fractional: each count is floor or ceil of it
    counts = np.array([p.counts(e) for e in range(1, 4001)])
    assert set(np.unique(counts - np.floor(expected)[None, :]).tolist()) <= {0, 1}
    assert np.all(counts.sum(axis=1) == 10)
    fractions = expected - np.floor(expected)
    sigma = np.sqrt(fractions * (1 - fractions) / len(counts))
    assert np.all(np.abs(counts.mean(axis=0) - expected) <= 5 * sigma)


def test_apportion_sums_exactly_whatever_the_rounding():
    rng = np.random.default_rng(0)
    for _ in range(200):
        p = rng.dirichlet(np.full(rng.integers(1, 50), 0.3))
        total = int(rng.integers(1, 10**9))
        counts = sampling.apportion(p * total, total, rng)
        assert counts.sum() == total and np.all(np.abs(counts - p * total) < 1 + 1e-6)


# ------------------------------------------------------------------ ids per epoch


def test_sample_is_deterministic_per_seed_and_epoch_and_changes_with_either():
    p = plan(temperature=5)
    first = p.sample(1)
    np.testing.assert_array_equal(first, plan(temperature=5).sample(1))
    assert not np.array_equal(first, p.sample(2))
    assert not np.array_equal(first, plan(temperature=5, seed=2).sample(1))
    assert first.dtype == np.int64


def test_ids_are_grouped_by_dataset_and_stay_inside_it():
    p = plan(temperature=5)
    ids = p.sample(3)
    owner = dataset_of(p, ids)
    assert np.all(np.diff(owner) >= 0)
    assert ids.min() >= 0 and ids.max() < p.offsets[-1]


def test_no_duplicates_within_a_dataset_when_it_is_not_upsampled():
    p = plan(temperature=2)
    ids = p.sample(1)
    owner = dataset_of(p, ids)
    counts = p.counts(1)
    for i in np.flatnonzero(counts <= p.sizes):
        assert len(np.unique(ids[owner == i])) == counts[i]


def test_upsampled_datasets_use_every_item_floor_or_ceil_times_with_copies():
    p = plan(temperature=5)
    ids = p.sample(1)
    counts = p.counts(1)
    small = len(NAMES) - 1  # 100 items, sampled thousands of times
    assert counts[small] > 10 * p.sizes[small]
    uses = np.bincount(ids[dataset_of(p, ids) == small] - p.offsets[small], minlength=p.sizes[small])
    assert set(np.unique(uses).tolist()) <= {counts[small] // 100, counts[small] // 100 + 1}


def test_replacement_mode_draws_independently_like_fairseq():
    p = plan(temperature=5, upsample="replacement")
    ids = p.sample(1)
    small = len(NAMES) - 1
    uses = np.bincount(ids[dataset_of(p, ids) == small] - p.offsets[small], minlength=100)
    assert uses.sum() == p.counts(1)[small] and np.ptp(uses) > 1  # multinomial spread, not equal copies


@pytest.mark.parametrize("size,count", [(1000, 40), (1000, 300), (1000, 800), (1000, 1000)])
def test_subsets_without_replacement_are_uniform(size, count):
    # sparse (sort and top up), dense (mask), complement mask, everything
    hits = np.zeros(size, dtype=np.int64)
    trials = 1500
    rng = np.random.default_rng(7)
    out = np.empty(count, dtype=np.int64)
    for _ in range(trials):
        sampling._fill_without_replacement(out, size, rng)
        assert len(np.unique(out)) == count and out.min() >= 0 and out.max() < size
        hits[out] += 1
    q = count / size
    assert np.all(np.abs(hits - trials * q) <= 5 * np.sqrt(trials * q * (1 - q)) + 1e-9)


def test_a_large_sparse_draw_has_no_duplicates():
    out = np.empty(200_000, dtype=np.int64)
    sampling._fill_without_replacement(out, 50_000_000, np.random.default_rng(3))
    assert len(np.unique(out)) == len(out) and out.max() < 50_000_000


# ------------------------------------------------------------------ concat mode


def test_upsample_primary_repeats_dataset_zero_and_takes_the_others_once():
    p = plan(sizes=[4, 3, 2], upsample_primary=3)
    assert p.virtual_size == 4 * 3 + 3 + 2
    np.testing.assert_array_equal(p.counts(1), [12, 3, 2])
    assert p.sample(1).tolist() == [0, 1, 2, 3] * 3 + [4, 5, 6, 7, 8]
    np.testing.assert_array_equal(p.sample(5), p.sample(1))  # no randomness
    np.testing.assert_allclose(p.expected_counts(), [12, 3, 2])


# ------------------------------------------------------------------ virtual-epoch slices


def test_slices_partition_each_virtual_epoch_exactly():
    p = plan(temperature=5, virtual_epoch_size=40_000)
    v, k = p.virtual_size, p.num_slices
    assert k == -(-v // 40_000) == 4
    mapping = [(1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1), (2, 2), (2, 3), (3, 0)]
    assert [p.virtual_epoch(e) for e in range(1, 10)] == mapping
    sizes = [p.num_items(e) for e in range(1, k + 1)]
    assert sizes == [40_000] * (k - 1) + [v - (k - 1) * 40_000]  # the last slice holds the rest
    for big in (1, 2):
        slices = [p.sample((big - 1) * k + j + 1) for j in range(k)]
        assert [len(s) for s in slices] == sizes
        whole = np.concatenate(slices)
        np.testing.assert_array_equal(np.sort(whole), np.sort(p.sample_virtual(big)))
        counts = sum(p.counts((big - 1) * k + j + 1) for j in range(k))
        np.testing.assert_array_equal(counts, p.virtual_counts(big))


def test_each_slice_is_a_random_mix_of_the_datasets():
    p = plan(temperature=5, virtual_epoch_size=40_000)
    share = p.virtual_counts(1) / p.virtual_size
    for epoch in range(1, p.num_slices + 1):
        n = p.num_items(epoch)
        got = p.counts(epoch)
        assert np.all(np.abs(got - n * share) <= 5 * np.sqrt(n * share * (1 - share)) + 1)


def test_slice_labels_put_every_position_in_every_slice_equally_often():
    total, size, trials = 10, 4, 3000  # slices of 4, 4 and 2
    seen = np.zeros((total, 3), dtype=np.int64)
    for t in range(trials):
        labels = sampling.slice_labels(total, size, np.random.default_rng(t))
        np.testing.assert_array_equal(np.bincount(labels, minlength=3), [4, 4, 2])
        seen[np.arange(total), labels] += 1
    q = np.array([0.4, 0.4, 0.2])
    assert np.all(np.abs(seen - trials * q) <= 5 * np.sqrt(trials * q * (1 - q)))


def test_a_slice_size_above_the_virtual_size_means_one_slice():
    p = plan(temperature=2, virtual_epoch_size=10**9)
    assert p.num_slices == 1 and p.num_items(7) == p.virtual_size


# ------------------------------------------------------------------ reports


def test_table_shows_size_weight_expected_samples_and_epochs_over_data():
    p = plan(temperature=5)
    text = p.table()
    lines = text.splitlines()
    assert lines[0].startswith("sampling: temperature 5; virtual epoch 135,000 items")
    assert lines[1].split() == ["dataset", "size", "weight", "prob", "expected/epoch", "epochs", "over", "data"]
    fao = next(line for line in lines if line.startswith("eng-fao")).split()
    expected = p.probabilities[-1] * p.virtual_size
    assert fao[1] == "100" and fao[4] == f"{expected:,.1f}" and fao[5] == f"{expected / 100:.3f}"
    assert lines[-1].split()[:2] == ["total", "90,000"] and lines[-1].split()[-1] == "1.500"


def test_to_dict_is_json_and_describes_every_dataset():
    p = plan(weights=dict(zip(NAMES, [3, 1, 1, 1, 1], strict=True)), virtual_epoch_size=10_000)
    summary = json.loads(json.dumps(p.to_dict()))
    assert summary["mode"] == "weights" and summary["virtual_size"] == p.virtual_size
    assert summary["num_slices"] == p.num_slices
    assert [d["name"] for d in summary["datasets"]] == NAMES
    assert summary["datasets"][0]["weight"] == 3.0
    assert summary["config"]["weights"]["eng-tur"] == 3.0


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "settings,message",
    [
        ({"temperature": 0}, "temperature must be a finite number > 0"),
        ({"temperature": -1.5}, "temperature must be a finite number > 0"),
        ({"temperature": float("nan")}, "temperature must be a finite number > 0"),
        ({"weights": dict.fromkeys(NAMES, 0)}, "weights sum to 0"),
        ({"weights": {**dict.fromkeys(NAMES, 1), "eng-tur": -1}}, "weight of 'eng-tur' must be finite and >= 0"),
        ({"weights": {**dict.fromkeys(NAMES, 1), "eng-xho": 1}}, "unknown dataset(s) eng-xho"),
        ({"weights": dict.fromkeys(NAMES[:3], 1)}, "no sampling weight for dataset(s) eng-zul, eng-fao"),
        ({"upsample_primary": 2, "weights": dict.fromkeys(NAMES, 1)}, "cannot be combined with weights"),
        ({"upsample_primary": 2, "temperature": 5}, "cannot be combined with temperature 5"),
        ({"upsample_primary": 0}, "upsample_primary must be a whole number >= 1"),
        ({"virtual_size": 0}, "virtual_size must be a whole number >= 1"),
        ({"virtual_epoch_size": 2.5}, "virtual_epoch_size must be a whole number >= 1"),
        ({"max_virtual_ratio": 0}, "max_virtual_ratio must be a finite number > 0"),
        ({"upsample": "tile"}, "upsample must be 'copies' or 'replacement'"),
    ],
)
def test_bad_settings_name_the_problem_and_the_fix(settings, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plan(**settings)


def test_an_empty_dataset_with_a_weight_is_an_error_naming_it():
    sizes = [*SIZES[:-1], 0]
    with pytest.raises(ConfigError, match="'eng-fao' has no items but sampling weight 1"):
        plan(sizes=sizes, weights=dict.fromkeys(NAMES, 1))
    assert plan(sizes=sizes, weights={**dict.fromkeys(NAMES, 1), "eng-fao": 0}).virtual_counts(1)[-1] == 0
    assert plan(sizes=sizes, temperature=5).probabilities[-1] == 0  # 0 ** (1/T): an empty direction gets nothing


@pytest.mark.parametrize(
    "names,sizes,message",
    [
        ([], [], "no datasets"),
        (["a", "a"], [1, 2], "unique; repeated: a"),
        (["a", "b"], [1], "give one size per name"),
        (["a", "b"], [1, -2], "'b' has a negative size"),
        (["a", "b"], [0, 0], "all 2 datasets are empty"),
    ],
)
def test_bad_datasets(names, sizes, message):
    with pytest.raises(ConfigError, match=message):
        SamplingPlan.build(names, sizes, SamplingConfig())


def test_epochs_count_from_one():
    with pytest.raises(ConfigError, match="epochs count from 1"):
        plan().sample(0)


# ------------------------------------------------------------------ fairseq as oracle

FAIRSEQ_CODE = """
import numpy as np
from fairseq.data.multilingual.sampling_method import temperature_sampling
from fairseq.data.multilingual.sampled_multi_dataset import SampledMultiDataset, default_virtual_size_func

class Fake:
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n

out = []
for case in PAYLOAD:
    datasets = [Fake(n) for n in case["sizes"]]
    ratios = case["weights"] if case["weights"] is not None else temperature_sampling(case["sizes"], case["T"])
    ds = SampledMultiDataset(datasets, sampling_ratios=ratios, seed=1, epoch=1)
    r = np.array(ratios, dtype=np.float64)
    out.append({
        "probabilities": (r / r.sum()).tolist(),
        "virtual_size": int(default_virtual_size_func(datasets, ratios)),
        "len": len(ds),
        "counts": ds.virtual_size_per_dataset.tolist(),
    })
print("RESULT:" + json.dumps(out))
"""


@pytest.mark.fairseq
def test_probabilities_and_virtual_size_equal_fairseqs():
    rng = np.random.default_rng(11)
    cases = [{"sizes": SIZES, "T": t, "weights": None} for t in (1, 1.5, 2, 5)]
    cases += [{"sizes": rng.lognormal(9, 2, 40).astype(int).clip(1).tolist(), "T": t, "weights": None} for t in (1, 3)]
    cases.append({"sizes": SIZES, "T": 1, "weights": [1, 1, 2, 0.5, 0.25]})
    answers = run_peer("fairseq", FAIRSEQ_CODE, cases, timeout=300)
    for case, theirs in zip(cases, answers, strict=True):
        names = [f"d{i}" for i in range(len(case["sizes"]))]
        weights = None if case["weights"] is None else dict(zip(names, case["weights"], strict=True))
        ours = SamplingPlan.build(names, case["sizes"], SamplingConfig(temperature=case["T"], weights=weights))
        np.testing.assert_allclose(ours.probabilities, theirs["probabilities"], rtol=1e-14, atol=0)
        assert ours.virtual_size == theirs["virtual_size"] == theirs["len"]
        # fairseq spreads the remainder by a multinomial draw, we by the fractions: both near p * V
        expected = ours.expected_counts()
        assert np.all(np.abs(ours.counts(1) - expected) < 1)
        assert np.abs(np.array(theirs["counts"]) - expected).max() <= len(names)
