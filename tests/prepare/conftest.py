"""Small real corpora on disk for the prepare tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import settings_for
from tests.shared_once import built_once
from tokenmill.prepare import build_config, prepare

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path) -> Path:
    """A whitespace-tokenized en-de corpus where every word is easy to trace."""
    data = tmp_path / "raw"
    data.mkdir()
    src = [f"s{i} w{i % 5} w{i % 3} x" for i in range(40)]
    tgt = [f"t{i} v{i % 4} y" for i in range(40)]
    write_lines(data / "train.en", src)
    write_lines(data / "train.de", tgt)
    write_lines(data / "valid.en", ["s100 w1", "s101 w2"])
    write_lines(data / "valid.de", ["t100 v1", "t101 v2"])
    return data


@pytest.fixture
def sample_settings(tmp_path) -> dict:
    """The bundled English-Chinese sample with a tiny SentencePiece model."""
    return {
        "source_lang": "en",
        "target_lang": "zh",
        "trainpref": str(SAMPLE / "train"),
        "validpref": str(SAMPLE / "valid"),
        "testpref": str(SAMPLE / "test"),
        "destdir": str(tmp_path / "out"),
        "vocab_size": 200,
        "character_coverage": 1.0,
        "joined_dictionary": True,
        "normalize": {"nfkc": True, "fullwidth": True},
        "workers": 2,
    }


@pytest.fixture(scope="module")
def sample_model(tmp_path_factory) -> Path:
    """A 200-piece SentencePiece model of the bundled en-zh sample (characters outside the sample are unknown
    to it), trained once per test module."""
    out = tmp_path_factory.mktemp("model") / "out"
    prepare(build_config({"source_lang": "en", "target_lang": "zh", "trainpref": str(SAMPLE / "train"),
                          "destdir": str(out), "vocab_size": 200, "joined_dictionary": True, "workers": 1}),
            progress=False)
    return out / "spm.model"


@pytest.fixture(scope="session")
def tasks_corpus(tmp_path_factory) -> Path:
    """The corpus of ``tests/prepare/tasks_corpus.py`` (3000 pairs), written once and only read by the tests
    that cut it into tasks (``test_tasks.py``, ``test_slurm_cluster.py``)."""
    return built_once(tmp_path_factory, "tasks-corpus", write_corpus)


@pytest.fixture(scope="session")
def tasks_one_process(tasks_corpus, tmp_path_factory) -> Path:
    """The plain run of :func:`tasks_corpus` (one process, no tasks) that every tasked run must equal,
    prepared once per test run (shared by pytest-xdist's workers) and only read."""

    def plain_run(folder: Path) -> Path:
        destdir = folder / "bin"
        summary = tokenmill.prepare(settings_for(tasks_corpus, destdir), progress=False)
        assert summary.tasks == {}
        steps = summary.splits["train"]["clean"]
        # the corpus does its job: duplicates, leaks and pairs too long in pieces
        assert steps["dedup"]["duplicates"] > 500 and steps["leakage"]["leaked"] > 20
        assert steps["pieces"]["dropped_tokens"] > 10
        return destdir

    return built_once(tmp_path_factory, "plain", plain_run)
