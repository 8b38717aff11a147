"""Multilingual training data: many directions in rotating shards, language tags, a sampled mix
batched by length across directions, exact resume over ranks and DataLoader workers.

The fixture writes an Open-NLLB-style ``data_bin`` the way ``tokenmill prepare`` lays it out:
``shard000/``..``shard002/`` with ``train.{src}-{tgt}.{lang}.bin/.idx`` (a big direction in three
shards, a middle one in two, a small one in shard000 only), ``valid.*`` in shard000, and one
shared ``dict.txt`` (+ ``dict.{lang}.txt`` copies) holding the ``__lang__`` tags.
"""

from __future__ import annotations

import itertools
import pickle
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.batching.corpus import VOCAB
from tests.data.multi_corpus import SHARDS, TAG, VALID, make_data_bin, write_direction
from tokenmill.batching.collate import collate_fairseq, collate_opennmt, pad_rows
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.multi_collate import MultiCollate
from tokenmill.batching.sampled import SampledPlanner
from tokenmill.data.multi_langtok import LangTokConfig
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import PairOptions
from tokenmill.data.sampling import SamplingConfig, temperature_probabilities
from tokenmill.errors import ConfigError, FormatError, TokenmillError
from tokenmill.loader import multilingual_batches

BATCHES = BatchConfig(max_tokens=200, required_batch_size_multiple=2)
SAMPLING = SamplingConfig(temperature=5.0, seed=3)  # upsamples the 12-pair direction


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory) -> Path:
    return make_data_bin(tmp_path_factory.mktemp("multi") / "data_bin")


@pytest.fixture(scope="module")
def dataset(data_bin) -> MultiPairDataset:
    return MultiPairDataset.from_dir(data_bin)


def plain_part(data_bin: Path, direction: str, shard: int) -> MultiPairDataset:
    """One direction's shard as stored, without tags (for expectations)."""
    return MultiPairDataset.from_dir(
        data_bin / f"shard{shard:03d}", directions=[direction], langtok=LangTokConfig(None, False)
    )


# ---------------------------------------------------------------- layout and language tags
def test_directions_and_shards_come_from_file_names(dataset):
    assert dataset.directions == sorted(SHARDS)
    assert [len(s) for s in dataset.shards] == [len(SHARDS[d]) for d in dataset.directions]
    assert [len(p) for p in dataset.parts] == [n for d in dataset.directions for n in SHARDS[d]]
    assert len(dataset) == sum(sum(s) for s in SHARDS.values())
    assert dataset.folders[dataset.directions.index("eng_Latn-tur_Latn")] == ["shard000", "shard001", "shard002"]


def test_language_tags_come_first_on_the_right_side(dataset, data_bin):
    plain = plain_part(data_bin, "eng_Latn-hin_Deva", 1)
    part = dataset.part_index("eng_Latn-hin_Deva", 1)
    for local in (0, 7, 49):
        item = dataset[int(dataset.offsets[part]) + local]
        raw = plain[local]
        assert item["direction"] == "eng_Latn-hin_Deva"
        assert item["source"].tolist() == [TAG["eng_Latn"], *raw["source"].tolist()]  # NLLB: source-language tag
        assert item["target"].tolist() == [TAG["hin_Deva"], *raw["target"].tolist()]  # decoder: target-language tag


def test_encoder_tag_of_the_target_language_and_no_tags(data_bin):
    tgt_tag = MultiPairDataset.from_dir(data_bin, langtok=LangTokConfig(encoder_langtok="tgt", decoder_langtok=False))
    none = MultiPairDataset.from_dir(data_bin, langtok=LangTokConfig(encoder_langtok=None, decoder_langtok=False))
    g = int(tgt_tag.offsets[tgt_tag.part_index("fra_Latn-eng_Latn", 0)]) + 3
    assert tgt_tag[g]["source"].tolist() == [TAG["eng_Latn"], *none[g]["source"].tolist()]
    assert tgt_tag[g]["target"].tolist() == none[g]["target"].tolist()


def test_tags_count_in_lengths_and_the_length_filter(data_bin):
    none = MultiPairDataset.from_dir(data_bin, langtok=LangTokConfig(None, False))
    tagged = MultiPairDataset.from_dir(data_bin)
    ids = np.arange(len(none))
    assert np.array_equal(tagged.src_sizes[ids], none.src_sizes[ids] + 1)
    assert np.array_equal(tagged.tgt_sizes[ids], none.tgt_sizes[ids] + 1)
    limit = int(np.median(none.src_sizes[ids]))
    options = PairOptions(max_source_positions=limit)
    filtered_plain = MultiPairDataset.from_dir(data_bin, langtok=LangTokConfig(None, False), options=options)
    filtered_tagged = MultiPairDataset.from_dir(data_bin, options=options)
    assert filtered_plain.filter_report.num_kept == int((none.src_sizes[ids] <= limit).sum())
    assert filtered_tagged.filter_report.num_kept == int((none.src_sizes[ids] + 1 <= limit).sum())  # the tag counts


def test_custom_tag_template(tmp_path):
    root = tmp_path / "bin"
    root.mkdir()
    (root / "dict.txt").write_text("".join(f"w{i} 1\n" for i in range(4, VOCAB)) + "[en] 1\n[de] 1\n")
    write_direction(root, "train", "en-de", 10, seed=3)
    ds = MultiPairDataset.from_dir(root, langtok=LangTokConfig(template="[{lang}]"))
    assert ds[0]["source"][0] == VOCAB and ds[0]["target"][0] == VOCAB + 1


def test_reads_what_tokenmill_prepare_writes(tmp_path):
    """End to end: ``prepare --directions`` output opened, tagged with its manifest's tokens, batched."""
    import json

    from tests.prepare.test_multilingual import settings
    from tests.prepare.test_multilingual import write_direction as write_raw
    from tokenmill.prepare import build_config, prepare

    raw = tmp_path / "raw"
    raw.mkdir()
    for k, (tgt, n) in enumerate((("deu_Latn", 200), ("rus_Cyrl", 40), ("zho_Hans", 12))):
        write_raw(raw, tgt, n, k)
    directions = ["eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl", "eng_Latn-zho_Hans"]
    out = prepare(build_config(settings(raw, tmp_path, directions)), progress=False).destdir
    tags = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["vocab"]["lang_tokens"]
    ds = MultiPairDataset.from_dir(out)
    assert ds.directions == directions and ds.folders == [["shard000", "shard001"]] * 3
    for name in directions:
        src, tgt = name.split("-")
        item = ds[int(ds.offsets[ds.part_index(name, 1)])]
        assert item["source"][0] == tags[src] and item["target"][0] == tags[tgt]
    valid = MultiPairDataset.from_dir(out, "valid")
    assert [[len(p) for p in s] for s in valid.shards] == [[5], [5], [5]]
    batch = next(iter(multilingual_batches(out, BATCHES, SAMPLING, cache=False)))
    assert set(batch["direction"].tolist()) <= {0, 1, 2} and batch["net_input"]["src_tokens"].shape[0] > 0


# ---------------------------------------------------------------- collate
def test_mixed_batch_rows_equal_each_directions_own_rows(dataset, data_bin):
    rng = np.random.default_rng(0)
    ids = rng.choice(len(dataset), 40, replace=False)
    part, local = dataset.locate(ids)
    for which in ("source", "target"):
        rows = dataset.rows(ids, which)
        expected = [
            dataset.parts[p].rows(np.array([i]), which).tokens.tolist() for p, i in zip(part, local, strict=True)
        ]
        got = [rows.tokens[rows.offsets[r] : rows.offsets[r + 1]].tolist() for r in range(len(ids))]
        assert got == expected
        for left in (True, False):
            matrix, lengths = dataset.padded(ids, which, 1, left=left, multiple=8)
            assert np.array_equal(matrix, pad_rows(rows.tokens, rows.offsets, 1, left=left, multiple=8))
            assert np.array_equal(lengths, rows.lengths)


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


# ---------------------------------------------------------------- shards and data paths
def test_epoch_e_reads_shard_e_minus_1_mod_k_per_direction(dataset):
    planner = SampledPlanner(dataset, BATCHES, None)
    for epoch in range(1, 8):
        ids = planner.epoch_ids(epoch)
        part, _ = dataset.locate(ids)
        for d, name in enumerate(dataset.directions):
            expected = dataset.part_index(name, (epoch - 1) % len(SHARDS[name]))
            assert set(part[dataset.part_direction[part] == d].tolist()) == {expected}
        assert len(ids) == sum(SHARDS[name][(epoch - 1) % len(SHARDS[name])] for name in dataset.directions)
        assert len(set(ids.tolist())) == len(ids)  # without sampling: every pair of the shards once


def test_valid_comes_from_the_first_shard_only(data_bin, tmp_path):
    copy = tmp_path / "data_bin"
    shutil.copytree(data_bin, copy)
    write_direction(copy / "shard001", "valid", "eng_Latn-tur_Latn", 33, seed=1)  # must be ignored
    valid = MultiPairDataset.from_dir(copy, "valid")
    assert [[len(part) for part in s] for s in valid.shards] == [[VALID[d]] for d in valid.directions]
    assert {f for folders in valid.folders for f in folders} == {"shard000"}


def test_fairseq_colon_separated_paths_and_lists(data_bin, dataset):
    folders = [data_bin / f"shard{k:03d}" for k in range(3)]
    joined = MultiPairDataset.from_dir(":".join(map(str, folders)))
    listed = MultiPairDataset.from_dir(folders)
    assert joined.fingerprint() == listed.fingerprint() == dataset.fingerprint()
    assert len(joined) == len(dataset) and joined.directions == dataset.directions


def test_chosen_directions_and_reversed_files(data_bin):
    ds = MultiPairDataset.from_dir(data_bin, directions=["eng_Latn-fra_Latn", "eng_Latn-hin_Deva"])
    assert ds.directions == ["eng_Latn-fra_Latn", "eng_Latn-hin_Deva"]
    plain = plain_part(data_bin, "fra_Latn-eng_Latn", 0)
    item = ds[2]  # eng->fra read from the fra_Latn-eng_Latn files, sides swapped
    assert item["source"].tolist() == [TAG["eng_Latn"], *plain[2]["target"].tolist()]
    assert item["target"].tolist() == [TAG["fra_Latn"], *plain[2]["source"].tolist()]


# ---------------------------------------------------------------- the sampled mix
def all_ids(plan, world_size: int) -> np.ndarray:
    return np.concatenate([plan.indices(t, r) for t in range(plan.num_steps) for r in range(world_size)])


def test_sampled_counts_per_direction_follow_the_plan_and_the_formula(dataset):
    planner = SampledPlanner(dataset, BATCHES, SAMPLING, world_size=3)
    for epoch in (1, 2, 3, 4):
        mix = planner.mix(epoch)
        ids = all_ids(planner.plan(epoch), 3)
        counts = np.bincount(dataset.direction_of(ids), minlength=len(dataset.directions))
        assert counts.tolist() == mix.plan.counts(epoch).tolist()
        assert sorted(ids.tolist()) == sorted(planner.epoch_ids(epoch).tolist())  # batched = drawn, nothing lost
        assert set(dataset.locate(ids)[0].tolist()) <= set(mix.parts.tolist())  # only this epoch's shards
        expected = temperature_probabilities(mix.kept, 5.0) * mix.plan.virtual_size  # p_i ~ n_i^(1/T)
        assert np.all(np.abs(counts - expected) <= 1)
    small = dataset.directions.index("fra_Latn-eng_Latn")
    assert counts[small] > SHARDS["fra_Latn-eng_Latn"][0]  # upsampled past its size


def test_only_pairs_that_pass_the_length_filter_are_drawn(data_bin):
    ds = MultiPairDataset.from_dir(data_bin, options=PairOptions(max_source_positions=12, max_target_positions=12))
    planner = SampledPlanner(ds, BATCHES, SAMPLING)
    ids = planner.epoch_ids(2)
    assert len(ids) == planner.mix(2).plan.virtual_size
    assert int(ds.src_sizes[ids].max()) <= 12 and int(ds.tgt_sizes[ids].max()) <= 12
    assert planner.mix(2).kept.sum() < sum(len(ds.parts[p]) for p in planner.mix(2).parts)
    assert planner.plan(2).stats.dropped  # the filter is reported


@pytest.mark.parametrize("world_size", range(1, 9))
def test_every_rank_runs_the_same_number_of_steps(dataset, world_size):
    planner = SampledPlanner(dataset, BATCHES, SAMPLING, world_size=world_size)
    for epoch in (1, 2):
        plan = planner.plan(epoch)
        assert plan.schedule.shape == (plan.num_steps, world_size)
        assert all(len(plan.indices(t, r)) > 0 for t in range(plan.num_steps) for r in range(world_size))
        assert Counter(all_ids(plan, world_size).tolist()) == Counter(planner.epoch_ids(epoch).tolist())
        iterators = [
            multilingual_batches(dataset, BATCHES, SAMPLING, rank=r, world_size=world_size, cache=False)
            for r in range(world_size)
        ]
        assert {it.num_steps(epoch) for it in iterators} == {plan.num_steps}


def test_batches_mix_directions_by_length(dataset):
    plan = SampledPlanner(dataset, BATCHES, SAMPLING).plan(1)
    mixed = [b for b in plan.rank_batches(0) if len(set(dataset.direction_of(b).tolist())) > 1]
    assert len(mixed) > len(plan.rank_batches(0)) // 2  # batches are cut by length across the mix


def test_the_plan_is_a_pure_function_of_seeds_epoch_and_data(dataset, data_bin, tmp_path):
    first = SampledPlanner(dataset, BATCHES, SAMPLING, world_size=2).plan(3)
    again = SampledPlanner(MultiPairDataset.from_dir(data_bin), BATCHES, SAMPLING, world_size=2).plan(3)
    assert np.array_equal(first.order, again.order) and np.array_equal(first.schedule, again.schedule)
    other = SampledPlanner(dataset, BATCHES, SamplingConfig(temperature=5.0, seed=4), world_size=2)
    assert other.fingerprint != SampledPlanner(dataset, BATCHES, SAMPLING, world_size=2).fingerprint
    assert not np.array_equal(np.sort(other.epoch_ids(3)), np.sort(first.order))


def test_virtual_epoch_slices_move_to_the_next_shard_after_a_whole_pass(dataset):
    sliced = SampledPlanner(dataset, BATCHES, SamplingConfig(temperature=5.0, seed=3, virtual_epoch_size=100))
    slices = sliced.mix(1).plan.num_slices
    assert slices > 1
    assert [sliced.position(e) for e in range(1, slices + 2)] == [(1, j) for j in range(slices)] + [(2, 0)]
    pass_ids = np.concatenate([sliced.epoch_ids(e) for e in range(1, slices + 1)])
    assert sorted(pass_ids.tolist()) == sorted(SampledPlanner(dataset, BATCHES, SAMPLING).epoch_ids(1).tolist())
    tur = dataset.directions.index("eng_Latn-tur_Latn")
    assert int(dataset.part_shard[sliced.mix(slices).parts[tur]]) == 0
    assert int(dataset.part_shard[sliced.mix(slices + 1).parts[tur]]) == 1
    for epoch in range(1, 80):  # slices per pass vary with the pass's shard sizes; positions stay consecutive
        (data_pass, j), following = sliced.position(epoch), sliced.position(epoch + 1)
        last = j + 1 == sliced.mix(epoch).plan.num_slices
        assert following == ((data_pass + 1, 0) if last else (data_pass, j + 1))


def test_epoch_table_names_shards_and_sampling(dataset):
    planner = SampledPlanner(dataset, BATCHES, SAMPLING)
    text = planner.describe_epoch(2)
    assert "shard001 (2/3)" in text and "shard001 (2/2)" in text and "shard000 (1/1)" in text
    assert "temperature 5" in text and "epochs over data" in text
    report = planner.report(2)
    assert [row["drawn"] for row in report["directions"]] == planner.counts(2).tolist()


# ---------------------------------------------------------------- exact state
def stream(iterator, count: int) -> list[list[int]]:
    return [batch["id"].tolist() for batch in itertools.islice(iterator, count)]


def test_resume_from_every_step_gives_the_same_stream(dataset, tmp_path):
    def make():
        return multilingual_batches(dataset, BATCHES, SAMPLING, rank=1, world_size=2, infinite=True, cache=tmp_path)

    total = make().num_steps(1) + make().num_steps(2) + 2  # into epoch 3
    running = make()
    reference, states = [], [running.state_dict()]
    for batch in itertools.islice(running, total):
        reference.append(batch["id"].tolist())
        assert np.array_equal(batch["direction"], dataset.direction_of(batch["id"]))
        states.append(running.state_dict())
    for k in range(total):
        resumed = make()
        resumed.load_state_dict(states[k])
        assert stream(resumed, total - k) == reference[k:], f"resume after {k} batches"


def test_resume_refuses_other_sampling(dataset, tmp_path):
    state = multilingual_batches(dataset, BATCHES, SAMPLING, cache=tmp_path).state_dict()
    other = multilingual_batches(dataset, BATCHES, SamplingConfig(temperature=2.0), cache=tmp_path)
    with pytest.raises(TokenmillError, match="plan fingerprint differs"):
        other.load_state_dict(state)


def test_dataloader_workers_give_the_single_process_stream(data_bin, tmp_path):
    torch = pytest.importorskip("torch")
    from tokenmill.loader.torch import StatefulLoader

    def make():
        return multilingual_batches(data_bin, BATCHES, SAMPLING, world_size=2, infinite=True, cache=tmp_path)

    total = make().num_steps(1) + 3
    expected = stream(make(), total)
    loader = StatefulLoader(make(), num_workers=2)
    got = []
    for batch in itertools.islice(loader, total):
        assert isinstance(batch["direction"], torch.Tensor)
        got.append(batch["id"].tolist())
    assert got == expected
    state = loader.state_dict()  # workers prefetched further; the state is where the consumer stopped
    resumed = StatefulLoader(make(), num_workers=0)
    resumed.load_state_dict(state)
    assert [b["id"].tolist() for b in itertools.islice(resumed, 2)] == stream(make(), total + 2)[total:]


def test_iterator_survives_pickling_as_spawned_workers_receive_it(dataset, tmp_path):
    iterator = multilingual_batches(dataset, BATCHES, SAMPLING, world_size=2, rank=1, cache=tmp_path, epoch=2)
    copy = pickle.loads(pickle.dumps(iterator))
    assert copy.planner.fingerprint == iterator.planner.fingerprint
    assert stream(copy, 5) == stream(iterator, 5)


# ---------------------------------------------------------------- bad input
def test_direction_not_on_disk(data_bin):
    with pytest.raises(ConfigError, match=r"direction eng_Latn-deu_Latn: it has no train files.*on disk: eng_Latn"):
        MultiPairDataset.from_dir(data_bin, directions=["eng_Latn-deu_Latn"])
    with pytest.raises(ConfigError, match="not 'src-tgt'"):
        MultiPairDataset.from_dir(data_bin, directions=["eng.Latn-tur"])


def test_direction_listed_in_the_manifest_without_files(data_bin, tmp_path):
    copy = tmp_path / "data_bin"
    shutil.copytree(data_bin, copy)
    (copy / "manifest.json").write_text('{"directions": ["eng_Latn-tur_Latn", "eng_Latn-zul_Latn"]}')
    with pytest.raises(ConfigError, match=r"direction eng_Latn-zul_Latn: manifest\.json lists it but it has no train"):
        MultiPairDataset.from_dir(copy)


def test_shard_folder_with_one_side_missing(data_bin, tmp_path):
    copy = tmp_path / "data_bin"
    shutil.copytree(data_bin, copy)
    for suffix in (".bin", ".idx"):
        (copy / "shard001" / f"train.eng_Latn-hin_Deva.hin_Deva{suffix}").unlink()
    with pytest.raises(FormatError, match=r"shard001: direction eng_Latn-hin_Deva .*train.eng_Latn-hin_Deva.hin_Deva"):
        MultiPairDataset.from_dir(copy)


def test_mismatched_sentence_counts_name_the_direction(data_bin, tmp_path):
    copy = tmp_path / "data_bin"
    shutil.copytree(data_bin, copy)
    write_direction(copy / "shard001", "train", "eng_Latn-hin_Deva", 51, seed=5, sides="tgt")
    with pytest.raises(FormatError, match=r"direction eng_Latn-hin_Deva, shard folder .*shard001: .*50 sentences"):
        MultiPairDataset.from_dir(copy)


def test_language_tag_missing_from_the_dictionary(tmp_path):
    root = make_data_bin(tmp_path / "bin", {"eng_Latn-tur_Latn": [10]}, langs=["eng_Latn"])
    with pytest.raises(ConfigError, match="direction eng_Latn-tur_Latn: language token __tur_Latn__ is not in"):
        MultiPairDataset.from_dir(root)
    assert len(MultiPairDataset.from_dir(root, langtok=LangTokConfig(decoder_langtok=False))) == 10


def test_dictionaries_must_be_shared(data_bin, tmp_path):
    copy = tmp_path / "data_bin"
    shutil.copytree(data_bin, copy)
    with open(copy / "shard000" / "dict.hin_Deva.txt", "a", encoding="utf-8") as handle:
        handle.write("extra 1\n")
    with pytest.raises(FormatError, match="differ; a multilingual data set uses one shared dictionary"):
        MultiPairDataset.from_dir(copy)


def test_missing_data_paths(tmp_path):
    with pytest.raises(TokenmillError, match="does not exist"):
        MultiPairDataset.from_dir(f"{tmp_path}/a:{tmp_path}/b")
    with pytest.raises(ConfigError, match="no train data"):
        MultiPairDataset.from_dir(tmp_path)


@pytest.mark.parametrize(("hard", "opens"), [(4096, True), (100, False)])
def test_the_open_file_limit_is_raised_for_many_shards_or_named(data_bin, hard, opens):
    import resource
    import subprocess
    import sys

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (100, hard))

    code = (
        "import resource, sys\n"
        "from tokenmill.data import MultiPairDataset\n"
        "from tokenmill.errors import ConfigError\n"
        "try:\n"
        f"    MultiPairDataset.from_dir({str(data_bin)!r})\n"
        "except ConfigError as error:\n"
        "    print(error); sys.exit(3)\n"
        "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
    )
    machine_hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if machine_hard != resource.RLIM_INFINITY and machine_hard < hard:
        pytest.skip("this machine's hard limit is lower than the test needs")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=low_limit)
    if opens:
        assert done.returncode == 0, done.stderr
        assert int(done.stdout) == 4 * 6 + 256, "soft limit raised to what 6 parts (4 files each) need"
    else:
        assert done.returncode == 3, done.stderr
        assert "maps 24 files, but this process may open at most 100" in done.stdout


@pytest.mark.parametrize(("old", "new"), [(2, 3), (4, 1), (3, 8), (1, 2)])
def test_a_sampled_mix_resumes_at_another_world_size_serving_the_rest_once(dataset, old, new):
    def ranks(world):
        return [multilingual_batches(dataset, BATCHES, SAMPLING, rank=r, world_size=world, collate=None,
                                     cache=False) for r in range(world)]

    def drawn(iterators, steps=None):
        out = Counter()
        for it in iterators:
            for batch in (it if steps is None else itertools.islice(it, steps)):
                out.update(np.asarray(batch).tolist())
        return out

    whole = drawn(ranks(old))  # the epoch's sampled items (repeats of upsampled pairs included)
    for step in range(1, ranks(old)[0].num_steps(1)):
        before_its = ranks(old)
        before = drawn(before_its, step)
        after_its = ranks(new)
        for it in after_its:
            it.load_state_dict(before_its[0].state_dict())
        rest = after_its[0].plan()
        left_out = rest.stats.dropped.get("left_fewer_than_ranks", 0)
        steps = {it.num_steps(1) for it in after_its}
        after = drawn(after_its) if rest.num_steps else Counter()
        assert len(steps) == 1, f"every rank runs the same number of steps, {old}->{new} at {step}"
        assert sum((before + after).values()) + left_out == sum(whole.values())
        assert not (before + after) - whole, "nothing drawn more often than the epoch's sample says"
