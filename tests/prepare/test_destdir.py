"""A run owns its output directory: no stale file survives a re-run, a failed run changes nothing
that was there, and ``verify`` checks what the ids mean, not only their bytes."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.prepare.conftest import write_lines
from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.prepare import build_config, prepare
from tokenmill.store import IndexedDataset
from tokenmill.store.manifest import read_manifest, verify_directory
from tokenmill.vocab.dictionary import Dictionary


def snapshot(directory):
    """Every published file (not the work/state folders) -> its bytes."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not {".work", ".state", ".lock"} & set(p.relative_to(directory).parts)
    }


def test_rerun_with_other_settings_removes_what_it_no_longer_produces(sample_settings):
    """The defect users met: valid/test encoded with the old 8000-piece model stayed and verified OK."""
    first = prepare(build_config({**sample_settings, "vocab_size": 300}), progress=False)
    out = first.destdir
    assert (out / "valid.en-zh.zh.idx").exists() and (out / "test.en-zh.en.bin").exists()
    settings = {**sample_settings, "vocab_size": 120, "validpref": [], "testpref": []}
    prepare(build_config(settings), progress=False)
    left = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert not [name for name in left if name.startswith(("valid.", "test."))], left
    manifest = read_manifest(out)
    assert sorted(manifest.stores) == ["train.en-zh.en", "train.en-zh.zh"]
    assert set(manifest.files) == set(snapshot(out)) - {"manifest.json"}
    assert verify_directory(out) == []
    size = len(Dictionary.load(out / "dict.en.txt"))
    assert int(IndexedDataset(out / "train.en-zh.zh").tokens.max()) < size


def test_rerun_in_another_tokenizer_removes_the_old_model(corpus, tmp_path):
    settings = {"source_lang": "en", "target_lang": "de", "trainpref": str(corpus / "train"),
                "validpref": str(corpus / "valid"), "destdir": str(tmp_path / "bin"), "vocab_size": 40,
                "character_coverage": 1.0}
    out = prepare(build_config(settings), progress=False).destdir
    assert (out / "spm.model").exists() and (out / "spm.vocab").exists()
    prepare(build_config({**settings, "tokenizer": "t2t-subword", "approx_vocab_size": 60}), progress=False)
    assert not (out / "spm.model").exists() and not (out / "dict.en.txt").exists()
    assert (out / "vocab.subwords").exists()
    assert verify_directory(out) == []


def test_verify_catches_ids_that_do_not_fit_the_dictionary_beside_them(sample_settings, tmp_path):
    big = prepare(build_config({**sample_settings, "vocab_size": 300}), progress=False).destdir
    small_settings = {**sample_settings, "vocab_size": 150, "destdir": str(tmp_path / "small")}
    small = prepare(build_config(small_settings), progress=False).destdir
    shutil.copyfile(small / "dict.zh.txt", big / "dict.zh.txt")  # a dictionary copied in from another run
    problems = verify_directory(big)
    assert any("dict.zh.txt" in p and "entries" in p and "another run" in p for p in problems), problems
    assert any(p.startswith("train.en-zh.zh: largest id") and "does not fit dict.zh.txt" in p for p in problems)


def test_verify_catches_items_that_do_not_end_as_the_manifest_says(corpus, tmp_path):
    settings = {"source_lang": "en", "target_lang": "de", "trainpref": str(corpus / "train"),
                "validpref": str(corpus / "valid"), "destdir": str(tmp_path / "bin"), "tokenizer": "none"}
    out = prepare(build_config(settings), progress=False).destdir
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    entry = manifest["stores"]["train.en-de.de"]
    assert entry["vocab"] == "dict.de.txt" and entry["eos"] == 2 and entry["eos_symbol"] == "</s>"
    manifest["stores"]["train.en-de.de"]["eos"] = 3
    manifest["vocab"]["special"]["unk"] = 5
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    problems = verify_directory(out)
    assert "train.en-de.de: 40 of 40 items do not end with id 3 (</s>) as the manifest says" in problems
    assert any(p.startswith("dict.de.txt: id 5 is") and "'<unk>'" in p for p in problems), problems


def test_a_failed_first_run_leaves_no_directory(corpus, tmp_path):
    (corpus / "train.de").write_bytes((corpus / "train.de").read_bytes().replace(b"t7 ", b"t7 \xff "))
    settings = {"source_lang": "en", "target_lang": "de", "trainpref": str(corpus / "train"),
                "validpref": str(corpus / "valid"), "destdir": str(tmp_path / "bin"), "tokenizer": "none"}
    with pytest.raises(TokenmillError, match=r"train\.de"):
        prepare(build_config(settings), progress=False)
    assert not (tmp_path / "bin").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TokenmillError):
        prepare(build_config({**settings, "destdir": str(empty)}), progress=False)
    assert empty.is_dir() and list(empty.iterdir()) == [], "a folder the user made stays, empty"


def test_a_failed_rerun_leaves_the_previous_output_untouched(corpus, tmp_path):
    align = ["0-0 1-1"] * 40
    write_lines(corpus / "train.align", align)
    write_lines(corpus / "valid.align", ["0-0", "0-0 1-1"])
    settings = {"source_lang": "en", "target_lang": "de", "trainpref": str(corpus / "train"),
                "validpref": str(corpus / "valid"), "destdir": str(tmp_path / "bin"), "tokenizer": "none",
                "align_suffix": "align"}
    out = prepare(build_config(settings), progress=False).destdir
    before = snapshot(out)
    write_lines(corpus / "train.align", [*align[:30], "0-0 oops", *align[31:]])  # fails in the last stage
    with pytest.raises(TokenmillError, match="Pharaoh"):
        prepare(build_config({**settings, "nwordssrc": 10, "padding_factor": 4}), progress=False)
    assert snapshot(out) == before, "nothing is published before every stage has finished"
    assert verify_directory(out) == []


def test_a_folder_with_files_tokenmill_did_not_write_is_refused_before_any_work(corpus, tmp_path):
    destdir = tmp_path / "mine"
    destdir.mkdir()
    (destdir / "notes.txt").write_text("my notes\n", encoding="utf-8")
    settings = {"source_lang": "en", "target_lang": "de", "trainpref": str(corpus / "train"),
                "validpref": str(corpus / "valid"), "destdir": str(destdir), "tokenizer": "none"}
    with pytest.raises(ConfigError, match=r"holds files tokenmill did not write \(notes.txt\)"):
        prepare(build_config(settings), progress=False)
    assert sorted(p.name for p in destdir.iterdir()) == ["notes.txt"], "nothing was written"


def test_monolingual_output_has_fairseq_language_model_names(corpus, tmp_path):
    settings = {"source_lang": "en", "trainpref": str(corpus / "train"), "validpref": str(corpus / "valid"),
                "destdir": str(tmp_path / "lm"), "tokenizer": "none"}
    out = prepare(build_config(settings), progress=False).destdir
    names = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert not [n for n in names if "None" in n], names
    assert {"train.bin", "train.idx", "valid.bin", "valid.idx", "dict.txt"} <= set(names)


def test_summary_says_what_a_user_needs_to_know(tmp_path):
    lines = [f"line {i} of a small text" for i in range(60)] + ["line 3 of a small text"] * 20
    write_lines(tmp_path / "train.en", lines)
    settings = {"source_lang": "en", "trainpref": str(tmp_path / "train"), "destdir": str(tmp_path / "lm"),
                "vocab_size": 32000, "layout": "megatron", "append_eod": True, "eod_symbol": "<|endoftext|>"}
    summary = prepare(build_config(settings), progress=False)
    assert any("spm.model has" in w and "not the 32000 asked for" in w for w in summary.warnings), summary.warnings
    assert any(w.startswith("no validation data for en") for w in summary.warnings)
    table = summary.table()
    assert "train dedup: pairs 80, duplicates 20 (25.0%)" in table, table
    eod = Dictionary.load(summary.destdir / "dict.txt").index("<|endoftext|>")
    assert f"end of document: <|endoftext|> = id {eod}" in table
    manifest = read_manifest(summary.destdir)
    assert manifest.vocab["eod"] == {"symbol": "<|endoftext|>", "id": eod}
    assert set(manifest.run["stages"]) >= {"clean.train", "tokenizer", "encode.train.en", "binarize.train.en"}
    assert all(row["seconds"] >= 0 and row["ran"] for row in manifest.run["stages"].values())
    assert manifest.run["warnings"] == summary.warnings
    report = summary.report()
    assert "stage times" in report and "tokenizer " in report and "warning: spm.model has" in report
