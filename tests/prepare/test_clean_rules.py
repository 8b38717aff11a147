"""prepare with the bitext preset and decontamination: each rule counted with its sample, the report's funnel
adds up, the clean key carries the settings, and the output is byte-identical for --tasks 1, 2, 3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import assert_same_output, output_files
from tests.text.bitext_pairs import PLANTED
from tokenmill.prepare import build_config
from tokenmill.report.cleaning import funnel
from tokenmill.text.drop_sample import DropSample

pytest.importorskip("regex")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = write_corpus(tmp_path_factory.mktemp("corpus"), pairs=1500)
    lines = {lang: (folder / f"train.{lang}").read_text(encoding="utf-8").splitlines() for lang in ("en", "zh")}
    for i, (src, tgt) in enumerate(PLANTED):  # spread the noise over the file (and over the tasks)
        at = (i * 37) % len(lines["en"])
        lines["en"].insert(at, src.replace("\t", " "))
        lines["zh"].insert(at, tgt.replace("\t", " "))
    for lang, rows in lines.items():
        (folder / f"train.{lang}").write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    (folder / "devtest.txt").write_text(lines["en"][100] + "\n" + lines["en"][900] + "\n", encoding="utf-8")
    return folder


def settings(corpus: Path, destdir: Path, **more) -> dict:
    return {"source_lang": "en", "target_lang": "zh", "vocab_size": 300, "character_coverage": 0.99, "workers": 2,
            "trainpref": str(corpus / "train"), "validpref": str(corpus / "valid"), "testpref": str(corpus / "test"),
            "destdir": str(destdir), "clean_preset": "bitext", "decontaminate": [str(corpus / "devtest.txt")],
            "decontaminate_ngram": 6, **more}


@pytest.fixture(scope="module")
def one_process(corpus, tmp_path_factory) -> Path:
    destdir = tmp_path_factory.mktemp("plain") / "bin"
    tokenmill.prepare(settings(corpus, destdir), progress=False)
    return destdir


def test_the_preset_counts_each_rule_with_a_sample(one_process):
    manifest = json.loads((one_process / "manifest.json").read_text())
    clean = manifest["summary"]["splits"]["train"]["clean"]
    drops = {key.removeprefix("dropped_"): n for key, n in clean["filter"].items() if key.startswith("dropped_")}
    for rule in ("not_too_long", "no_urls", "no_unicode_noise", "no_titles", "html_tags", "no_literals"):
        assert drops[rule] > 0, rule
    assert clean["decontaminate"]["contaminated"] >= 2
    sample = DropSample.from_dict(json.loads((one_process / ".work" / "dropped" / "train.json").read_text()))
    assert {"no_urls", "html_tags", "decontaminate"} <= set(sample.reasons)
    assert all(drops[reason] > 0 for reason in sample.reasons if reason in drops)
    shown = funnel(clean)
    assert shown["adds_up"]
    assert {"no_urls", "decontaminate"} <= {step["reason"] for step in shown["steps"]}


def test_the_rules_are_in_the_clean_key(corpus, one_process, tmp_path):
    config = build_config(settings(corpus, tmp_path / "bin"))
    assert config.cleaning.filters.no_urls and config.cleaning.filters.length_ratio == 3.0
    given = build_config(settings(corpus, tmp_path / "bin", filters={"no_urls": False, "length_ratio": 2.0}))
    filters = given.cleaning.filters
    assert not filters.no_urls and filters.length_ratio == 2.0  # given filters win over the preset
    plain = tmp_path / "plain"
    tokenmill.prepare(settings(corpus, plain, clean_preset=None, decontaminate=[]), progress=False)
    key = json.loads((one_process / ".state" / "clean.train.json").read_text())["fingerprint"]
    assert json.loads((plain / ".state" / "clean.train.json").read_text())["fingerprint"] != key


@pytest.mark.parametrize("tasks", [1, 2, 3])
def test_every_task_count_gives_the_same_bytes(corpus, one_process, tmp_path, tasks):
    summary = tokenmill.prepare(settings(corpus, tmp_path / "bin", tasks=tasks), progress=False)
    assert len(summary.tasks["clean.train"]) == tasks
    assert_same_output(one_process, tmp_path / "bin")


def test_the_manifest_records_the_rules_only_when_used(corpus, one_process, tmp_path):
    recorded = json.loads((one_process / "manifest.json").read_text())["settings"]
    assert recorded["clean_preset"] == "bitext" and recorded["decontaminate_ngram"] == 6
    assert recorded["filters"]["no_urls"] is True and recorded["filters"]["length_ratio"] == 3.0
    assert "numerals" not in recorded["filters"]  # a rule the preset leaves off
    plain = build_config(settings(corpus, tmp_path / "bin", clean_preset=None, decontaminate=[],
                                  decontaminate_ngram=13)).recorded()
    assert not {"clean_preset", "decontaminate", "decontaminate_ngram"} & set(plain)
    assert "no_urls" not in plain["filters"] and "drop_empty" in plain["filters"]


def test_a_relative_decontaminate_path_gives_the_same_bytes_in_tasks(corpus, one_process, tmp_path, monkeypatch):
    monkeypatch.chdir(corpus)  # the reference file as a user types it; the task processes get absolute paths
    summary = tokenmill.prepare(settings(corpus, tmp_path / "bin", tasks=2, decontaminate=["devtest.txt"]),
                                progress=False)
    assert len(summary.tasks["clean.train"]) == 2
    want, got = output_files(one_process), output_files(tmp_path / "bin")
    assert sorted(got) == sorted(want)
    assert [name for name in want if want[name] != got[name]] == ["manifest.json"]  # the path as it was given:
    manifests = [json.loads(files["manifest.json"]) for files in (want, got)]
    assert manifests[1]["settings"].pop("decontaminate") == ["devtest.txt"]
    manifests[0]["settings"].pop("decontaminate")
    assert manifests[0] == manifests[1]  # ... all else equal
