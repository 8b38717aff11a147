"""A Slurm run of whitespace-tokenized text (--tokenizer none): its encode array has nothing to encode (the
words are counted in the tokenizer phase, the dictionary is made at the merge), so each array task must
finish as done instead of waiting for a model that this run never has."""

from __future__ import annotations

from pathlib import Path

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import assert_same_output, settings_for
from tokenmill.prepare import build_config
from tokenmill.prepare.run import prepare, run_task


def test_the_slurm_phases_of_a_whitespace_run_give_the_one_process_bytes(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", pairs=300)
    words = {"tokenizer": "none", "filters": {}}
    tokenmill.prepare(settings_for(corpus, tmp_path / "plain", **words), progress=False)
    config = build_config(settings_for(corpus, tmp_path / "bin", tasks=2, engine="slurm", **words))
    prepare(config, progress=False, phase="plan")
    for index in range(2):
        run_task(config, "clean", index)
    prepare(config, progress=False, phase="tokenizer")
    for index in range(2):
        records = run_task(config, "encode", index)
        assert [record["stage"] for record in records] == ["encode.train.en", "encode.train.zh"]
    prepare(config, progress=False, phase="merge")
    assert_same_output(tmp_path / "plain", tmp_path / "bin")
