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


def _spm_model(folder, name="spm.model"):
    import sentencepiece

    lines = [f"hello world tokenmill {i % 7}" for i in range(200)]
    prefix = folder / name.removesuffix(".model")
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=str(prefix), vocab_size=30,
                                             hard_vocab_limit=False, minloglevel=2)
    return sentencepiece.SentencePieceProcessor(model_file=str(folder / name))


def test_inspect_finds_the_spm_model_beside_the_store_and_decodes_text(tmp_path):
    model = _spm_model(tmp_path, "spm.de.model")
    ids = model.encode("hello world")
    with IndexedWriter(tmp_path / "train.en-de.de", vocab_size=model.get_piece_size()) as writer:
        writer.add_item(ids)
    result = CliRunner().invoke(cli, ["inspect", str(tmp_path / "train.en-de.de"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["spm_model"] == str(tmp_path / "spm.de.model") and report["dictionary"] is None
    assert report["shown"][0]["text"] == "hello world"


def test_inspect_finds_dict_txt_and_spm_model_for_a_language_model_store(tmp_path):
    model = _spm_model(tmp_path)
    pieces = model.encode("hello world", out_type=str)
    dictionary = Dictionary.from_counts(dict.fromkeys(pieces, 1), padding_factor=1)
    dictionary.save(tmp_path / "dict.txt")
    (tmp_path / "dict.en.txt").write_text("other 1\n", encoding="utf-8")  # not this store's
    with IndexedWriter(tmp_path / "train", vocab_size=len(dictionary)) as writer:
        writer.add_item([*dictionary.encode_tokens(pieces), dictionary.eos_index])
    result = CliRunner().invoke(cli, ["inspect", str(tmp_path / "train"), "--index", "0"])
    assert result.exit_code == 0, result.output
    assert f"dictionary: {tmp_path / 'dict.txt'}" in result.output
    assert "text:   hello world" in result.output


def test_inspect_looks_above_a_shard_folder(tmp_path):
    _spm_model(tmp_path)
    shard = tmp_path / "shard000"
    shard.mkdir()
    make_data(shard)
    result = CliRunner().invoke(cli, ["inspect", str(shard / "train.en-de.de"), "--json"])
    assert json.loads(result.output)["spm_model"] == str(tmp_path / "spm.model")


def test_inspect_a_directory_lists_its_stores(tmp_path):
    make_data(tmp_path)
    shard = tmp_path / "shard001"
    shard.mkdir()
    with IndexedWriter(shard / "train.en-de.en", vocab_size=100, layout="megatron") as writer:
        writer.add_item([5, 6, 2])
    (tmp_path / ".work").mkdir()
    with IndexedWriter(tmp_path / ".work" / "hidden", vocab_size=100) as writer:
        writer.add_item([1])
    result = CliRunner().invoke(cli, ["inspect", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{tmp_path}: 2 stores"
    assert "prefix" in lines[1] and "layout" in lines[1] and "tokens" in lines[1]
    assert lines[2].split() == ["shard001/train.en-de.en", "megatron", "uint16", "1", "3"]
    assert lines[3].split() == ["train.en-de.de", "fairseq", "uint16", "2", "6"]
    report = json.loads(CliRunner().invoke(cli, ["inspect", str(tmp_path), "--json"]).output)
    assert [store["prefix"] for store in report["stores"]] == ["shard001/train.en-de.en", "train.en-de.de"]


def _error_line(args):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_inspect_files_of_the_wrong_kind_are_one_error_line(tmp_path):
    make_data(tmp_path)
    store = str(tmp_path / "train.en-de.de")
    line = _error_line(["inspect", store, "--spm", str(tmp_path / "dict.de.txt")])
    assert "--spm:" in line and "dict.de.txt is not a SentencePiece model" in line
    (tmp_path / "garbage").write_bytes(b"\x80\x81\x82")
    assert "--dict: " in _error_line(["inspect", store, "--dict", str(tmp_path / "garbage")])
    (tmp_path / "empty").mkdir()
    assert "holds no token stores" in _error_line(["inspect", str(tmp_path / "empty")])
    assert "not the directory" in _error_line(["inspect", str(tmp_path), "--index", "0"])
    assert "out of range" in _error_line(["inspect", store, "--index", "9"])


def test_verify_without_a_manifest_is_one_error_line(tmp_path):
    line = _error_line(["verify", str(tmp_path)])
    assert "manifest.json" in line and "tokenmill prepare" in line
    (tmp_path / "manifest.json").write_text("[1, 2", encoding="utf-8")
    assert "not valid JSON" in _error_line(["verify", str(tmp_path)])


def test_inspect_decodes_a_t2t_store_with_the_vocab_found_beside_it(tmp_path):
    (tmp_path / "vocab.subwords").write_text("'<pad>_'\n'<EOS>_'\n'hello_'\n'world_'\n", encoding="utf-8")
    with IndexedWriter(tmp_path / "train", vocab_size=4) as writer:
        writer.add_item([2, 3, 1])
    report = json.loads(CliRunner().invoke(cli, ["inspect", str(tmp_path / "train"), "--json"]).output)
    assert report["t2t_vocab"] == str(tmp_path / "vocab.subwords")
    assert report["shown"][0]["text"] == "hello world"
    (tmp_path / "garbage").write_bytes(b"\xff\xfe")
    line = _error_line(["inspect", str(tmp_path / "train"), "--t2t-vocab", str(tmp_path / "garbage")])
    assert line.startswith("error: --t2t-vocab: ") and "not valid UTF-8" in line
