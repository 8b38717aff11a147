"""A data directory prepared by the previous release's code is up to date for this code: every stage is
reported up to date and no file is written again (the same bytes and modification times), because the
file names, stage names, stage keys and fingerprint recipes did not change.

The previous release runs from its own source tree (``git archive`` of :data:`PREVIOUS`) in a separate
process; the test is skipped where the checkout does not hold that commit (a shallow clone)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import settings_for
from tokenmill.store.layout import PROVENANCE_SUFFIX
from tokenmill.vocab.tokenizer import train_tokenizer

PREVIOUS = "a8dace1"
"""The last commit before prepare/ was cut into stages (prepare/pipeline.py's Pipeline)."""
ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample"
REWRITTEN = {"manifest.json", "preprocess.log", ".lock"}
"""Written by every run, up to date or not (the manifest records how the run went); compared by content."""
RUN = ("import json, sys; from tokenmill.prepare import build_config, prepare; "
       "prepare(build_config(json.loads(sys.argv[1])), progress=False)")


@pytest.fixture(scope="module")
def previous_src(tmp_path_factory) -> Path:
    """The previous release's ``src`` folder, unpacked from this checkout's history."""
    found = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{PREVIOUS}^{{commit}}"],
                           capture_output=True, check=False)
    if found.returncode != 0:
        pytest.skip(f"this checkout does not hold commit {PREVIOUS} (a shallow clone): nothing to compare with")
    folder = tmp_path_factory.mktemp("previous")
    archive = folder / "src.tar"
    with archive.open("wb") as handle:
        subprocess.run(["git", "-C", str(ROOT), "archive", PREVIOUS, "src"], stdout=handle, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    return folder / "src"


def prepare_previously(src: Path, settings: dict) -> None:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-c", RUN, json.dumps(settings)], env=env, capture_output=True,
                          text=True, check=False, cwd=src.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    check = subprocess.run([sys.executable, "-c", "import tokenmill; print(tokenmill.__file__)"], env=env,
                           capture_output=True, text=True, check=True, cwd=src.parent)
    assert check.stdout.strip().startswith(str(src)), "the previous release ran from its own tree"


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` with its bytes and modification time (ns)."""
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def manifest_without_run(root: Path) -> dict:
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    manifest.pop("run")
    return manifest


def assert_up_to_date(previous_src: Path, settings: dict, destdir: Path) -> None:
    """Every stage of the previous release is up to date; the run only adds the provenance maps beside the
    stores (a stage of their own), and the manifest only gains them and the per-file input counts."""
    prepare_previously(previous_src, settings)
    before, manifest = snapshot(destdir), manifest_without_run(destdir)
    summary = tokenmill.prepare(settings, progress=False)
    assert summary.ran and all(name.startswith("provenance.") for name in summary.ran), summary.ran
    assert summary.skipped and all(name in summary.stage_seconds for name in summary.skipped)
    after = snapshot(destdir)
    added = sorted(set(after) - set(before))
    assert set(before) <= set(after) and added, added
    assert all(name.endswith(PROVENANCE_SUFFIX) or name.startswith(".state/provenance.") for name in added), added
    kept = [name for name in before if Path(name).name not in REWRITTEN]
    assert [name for name in kept if after[name] != before[name]] == [], "files written again"
    assert [name for name in before if Path(name).name == "preprocess.log"
            and after[name][0] != before[name][0]] == []
    now = manifest_without_run(destdir)
    for name in added:
        if name.endswith(PROVENANCE_SUFFIX) and not name.startswith(".work"):
            now["files"].pop(name)
    for split in now["summary"].get("splits", {}).values():
        assert split.pop("inputs")["files"], "the manifest lists the input files with their counts"
    assert now == manifest


def test_a_translation_folder_tasked_by_the_previous_release_is_up_to_date(previous_src, tmp_path):
    corpus = write_corpus(tmp_path / "corpus", pairs=900)
    destdir = tmp_path / "bin"
    settings = settings_for(corpus, destdir, tasks=2)
    assert_up_to_date(previous_src, settings, destdir)


def test_a_megatron_lm_folder_of_the_previous_release_is_up_to_date(previous_src, tmp_path):
    lines = (SAMPLE / "train.en").read_text(encoding="utf-8").splitlines()
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": line}) + "\n" for line in lines), encoding="utf-8")
    model = tmp_path / "tokenizer.json"
    train_tokenizer("hf", lines, {"kind": "byte-level-bpe", "vocab_size": 600}, model)
    settings = {"input": str(corpus), "output_prefix": str(tmp_path / "out" / "lm"), "json_keys": "text",
                "tokenizer_type": "HuggingFaceTokenizer", "tokenizer_model": str(model), "append_eod": True,
                "workers": 2}
    assert_up_to_date(previous_src, settings, tmp_path / "out")


def test_a_language_filtered_folder_stays_up_to_date_with_py3langid_and_reruns_with_heliport(previous_src, tmp_path):
    """py3langid was the previous release's only backend: naming it keeps that folder up to date; the default
    (heliport) identifies differently, so the clean stage runs again."""
    pytest.importorskip("heliport")
    corpus = write_corpus(tmp_path / "corpus", pairs=600)
    destdir = tmp_path / "bin"
    settings = settings_for(corpus, destdir, filters={"max_tokens": 80, "src_lang": "en", "tgt_lang": "zh"})
    with_py3langid = {**settings, "filters": {**settings["filters"], "lid_backend": "py3langid"}}
    prepare_previously(previous_src, settings)
    summary = tokenmill.prepare(with_py3langid, progress=False)
    assert all(name.startswith("provenance.") for name in summary.ran), summary.ran  # only the maps are added
    summary = tokenmill.prepare(settings, progress=False)
    assert "clean.train" in summary.ran
