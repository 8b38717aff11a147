"""The inspect and verify commands, run through the real CLI entry point."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from tokenmill.cli import cli
from tokenmill.store import IndexedWriter
from tokenmill.store.manifest import write_manifest
from tokenmill.vocab.dictionary import Dictionary


def make_data(tmp_path):
    dictionary = Dictionary.from_counts({"hello": 5, "world": 3, "tokenmill": 2}, padding_factor=8)
    dictionary.save(tmp_path / "dict.de.txt")
    with IndexedWriter(tmp_path / "train.en-de.de", vocab_size=len(dictionary)) as writer:
        writer.add_item(dictionary.encode_tokens("hello world".split()))
        writer.add_item(dictionary.encode_tokens("tokenmill unknownword".split()))
    write_manifest(tmp_path)
    return dictionary


def test_inspect_shows_ids_tokens_and_text_with_the_dictionary_found_beside_the_store(tmp_path):
    make_data(tmp_path)
    result = CliRunner().invoke(cli, ["inspect", str(tmp_path / "train.en-de.de"), "--index", "1"])
    assert result.exit_code == 0, result.output
    assert "fairseq layout, uint16, 2 items, 6 tokens" in result.output
    assert "tokens: tokenmill <unk> </s>" in result.output


def test_inspect_json_range(tmp_path):
    make_data(tmp_path)
    result = CliRunner().invoke(cli, ["inspect", str(tmp_path / "train.en-de.de.bin"), "--range", "0:2", "--json"])
    report = json.loads(result.output)
    assert [item["text"] for item in report["shown"]] == ["hello world", "tokenmill <unk>"]
    assert report["items"] == 2 and report["length"]["max"] == 3


def test_inspect_bad_store_is_one_error_line_not_a_traceback(tmp_path):
    make_data(tmp_path)
    (tmp_path / "train.en-de.de.idx").unlink()
    proc = subprocess.run([sys.executable, "-m", "tokenmill", "inspect", str(tmp_path / "train.en-de.de")],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "has no index" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_verify_exit_codes(tmp_path):
    make_data(tmp_path)
    runner = CliRunner()
    assert runner.invoke(cli, ["verify", str(tmp_path)]).exit_code == 0
    with open(tmp_path / "train.en-de.de.bin", "r+b") as handle:
        handle.write(b"\xff")
    result = runner.invoke(cli, ["verify", str(tmp_path)])
    assert result.exit_code == 1
    assert "train.en-de.de.bin: xxh3_128" in result.output


def test_version_and_help():
    proc = subprocess.run([sys.executable, "-m", "tokenmill", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("tokenmill, version ")
    assert "inspect" in CliRunner().invoke(cli, ["--help"]).output
