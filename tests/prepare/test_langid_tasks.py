"""A language filter's output, counts and language mix are the same for any task count (heliport backend)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import assert_same_output, settings_for

pytest.importorskip("heliport")
FILTERS = {"max_tokens": 80, "src_lang": "eng", "tgt_lang": "zho_Hans"}


@pytest.mark.slow
def test_language_filter_is_the_same_for_any_task_count(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", pairs=1500)
    plain = tmp_path / "plain" / "bin"
    summary = tokenmill.prepare(settings_for(corpus, plain, filters=FILTERS), progress=False)
    counts = summary.splits["train"]["clean"]["filter"]
    assert counts["dropped_langid"] > 0 and counts["lid_src_eng"] > 0 and counts["lid_tgt_cmn"] > 0
    log = (plain / "preprocess.log").read_text(encoding="utf-8")
    assert "train language mix src: eng " in log and "train language mix tgt: cmn " in log
    for tasks in (2, 3):
        destdir = tmp_path / f"tasks{tasks}" / "bin"
        tokenmill.prepare(settings_for(corpus, destdir, filters=FILTERS, tasks=tasks), progress=False)
        assert_same_output(plain, destdir)
