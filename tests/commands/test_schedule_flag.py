"""``tokenmill batches --weights-schedule`` (inline or a YAML file) and ``--schedule-every``: the same weights
schedule as the Python API's ``SamplingConfig(weights_schedule=...)``, so the same batches, statistics,
resume states and ledger; bad input is one error naming the flag and the fix."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

import tokenmill
from tokenmill.batching.config import BatchConfig
from tokenmill.cli import cli
from tokenmill.commands.batches import _mix_settings, batches
from tokenmill.data.sampling import SamplingConfig
from tokenmill.loader.make import make_batches
from tokenmill.loader.multilingual import multilingual_batches

TUR, HIN, FRA = "eng_Latn-tur_Latn", "eng_Latn-hin_Deva", "fra_Latn-eng_Latn"
INLINE = f"0:{HIN}=0,{TUR}=1,{FRA}=2;8:{HIN}=2,{TUR}=1,{FRA}=0"
API = SamplingConfig.from_dict(yaml.safe_load(f"""
weights_schedule:
  - {{step: 0, weights: {{{HIN}: 0, {TUR}: 1, {FRA}: 2}}}}
  - {{step: 8, weights: {{{HIN}: 2, {TUR}: 1, {FRA}: 0}}}}
schedule_every: 4
seed: 1
"""))
CONFIG = BatchConfig(max_tokens=240, seed=1)
FLAGS = ["--max-tokens", "240", "--world-size", "2", "--no-cache"]


def run(*args: str) -> str:
    result = CliRunner().invoke(batches, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def refused(*args: str) -> str:
    result = CliRunner().invoke(cli, ["batches", *args])
    assert result.exit_code == 2 and result.output.startswith("error: "), result.output
    assert "Traceback" not in result.output
    return result.output


def flag_sampling(text: str, every: int | None = 4) -> SamplingConfig:
    """The sampling settings ``tokenmill batches`` makes of these flags."""
    sampling, _ = _mix_settings("unused", "train", None, 1, (None, None, None, None, None, text, every),
                                ("src", True, "__{lang}__"))
    return sampling


def api_ranks(dataset, world=2):
    return [multilingual_batches(dataset, CONFIG, API, rank=r, world_size=world, collate=None, cache=False)
            for r in range(world)]


def test_inline_and_both_yaml_forms_are_the_api_schedule_and_give_its_batches(multi_dataset, tmp_path):
    mapping = tmp_path / "schedule.yaml"
    mapping.write_text(f"0: {{{HIN}: 0, {TUR}: 1, {FRA}: 2}}\n8: {{{HIN}: 2, {TUR}: 1, {FRA}: 0}}\n", encoding="utf-8")
    listed = tmp_path / "listed.yaml"
    listed.write_text(yaml.safe_dump({"weights_schedule": API.to_dict()["weights_schedule"]}), encoding="utf-8")
    api = api_ranks(multi_dataset)
    expected = [[it.indices_at(1, t).tolist() for it in api] for t in range(api[0].num_steps())]
    for text in (INLINE, str(mapping), str(listed)):
        sampling = flag_sampling(text)
        assert sampling.to_dict() == API.to_dict()
        ranks = [make_batches(multi_dataset, CONFIG, sampling=sampling, rank=r, world_size=2, collate=None,
                              cache=False) for r in range(2)]
        assert ranks[0].planner.fingerprint == api[0].planner.fingerprint
        assert [[it.indices_at(1, t).tolist() for it in ranks] for t in range(ranks[0].num_steps())] == expected
    assert flag_sampling(INLINE, None).schedule_every == SamplingConfig.schedule_every


def test_the_report_shows_the_parts_and_the_api_plans_figures(multi_data_bin, multi_dataset):
    report = json.loads(run(str(multi_data_bin), *FLAGS, "--weights-schedule", INLINE, "--schedule-every", "4",
                            "--json"))
    stats = api_ranks(multi_dataset)[0].plan().stats
    for key in ("num_samples", "num_batches", "src_tokens", "tgt_tokens", "padded_tokens", "tokens_per_rank"):
        assert report[key] == getattr(stats, key), key
    parts = report["mix"]["parts"]
    assert [p["first_step"] for p in parts][:3] == [0, 4, 8]
    assert sum(p["steps"] for p in parts) == stats.num_batches // 2
    assert parts[0]["weights"] == {HIN: 0.0, TUR: 1.0, FRA: 2.0} and parts[1]["weights"][HIN] == 1.0
    table = run(str(multi_data_bin), *FLAGS, "--weights-schedule", INLINE, "--schedule-every", "4")
    assert "weights schedule in" in table and "0-3" in table and "samples this epoch" in table


def test_a_state_of_the_api_resumes_in_the_command_and_its_ledger_is_the_api_s(multi_data_bin, multi_dataset,
                                                                                tmp_path):
    ranks = api_ranks(multi_dataset)
    for it in ranks:
        it.seek(1, 6)
    state = tmp_path / "state.json"
    state.write_text(json.dumps(ranks[0].state_dict()), encoding="utf-8")
    report = json.loads(run(str(multi_data_bin), *FLAGS, "--weights-schedule", INLINE, "--schedule-every", "4",
                            "--state", str(state), "--json"))
    assert report["ledger"] == json.loads(json.dumps(ranks[0].ledger()))
    assert sum(row["epoch_samples"] for row in report["ledger"]["sources"].values()) > 0
    other = refused(str(multi_data_bin), *FLAGS, "--weights-schedule", INLINE, "--schedule-every", "2",
                    "--state", str(state))
    assert "schedule_every" in other


def test_packed_rows_follow_the_schedule_from_the_command(multi_data_bin, multi_dataset):
    report = json.loads(run(str(multi_data_bin), *FLAGS, "--weights-schedule", INLINE, "--schedule-every", "4",
                            "--pack-length", "64", "--json"))
    pack = tokenmill.PackConfig(max_length=64, max_tokens=240, seed=1)
    api = tokenmill.batches(multi_dataset, pack=pack, sampling=API, world_size=2, collate=None, cache=False)
    stats = api.plan().stats
    assert (report["num_samples"], report["packed"]["rows"]) == (stats.num_samples, stats.extra["rows"])
    assert report["padded_tokens"] == stats.padded_tokens


@pytest.mark.parametrize(("args", "words"), [
    (["--weights-schedule", f"0:{HIN}=1"], "leaves out"),
    (["--weights-schedule", f"0:{HIN}=1,{TUR}=1,{FRA}=1,xx-yy=1"], "names xx-yy, which the data lack"),
    (["--weights-schedule", "0:x;8:y"], "is not direction=weight"),
    (["--weights-schedule", f"zero:{HIN}=1"], "is not STEP:direction=weight"),
    (["--weights-schedule", f"5:{HIN}=1,{TUR}=1,{FRA}=1"], "start at 0 and increase"),
    (["--weights-schedule", INLINE, "--weights", f"{HIN}=1"], "drop --weights"),
    (["--weights-schedule", INLINE, "--temperature", "5"], "drop --temperature"),
    (["--schedule-every", "4"], "--schedule-every applies to --weights-schedule"),
    (["--weights-schedule", "missing.yaml"], "no file missing.yaml"),
    (["--weights-schedule", INLINE, "--split", "valid"], "sampling settings apply to train"),
])
def test_bad_schedules_are_one_error_naming_the_flag(multi_data_bin, args, words):
    assert words in refused(str(multi_data_bin), "--no-cache", *args)


def test_a_yaml_file_that_is_no_schedule_is_refused(multi_data_bin, tmp_path):
    bad = tmp_path / "bad.yaml"
    for text, words in (("[1, 2", "not readable YAML"), ("just text", "holds str"),
                        ("first: {a: 1}", "'first' is not a step")):
        bad.write_text(text, encoding="utf-8")
        assert words in refused(str(multi_data_bin), "--no-cache", "--weights-schedule", str(bad))
