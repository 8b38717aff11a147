"""spm_train's flags given to ``tokenmill prepare`` reach SentencePiece's trainer.

Each case runs the command line (a subprocess, on the bundled en-zh sample) with a set of spm_train flags and
checks that the staged ``spm.model`` is byte for byte the model ``SentencePieceTrainer`` trains from the same
sentences with the same options, spelled here by hand. A model records its whole trainer spec, so a flag
dropped anywhere between the command line and the trainer (the config, ``tokenizing.spm_options``,
``SentencePieceOptions.trainer_options``) changes the bytes even when it would not change the pieces.

The sentences: the sample's default ``--input-sentence-size`` (1,000,000) is larger than the corpus, so the
trainer gets every cleaned training line, source file then target file, as ``.work/clean`` holds them.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
import sentencepiece

from tests.peers import REPO

SAMPLE = REPO / "examples" / "sample"
# What tokenmill always hands the trainer: the whole sample from memory, one thread (--workers 1), quietly.
ALWAYS = dict(input_sentence_size=0, num_threads=1, minloglevel=2, character_coverage=1.0)
# tokenmill's defaults where they differ from spm_train's own
DEFAULTS = dict(model_type="unigram", shuffle_input_sentence=False, hard_vocab_limit=False, byte_fallback=False,
                max_sentence_length=4192, user_defined_symbols=[])


def run_prepare(out: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tokenmill", "prepare", "--source-lang", "en", "--target-lang", "zh", "--trainpref",
         str(SAMPLE / "train"), "--validpref", str(SAMPLE / "valid"), "--destdir", str(out), "--workers", "1",
         "--character-coverage", "1.0", "-q", "--no-report", *flags],
        capture_output=True, text=True, cwd=REPO,
    )


def training_lines(out: Path) -> list[str]:
    """The cleaned training lines the sampler hands the trainer (all of them: the sample is larger)."""
    lines: list[str] = []
    for lang in ("en", "zh"):
        lines += (out / ".work" / "clean" / f"train.{lang}").read_text(encoding="utf-8").split("\n")[:-1]
    return lines


def direct_model(lines: list[str], **options: object) -> bytes:
    """SentencePiece's own trainer, in memory."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model,
                                             **{**ALWAYS, **DEFAULTS, **options})
    return model.getvalue()


CASES = {
    "unigram": (
        ["--vocab-size", "400", "--normalization-rule-name", "nmt_nfkc_cf", "--split-digits", "--byte-fallback",
         "--max-sentence-length", "120", "--shuffle-input-sentence", "--user-defined-symbols", "__en__,__zh__",
         "--control-symbols", "<sep>,<cls>", "--spm-extra-options", "max_sentencepiece_length=6,pad_id=3"],
        dict(vocab_size=400, normalization_rule_name="nmt_nfkc_cf", split_digits=True, byte_fallback=True,
             max_sentence_length=120, shuffle_input_sentence=True, user_defined_symbols=["__en__", "__zh__"],
             control_symbols=["<sep>", "<cls>"], max_sentencepiece_length=6, pad_id=3),
    ),
    "bpe": (
        ["--model-type", "bpe", "--vocab-size", "300", "--hard-vocab-limit", "--normalization-rule-name", "identity"],
        dict(model_type="bpe", vocab_size=300, hard_vocab_limit=True, normalization_rule_name="identity"),
    ),
    "char": (
        ["--model-type", "char", "--vocab-size", "100", "--split-digits"],
        dict(model_type="char", vocab_size=100, split_digits=True),
    ),
    "word": (
        ["--model-type", "word", "--vocab-size", "300", "--normalization-rule-name", "nfkc_cf",
         "--user-defined-symbols", "__en__"],
        dict(model_type="word", vocab_size=300, normalization_rule_name="nfkc_cf", user_defined_symbols=["__en__"]),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_prepare_flags_train_the_model_spm_train_does(tmp_path, case):
    flags, options = CASES[case]
    out = tmp_path / "out"
    done = run_prepare(out, *flags)
    assert done.returncode == 0, done.stderr
    lines = training_lines(out)
    assert len(lines) > 600  # both sides of the 345 sample pairs, less what cleaning dropped
    expected = direct_model(lines, **options)
    staged = (out / "spm.model").read_bytes()
    assert staged == expected, f"{case}: the staged model is not spm_train's with {flags}"
    # and not what the same size and model type give without the other flags: they changed the model
    plain = {name: value for name, value in options.items() if name in ("vocab_size", "model_type")}
    assert staged != direct_model(lines, **plain)


def test_an_unreachable_hard_vocab_limit_is_one_error_line(tmp_path):
    done = run_prepare(tmp_path / "out", "--vocab-size", "5000", "--hard-vocab-limit")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --vocab-size 5000 cannot be reached"), done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "spm.model").exists()
