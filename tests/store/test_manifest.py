"""manifest.json lists every file with checksums; verify finds every mismatch."""

from __future__ import annotations

import json

import pytest

from tokenmill.errors import FormatError
from tokenmill.store import IndexedWriter
from tokenmill.store.manifest import MANIFEST_NAME, read_manifest, safe_member, verify_directory, write_manifest


@pytest.fixture
def directory(tmp_path):
    with IndexedWriter(tmp_path / "train.en-de.en", vocab_size=100) as writer:
        writer.add_item([4, 5, 2])
        writer.add_item([6, 2])
    (tmp_path / "dict.en.txt").write_text("hello 3\n", encoding="utf-8")
    (tmp_path / "shard000").mkdir()
    with IndexedWriter(tmp_path / "shard000" / "valid.en-de.en", layout="megatron", vocab_size=100) as writer:
        writer.add_document([7, 8, 2])
    write_manifest(tmp_path, settings={"seed": 1}, vocab={"size": 100, "special": {"pad": 1}})
    return tmp_path


def test_manifest_describes_files_and_stores(directory):
    manifest = read_manifest(directory)
    assert set(manifest.files) == {
        "dict.en.txt",
        "train.en-de.en.bin",
        "train.en-de.en.idx",
        "shard000/valid.en-de.en.bin",
        "shard000/valid.en-de.en.idx",
    }
    expected = {"layout": "fairseq", "dtype": "uint16", "items": 2, "tokens": 5, "documents": None}
    assert manifest.stores["train.en-de.en"] == expected
    assert manifest.stores["shard000/valid.en-de.en"]["documents"] == 1
    assert manifest.settings == {"seed": 1}
    assert manifest.vocab["special"] == {"pad": 1}
    assert all(len(entry["xxh3_128"]) == 32 for entry in manifest.files.values())


def test_verify_passes_on_an_untouched_directory(directory):
    assert verify_directory(directory) == []


def test_verify_reports_every_mismatch(directory):
    (directory / "dict.en.txt").write_text("hello 4\n", encoding="utf-8")  # same size, other bytes
    (directory / "shard000" / "valid.en-de.en.bin").unlink()
    (directory / "stray.txt").write_text("x", encoding="utf-8")
    problems = verify_directory(directory)
    assert any(p.startswith("dict.en.txt: xxh3_128") for p in problems)
    assert any("shard000/valid.en-de.en.bin: listed in the manifest but missing" in p for p in problems)
    assert any("stray.txt: present but not listed" in p for p in problems)
    assert any("has no data file" in p for p in problems)


def test_verify_catches_a_store_whose_counts_changed(directory):
    manifest = json.loads((directory / MANIFEST_NAME).read_text())
    manifest["stores"]["train.en-de.en"]["items"] = 3
    (directory / MANIFEST_NAME).write_text(json.dumps(manifest))
    assert verify_directory(directory) == ["train.en-de.en: items is 2, manifest says 3"]


def test_verify_without_or_with_broken_manifest(tmp_path):
    assert "does not exist" in verify_directory(tmp_path)[0]
    (tmp_path / MANIFEST_NAME).write_text("{not json")
    assert "not valid JSON" in verify_directory(tmp_path)[0]


def test_manifest_paths_cannot_leave_the_directory(tmp_path):
    for bad in ("../etc/passwd", "/etc/passwd", "a/../../b"):
        with pytest.raises(FormatError, match="leaves the directory"):
            safe_member(tmp_path, bad)
    manifest = {"format": "tokenmill", "format_version": 1, "files": {"../x": {"bytes": 1}}, "stores": {}}
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(manifest))
    assert any("leaves the directory" in p for p in verify_directory(tmp_path))
