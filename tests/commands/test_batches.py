"""``tokenmill batches DIR``: the epoch preview, as a table and as JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from tests.batching.corpus import make_pair_dir
from tokenmill.commands.batches import batches


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Plan caches and verification stamps of these tests stay out of ~/.cache."""
    monkeypatch.setenv("TOKENMILL_CACHE", str(tmp_path_factory.mktemp("tokenmill-cache")))


def run(*args: str):
    result = CliRunner().invoke(batches, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def test_json_report(tmp_path):
    data = make_pair_dir(tmp_path / "data", 1000, seed=2)
    args = [str(data), "--json", "--world-size", "3", "--max-tokens", "512", "--max-source-positions", "25",
            "--cache-dir", str(tmp_path / "cache")]
    report = json.loads(run(*args))
    assert report["num_pairs"] == 1000
    assert report["num_samples"] + report["num_dropped"] == 1000
    assert report["num_dropped"] == report["dropped"]["source_too_long"] > 0
    assert len(report["num_batches_per_rank"]) == 3 and len(set(report["num_batches_per_rank"])) == 1
    assert 0 < report["padding_fraction"] < 0.5
    assert report["source_lang"] == "en" and report["plan_cached"] is False
    again = json.loads(run(*args))
    assert again["plan_cached"] is True and again["num_batches"] == report["num_batches"]


def test_batch_penalty_trades_batches_for_padding(tmp_path):
    data = make_pair_dir(tmp_path / "data", 3000, seed=4)
    fewest = json.loads(run(str(data), "--json", "--no-cache", "--batch-penalty", "0"))
    default = json.loads(run(str(data), "--json", "--no-cache"))
    assert default["num_batches"] >= fewest["num_batches"]
    assert default["padding_fraction"] < fewest["padding_fraction"]
    result = CliRunner().invoke(batches, [str(data), "--batch-penalty", "2"])
    assert result.exit_code == 2 and "--batch-penalty" in result.output


def test_table_report_names_modes_and_drops(tmp_path):
    data = make_pair_dir(tmp_path / "data", 300, lengths=(np.array([3] * 299 + [500]), np.array([4] * 300)))
    out = run(str(data), "--mode", "fairseq", "--max-tokens", "256", "--no-cache")
    assert "mode fairseq" in out
    assert "longer_than_max_tokens 1" in out
    assert "batches per rank" in out and "padding" in out


def test_bad_directory_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(batches, [str(tmp_path / "empty")])
    assert result.exit_code != 0
    assert "is an empty folder (no token stores)" in str(result.exception)
    assert "run tokenmill prepare" in str(result.exception)


def test_packed_report_compares_with_unpacked(tmp_path):
    data = make_pair_dir(tmp_path / "data", 1000, seed=4)
    args = [str(data), "--max-tokens", "1024", "--world-size", "2", "--no-cache"]
    unpacked = json.loads(run(*args, "--json"))
    packed = json.loads(run(*args, "--json", "--pack-length", "64"))
    assert packed["unpacked_padding_fraction"] == unpacked["padding_fraction"]
    assert packed["packed"]["strategy"] == "ffd" and packed["packed"]["rows_per_batch"] == 1024 // 64
    assert packed["num_samples"] + packed["num_dropped"] == 1000
    assert packed["num_batches"] < unpacked["num_batches"]  # several pairs per row
    assert len(set(packed["num_batches_per_rank"])) == 1
    table = run(*args, "--pack-length", "64", "--pack-strategy", "greedy")
    assert "packed rows" in table and "(greedy)" in table and "padding unpacked" in table


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    """A real ``prepare --directions`` output: three directions, sizes 600 / 120 / 30, two shards."""
    from tests.prepare.test_multilingual import settings, write_direction
    from tokenmill.prepare import build_config, prepare

    root = tmp_path_factory.mktemp("multi")
    raw = root / "raw"
    raw.mkdir()
    for k, (tgt, n) in enumerate((("deu_Latn", 600), ("rus_Cyrl", 120), ("zho_Hans", 30))):
        write_direction(raw, tgt, n, k)
    names = ["eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl", "eng_Latn-zho_Hans"]
    return prepare(build_config(settings(raw, root, names)), progress=False).destdir


def test_many_directions_show_the_sampled_mix_per_epoch(data_bin):
    report = json.loads(run(str(data_bin), "--json", "--temperature", "5", "--world-size", "2", "--epoch", "2"))
    mix = report["mix"]
    assert [d["shard"] for d in mix["directions"]] == ["shard001"] * 3, "epoch 2 reads the second shard"
    drawn = {d["direction"]: d["drawn"] for d in mix["directions"]}
    assert sum(drawn.values()) == report["num_samples"] == mix["sampling"]["virtual_size"]
    sizes = np.array([300, 60, 15], dtype=float)
    expected = (sizes / sizes.sum()) ** 0.2 / ((sizes / sizes.sum()) ** 0.2).sum() * report["num_samples"]
    assert np.abs(np.array([drawn[n] for n in sorted(drawn)]) - expected).max() <= 1
    assert len(set(report["num_batches_per_rank"])) == 1
    table = run(str(data_bin), "--temperature", "5")
    assert "(3 directions)" in table and "epochs over data" in table and "shard000 (1/2)" in table


def test_many_directions_bad_weights_are_named(data_bin):
    result = CliRunner().invoke(batches, [str(data_bin), "--weights", "eng_Latn-deu_Latn"])
    assert result.exit_code != 0 and "not direction=weight" in str(result.exception)


def test_many_directions_pack_the_sampled_mix(data_bin):
    args = [str(data_bin), "--json", "--temperature", "5", "--world-size", "2", "--max-tokens", "512", "--no-cache"]
    unpacked = json.loads(run(*args))
    packed = json.loads(run(*args, "--pack-length", "128"))
    drawn = sum(d["drawn"] for d in packed["mix"]["directions"])
    assert drawn == sum(d["drawn"] for d in unpacked["mix"]["directions"])  # the same sampled selection
    assert packed["num_samples"] + packed["dropped"].get("source_longer_than_row", 0) + packed["dropped"].get(
        "target_longer_than_row", 0) + packed["dropped"].get("both_longer_than_row", 0) == drawn
    assert packed["packed"]["pairs_per_row"] > 1 and len(set(packed["num_batches_per_rank"])) == 1
    assert packed["unpacked_padding_fraction"] == unpacked["padding_fraction"]


def test_table_says_a_cached_plan_was_mapped_not_computed(tmp_path):
    data = make_pair_dir(tmp_path / "data", 300, seed=5)
    args = [str(data), "--cache-dir", str(tmp_path / "cache")]
    first, again = run(*args), run(*args)
    assert "computed in" in first and "from the cache" not in first
    plan_line = next(line for line in again.splitlines() if line.strip().startswith("plan "))
    assert "mapped from the cache (computing it took" in plan_line
