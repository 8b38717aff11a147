"""What the commands say when the input is not what they expect (each message of issue 33 that lives in the
commands or the front door): what the folder is and what to do, refused manifests, empty ranges, a
dictionary from another run, the traceback kept for bug reports, and the warnings of ``prepare``."""

from __future__ import annotations

import logging
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tokenmill.cli import cli
from tokenmill.store import IndexedWriter
from tokenmill.store.manifest import write_manifest
from tokenmill.store.meaning import FAIRSEQ, store_meaning
from tokenmill.vocab.dictionary import Dictionary

SRC = Path(__file__).resolve().parents[2] / "src"


def tokenmill(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The real command line, in a fresh process."""
    environ = {**os.environ, "PYTHONPATH": str(SRC), **env}
    return subprocess.run([sys.executable, "-m", "tokenmill", *args], capture_output=True, text=True, env=environ,
                          check=False)


def error_of(*args: str) -> str:
    """The one ``error:`` line of a refused command (exit status 2, no traceback)."""
    result = tokenmill(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def make_pairs(folder: Path, *, record_dictionary: bool = True) -> Dictionary:
    """One direction's store with its dictionary, and a manifest that records which dictionary it was
    encoded with (as prepare writes it)."""
    folder.mkdir(parents=True, exist_ok=True)
    dictionary = Dictionary.from_counts({"hello": 5, "world": 3, "tokenmill": 2}, padding_factor=8)
    dictionary.save(folder / "dict.de.txt")
    with IndexedWriter(folder / "train.en-de.de", vocab_size=len(dictionary)) as writer:
        for line in ("hello world", "tokenmill world", "world"):
            writer.add_item(dictionary.encode_tokens(line.split()))
    meaning = store_meaning("dict.de.txt", FAIRSEQ, len(dictionary), dictionary.eos_index, "</s>")
    write_manifest(folder, meanings={"train.en-de.de": meaning} if record_dictionary else None)
    return dictionary


def test_batches_on_language_model_data_says_what_it_is(tmp_path):
    folder = tmp_path / "lm"
    folder.mkdir()
    with IndexedWriter(folder / "corpus_text_document", vocab_size=100) as writer:
        writer.add_item([5, 6, 7])
    line = error_of("batches", str(folder))
    assert "language-model data in the Megatron layout (corpus_text_document)" in line
    assert "--seq-length N --global-batch-size B" in line and "--src" not in line


def test_batches_on_raw_text_says_to_prepare_it(tmp_path):
    folder = tmp_path / "raw"
    folder.mkdir()
    (folder / "train.en").write_text("hello\n")
    (folder / "train.de").write_text("hallo\n")
    line = error_of("batches", str(folder))
    assert "holds no token stores, only other files (train.de, train.en)" in line
    assert "run tokenmill prepare" in line and "--src" not in line


@pytest.mark.parametrize("command", ["batches", "inspect"])
def test_a_manifest_that_is_no_manifest_is_refused_as_open_refuses_it(tmp_path, command):
    make_pairs(tmp_path / "bin")
    (tmp_path / "bin" / "manifest.json").write_text("[1,2,3]\n")
    line = error_of(command, str(tmp_path / "bin"))
    assert "manifest.json: not a tokenmill manifest" in line
    import tokenmill
    from tokenmill.errors import FormatError

    with pytest.raises(FormatError, match="not a tokenmill manifest"):
        tokenmill.open(tmp_path / "bin")


def test_inspect_empty_range_is_an_error(tmp_path):
    make_pairs(tmp_path / "bin")
    line = error_of("inspect", str(tmp_path / "bin" / "train.en-de.de"), "--range", "10:2")
    assert "--range" in line and "10:2 selects no items of the 3" in line
    ok = tokenmill("inspect", str(tmp_path / "bin" / "train.en-de.de"), "--range", "1:2")
    assert ok.returncode == 0 and "[1] ids:" in ok.stdout


def test_inspect_refuses_a_dictionary_from_another_run(tmp_path):
    make_pairs(tmp_path / "bin")
    store = str(tmp_path / "bin" / "train.en-de.de")
    assert tokenmill("inspect", store).returncode == 0
    other = Dictionary.from_counts({w: 9 - i for i, w in enumerate("a b c d e f g h i".split())}, padding_factor=8)
    other.save(tmp_path / "other.txt")
    line = error_of("inspect", store, "--dict", str(tmp_path / "other.txt"))
    assert f"{len(other)} entries" in line and "a dictionary from another run?" in line
    same_size = Dictionary.from_counts({"hello": 5, "world": 3, "mill": 2}, padding_factor=8)
    same_size.save(tmp_path / "bin" / "dict.de.txt")  # copied over the recorded one: same size, other words
    line = error_of("inspect", store)
    assert "is not the dictionary" in line and "checksum differs" in line and "tokenmill verify" in line


def test_inspect_without_a_recorded_dictionary_still_decodes(tmp_path):
    make_pairs(tmp_path / "bin", record_dictionary=False)
    assert tokenmill("inspect", str(tmp_path / "bin" / "train.en-de.de")).returncode == 0


def test_debug_variable_keeps_the_traceback(tmp_path):
    args = ("inspect", str(tmp_path / "nothing"))
    plain = tokenmill(*args)
    debug = tokenmill(*args, TOKENMILL_DEBUG="1")
    assert plain.returncode == debug.returncode == 2 and "Traceback" not in plain.stderr
    assert "Traceback (most recent call last)" in debug.stderr and "FormatError" in debug.stderr
    assert debug.stderr.strip().splitlines()[-1] == plain.stderr.strip()


UNK_WARNING = "direction a-b: 43.37% of b tokens are <unk>"


class _Summary:
    """What the prepare command reads of a run's summary."""

    def __init__(self) -> None:
        self.destdir = Path("out")
        self.warnings = [UNK_WARNING]
        self.ran = ["clean.train"]
        self.skipped: list[str] = []

    def table(self) -> str:
        return "split   lang       sentences"

    def report(self) -> str:
        return "\n".join([self.table(), "stage times (1.0s in all): clean.train 1.0s",
                          *(f"warning: {m}" for m in self.warnings)])


@pytest.fixture
def fake_run(monkeypatch, tmp_path):
    """prepare's command around a run that logs a warning of its own and one the summary keeps."""
    import tokenmill.commands.prepare as command

    def run(config, **kwargs):
        logging.getLogger("tokenmill.prepare.somewhere").warning("the sample was drawn in one pass")
        logging.getLogger("tokenmill.prepare.pipeline").warning("warning: %s", UNK_WARNING)
        return _Summary()

    monkeypatch.setattr(command, "prepare", run)
    (tmp_path / "train.en").write_text("a\n")
    (tmp_path / "train.de").write_text("b\n")
    return ["prepare", "--source-lang", "en", "--target-lang", "de", "--trainpref", str(tmp_path / "train"),
            "--destdir", str(tmp_path / "out"), "--no-report"]


def test_every_warning_has_the_prefix_and_is_repeated_in_the_summary(fake_run):
    result = CliRunner().invoke(cli, fake_run)
    assert result.exit_code == 0, result.output
    assert "warning: the sample was drawn in one pass" in result.stderr.splitlines()
    summary = result.stdout.splitlines()
    assert "warning: the sample was drawn in one pass" in summary
    assert summary.count("warning: direction a-b: 43.37% of b tokens are <unk>") == 1


def test_quiet_keeps_the_counts_and_the_warnings(fake_run):
    result = CliRunner().invoke(cli, [*fake_run, "-q"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert result.stdout.splitlines() == [
        "split   lang       sentences",
        "warning: direction a-b: 43.37% of b tokens are <unk>",
        "warning: the sample was drawn in one pass",
    ]


def test_ctrl_c_exits_130(tmp_path, monkeypatch):
    import tokenmill.commands.verify as command

    def interrupted(directory):
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "read_manifest", interrupted)
    result = CliRunner().invoke(cli, ["verify", str(tmp_path)])
    assert result.exit_code == 130 and "Aborted!" in result.output


def _limited_file_size() -> None:
    """The child may write no file over 300 kB: its writes then fail as on a full disk (EFBIG, no file named)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000))


def test_a_failed_write_names_the_stage_the_folder_and_the_fix(tmp_path):
    words = np.array([f"w{i}x" for i in range(2000)])  # an array: choice() would convert a list at every call
    rng = np.random.default_rng(0)
    for lang in ("en", "de"):
        lines = (" ".join(rng.choice(words, size=12)) for _ in range(20_000))
        (tmp_path / f"train.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "tokenmill", "prepare", "--trainpref", str(tmp_path / "train"), "--source-lang", "en",
         "--target-lang", "de", "--destdir", str(out), "--vocab-size", "300"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)}, preexec_fn=_limited_file_size,
        check=False,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: stage clean.train: writing in ") and str(out) in last, last
    assert "File too large" in last and "then re-run" in last
    assert not (out / "manifest.json").exists()


def prepare_error(*args: str) -> str:
    """The ``error:`` line that ends a refused ``prepare`` (after its progress lines)."""
    result = tokenmill("prepare", *args)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: "), result.stderr
    return last


def test_empty_training_files_are_named(tmp_path):
    for lang in ("en", "de"):
        (tmp_path / f"train.{lang}").write_text("", encoding="utf-8")
    line = prepare_error("--trainpref", str(tmp_path / "train"), "--source-lang", "en", "--target-lang", "de",
                         "--destdir", str(tmp_path / "out"))
    assert "the train files hold no text" in line
    assert str(tmp_path / "train.en") in line and str(tmp_path / "train.de") in line


def test_training_text_all_filtered_out_names_the_files_and_the_filter(tmp_path):
    (tmp_path / "train.en").write_text("hello world\n2024\n", encoding="utf-8")
    (tmp_path / "train.de").write_text("hallo welt\n2024\n", encoding="utf-8")
    line = prepare_error("--trainpref", str(tmp_path / "train"), "--source-lang", "en", "--target-lang", "de",
                         "--destdir", str(tmp_path / "out"), "--filter-min-chars", "50")
    assert "cleaning dropped all 2 read from" in line and str(tmp_path / "train.en") in line
    assert "filter dropped_chars 2" in line and "loosen the filters" in line


def test_megatron_input_that_matches_nothing_is_named_as_given(tmp_path):
    (tmp_path / "vocab.json").write_text('{"a": 0, "b": 1, "ab": 2}', encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b\n", encoding="utf-8")
    line = error_of("prepare", "--input", str(tmp_path / "nothing" / "*.jsonl"), "--output-prefix",
                    str(tmp_path / "out" / "corpus"), "--tokenizer-type", "GPT2BPETokenizer", "--vocab-file",
                    str(tmp_path / "vocab.json"), "--merge-file", str(tmp_path / "merges.txt"))
    assert line.startswith("error: --input: ") and "no file matches this pattern" in line, line
