"""Megatron's and fairseq's flags without a field of their own: taken where they mean something (the task
count, the one dataset format, monolingual data), else one error line naming tokenmill's way."""

from __future__ import annotations

import json

import pytest

from tests.prepare.tasks_corpus import write_jsonl
from tests.prepare.test_tasks import run_cli


def test_megatron_flags_with_a_meaning_here_are_taken(tmp_path):
    data = write_jsonl(tmp_path / "docs.jsonl", lines=300)
    args = ("--input", str(data), "--json-keys", "text", "--tokenizer", "hf", "--vocab-size", "300", "-q",
            "--no-report")
    plain = run_cli(*args, "--output-prefix", str(tmp_path / "plain" / "lm"))
    assert plain.returncode == 0, plain.stderr
    peer = run_cli(*args, "--output-prefix", str(tmp_path / "peer" / "lm"), "--partitions", "3", "--keep-newlines",
                   "--log-interval", "1000", "--dataset-impl", "mmap")
    assert peer.returncode == 0, peer.stderr
    for ext in (".bin", ".idx"):
        name = f"lm_text_document{ext}"
        assert (tmp_path / "peer" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes()
    run = json.loads((tmp_path / "peer" / "manifest.json").read_text())["run"]
    assert len(run["tasks"]["clean.train"]) == 3  # --partitions is the task count


def test_fairseq_only_source_is_monolingual(tmp_path):
    (tmp_path / "train.en").write_text("a line\nanother line\n", encoding="utf-8")
    args = ("--source-lang", "en", "--trainpref", str(tmp_path / "train"), "--tokenizer", "none", "--only-source",
            "--dataset-impl", "mmap", "-q", "--no-report")
    done = run_cli(*args, "--destdir", str(tmp_path / "bin"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "bin" / "train.bin").exists() and (tmp_path / "bin" / "dict.txt").exists()
    both = run_cli(*args, "--target-lang", "de", "--destdir", str(tmp_path / "bin2"))
    assert both.returncode == 2 and "error: --only-source with --target-lang" in both.stderr


@pytest.mark.parametrize(("flags", "message"), [
    (("--dataset-impl", "lazy"), "error: --dataset-impl lazy: tokenmill writes the mmap format"),
    (("--tokenizer-type", "Llama2Tokenizer"), "error: --tokenizer-type Llama2Tokenizer: use --tokenizer-type "
                                              "SentencePieceTokenizer"),
    (("--tokenizer-type", "SentencePieceTokenizer"), "error: --tokenizer-type SentencePieceTokenizer needs "
                                                     "--tokenizer-model"),  # Megatron refuses too; never trains one
    (("--tokenizer-type", "HuggingFaceTokenizer"), "error: --tokenizer-type HuggingFaceTokenizer needs "
                                                   "--tokenizer-model"),
])
def test_flags_without_a_meaning_here_name_the_equivalent(tmp_path, flags, message):
    data = write_jsonl(tmp_path / "docs.jsonl", lines=20)
    done = run_cli("--input", str(data), "--output-prefix", str(tmp_path / "out" / "lm"), *flags, "-q")
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
