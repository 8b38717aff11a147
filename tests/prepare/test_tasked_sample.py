"""The tokenizer's training sample when it is smaller than the cleaned text: a tasked run draws it per clean
part and merges the smallest keys, and must train the plain run's model (the byte-identity tests of
test_tasks.py sample every line: their corpus is smaller than --input-sentence-size)."""

from __future__ import annotations

import logging
import re

import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import assert_same_output, settings_for


@pytest.mark.parametrize("joint", [True, False])
def test_a_sample_smaller_than_the_text_is_the_plain_runs_for_every_task_count(tmp_path, caplog, joint):
    corpus = write_corpus(tmp_path / "corpus", pairs=1200)
    small = {"input_sentence_size": 150, "joint_spm": joint, "vocab_size": 200}
    with caplog.at_level(logging.INFO, logger="tokenmill.prepare"):
        tokenmill.prepare(settings_for(corpus, tmp_path / "plain", **small), progress=False)
    sampled = [tuple(map(int, m.groups())) for m in re.finditer(r"sampled (\d+) of (\d+) lines", caplog.text)]
    assert sampled and all(k == 150 < n for k, n in sampled)  # a real sample, not every line
    for tasks in (2, 5):
        summary = tokenmill.prepare(settings_for(corpus, tmp_path / f"tasks{tasks}", tasks=tasks, **small),
                                    progress=False)
        assert len(summary.tasks["clean.train"]) == tasks
        assert_same_output(tmp_path / "plain", tmp_path / f"tasks{tasks}")
