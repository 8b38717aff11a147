"""--near-dedup in prepare: planted near-duplicates in held-out real text are found (recall and precision
printed and held to floors), the output is byte-identical for every task count (and on Ray:
``test_ray_near_dedup``), pairs are compared on the sides asked for, the drops are counted and sampled with
the item each duplicates, and a run without the flag writes what it wrote before."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import assert_same_output, run_cli, settings_for, write_config
from tests.text.near_dup_text import near_copy, planted_corpus
from tokenmill.prepare import build_config
from tokenmill.report.cleaning import funnel

RECALL_FLOOR = 0.85
PRECISION_FLOOR = 0.97


def dropped_lines(destdir: Path) -> set[int]:
    """Input line numbers (1-based) of the training items the clean tasks' parts drop (their gone lists)."""
    found: set[int] = set()
    for part in sorted(p for p in (destdir / ".work" / "tasks" / "clean.train").glob("0*") if p.is_dir()):
        gone = np.load(part / "gone.npy")
        numbers = np.fromfile(part / "numbers.raw", dtype=np.int64)
        found.update(numbers[gone].tolist())
    return found


def write_docs(path: Path, docs: list[str]) -> Path:
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    return path


def lm_settings(data: Path, destdir: Path, **more) -> dict:
    return {"source_lang": "en", "trainpref": [str(data)], "input_format": "jsonl", "source_key": "text",
            "tokenizer": "none", "dedup": False, "near_dedup": True, "workers": 1, "destdir": str(destdir), **more}


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> tuple[Path, list[str], dict[int, int], dict[int, str]]:
    docs, planted, kinds = planted_corpus(originals=600, copies=200)
    return write_docs(tmp_path_factory.mktemp("planted") / "docs.jsonl", docs), docs, planted, kinds


@pytest.fixture(scope="module")
def planted_run(planted, tmp_path_factory) -> tuple[Path, tokenmill.PrepareSummary]:
    """The planted corpus prepared once in three tasks (a cluster's kept item may sit in another task), read
    by the recall test and the audit test."""
    destdir = tmp_path_factory.mktemp("planted-run") / "bin"
    return destdir, tokenmill.prepare(lm_settings(planted[0], destdir, tasks=3), progress=False)


def test_planted_near_duplicates_are_found(planted, planted_run):
    _, docs, copies, kinds = planted
    destdir, summary = planted_run
    dropped = {line - 1 for line in dropped_lines(destdir)}
    found = dropped & set(copies)
    recall, precision = len(found) / len(copies), len(found) / max(1, len(dropped))
    print(f"\nnear-dedup on {len(docs)} held-out documents, {len(copies)} planted near-duplicates: "
          f"recall {recall:.3f}, precision {precision:.3f} ({len(dropped)} dropped)")
    for kind in sorted(set(kinds.values())):
        of_kind = [p for p, k in kinds.items() if k == kind]
        print(f"  {kind}: {sum(p in dropped for p in of_kind)}/{len(of_kind)} found")
    print(f"  dropped but not planted: {sorted(dropped - set(copies))[:10]}")
    assert recall >= RECALL_FLOOR and precision >= PRECISION_FLOOR
    stats = summary.splits["train"]["clean"]["near_dedup"]
    assert stats["near_duplicates"] == len(dropped) and summary.splits["train"]["clean"]["kept"]["pairs"] == (
        len(docs) - len(dropped))
    assert 0 < stats["clusters"] <= len(dropped)
    steps = funnel(summary.splits["train"]["clean"])
    assert steps["adds_up"] and [s["dropped"] for s in steps["steps"] if s["reason"] == "near_dedup"] == [
        len(dropped)]


def test_the_audit_names_the_kept_item(planted, planted_run):
    _, docs, copies, _ = planted
    dropped = planted_run[0] / ".work" / "dropped"
    sample = json.loads((dropped / "train.json").read_text())["near_dedup"]
    audit = json.loads((dropped / "train.near.json").read_text())
    assert len(sample) == len(audit) == 20
    assert [row["line"] for row in audit] == [row["line"] for row in sample]
    for row in audit:
        assert row["kept_line"] < row["line"]  # the first of a cluster stays
        for text, line in ((row["src"], row["line"]), (row["kept_src"], row["kept_line"])):
            assert " ".join(docs[line - 1].split()).startswith(text.removesuffix("…"))  # as cleaned and cut
        if row["line"] - 1 in copies:
            assert row["kept_line"] - 1 == copies[row["line"] - 1]


@pytest.fixture(scope="module")
def near_corpus(tmp_path_factory) -> Path:
    """The tasks corpus (exact duplicates, leaks, too-long pairs) with near-duplicate pairs planted: one
    side edited, or both."""
    folder = write_corpus(tmp_path_factory.mktemp("near"), pairs=3000)
    rng = random.Random(5)
    en = (folder / "train.en").read_text(encoding="utf-8").splitlines()
    zh = (folder / "train.zh").read_text(encoding="utf-8").splitlines()
    for i in range(300):
        source = rng.randrange(len(en) - 1)
        at = rng.randrange(source + 1, len(en) + 1)
        long_src = " ".join([en[source]] * 3)  # enough words for 5-grams on both sides
        long_tgt = " ".join([zh[source]] * 3)
        side = i % 3
        en.insert(at, near_copy(rng, long_src, "characters") if side in (0, 2) else long_src)
        zh.insert(at, near_copy(rng, long_tgt, "boilerplate") if side in (1, 2) else long_tgt)
        en.insert(source, long_src)
        zh.insert(source, long_tgt)
    (folder / "train.en").write_text("".join(s + "\n" for s in en), encoding="utf-8")
    (folder / "train.zh").write_text("".join(s + "\n" for s in zh), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def one_task_run(near_corpus, tmp_path_factory) -> tuple[Path, tokenmill.PrepareSummary]:
    """:func:`near_corpus` prepared in one task with the default sides (both), once per module."""
    destdir = tmp_path_factory.mktemp("one") / "bin"
    summary = tokenmill.prepare(settings_for(near_corpus, destdir, tasks=1, near_dedup=True), progress=False)
    assert summary.splits["train"]["clean"]["near_dedup"]["near_duplicates"] > 50
    return destdir, summary


@pytest.fixture(scope="module")
def one_task(one_task_run) -> Path:
    return one_task_run[0]


@pytest.mark.parametrize("tasks", [2, 3, 7])
def test_every_task_count_gives_the_same_bytes(near_corpus, one_task, tmp_path, tasks):
    summary = tokenmill.prepare(settings_for(near_corpus, tmp_path / "bin", tasks=tasks, near_dedup=True),
                                progress=False)
    assert len(summary.tasks["clean.train"]) == tasks
    assert_same_output(one_task, tmp_path / "bin")


def test_without_tasks_given_it_is_the_same(near_corpus, one_task, tmp_path):
    tokenmill.prepare(settings_for(near_corpus, tmp_path / "bin", near_dedup=True), progress=False)
    assert_same_output(one_task, tmp_path / "bin")


def test_sides_decide_what_is_a_near_duplicate(near_corpus, one_task_run, tmp_path):
    """A pair planted with only its source edited is a near-duplicate by its target alone, and so on (both
    sides: the default, the module's one-task run; every task count gives its bytes)."""
    config = build_config(settings_for(near_corpus, tmp_path / "unused", near_dedup=True))
    assert config.cleaning.near_dedup_sides == "both"
    counts = {"both": one_task_run[1].splits["train"]["clean"]["near_dedup"]["near_duplicates"]}
    for sides in ("src", "tgt"):
        summary = tokenmill.prepare(settings_for(near_corpus, tmp_path / sides, tasks=2, near_dedup=True,
                                                 near_dedup_sides=sides), progress=False)
        counts[sides] = summary.splits["train"]["clean"]["near_dedup"]["near_duplicates"]
    # tgt alone also catches the copies whose source was edited beyond reach, and the other way round
    assert counts["src"] != counts["tgt"] and min(counts.values()) > 50


def test_settings_are_recorded_only_when_set(near_corpus, one_task, tmp_path):
    manifest = json.loads((one_task / "manifest.json").read_text())["settings"]
    assert manifest["near_dedup"] is True and manifest["near_dedup_bands"] == 14
    tokenmill.prepare(settings_for(near_corpus, tmp_path / "off", tasks=1), progress=False)
    off = json.loads((tmp_path / "off" / "manifest.json").read_text())
    assert not [name for name in off["settings"] if name.startswith("near_dedup")]
    assert "near_dedup" not in off["summary"]["splits"]["train"]["clean"] if "summary" in off else True
    assert not (tmp_path / "off" / ".work" / "dropped" / "train.near.json").exists()


def test_yaml_keys_and_a_changed_setting_reruns_clean(near_corpus, tmp_path):
    config = write_config(tmp_path / "run.yaml", settings_for(near_corpus, tmp_path / "bin", tasks=2,
                                                             near_dedup=True, near_dedup_ngram=3))
    assert run_cli("-c", str(config), "-q", "--no-report").returncode == 0
    again = run_cli("-c", str(config), "-q", "--no-report", "--near-dedup-bands", "20")
    assert again.returncode == 0, again.stderr
    settings = json.loads((tmp_path / "bin" / "manifest.json").read_text())["settings"]
    assert (settings["near_dedup_ngram"], settings["near_dedup_bands"]) == (3, 20)


def test_one_side_of_monolingual_text_is_refused(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", pairs=50)
    with pytest.raises(tokenmill.errors.ConfigError, match="--near-dedup-sides tgt needs a target side"):
        build_config({"source_lang": "en", "trainpref": str(corpus / "train"), "near_dedup": True,
                      "near_dedup_sides": "tgt", "tokenizer": "none"}).validate()
