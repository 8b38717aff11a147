"""``run_task``: a Slurm array task of a stage the coordinator already merged runs nothing and succeeds (a
script submitted again after its run finished must not fail on the plans the merge removed)."""

from __future__ import annotations

import shutil

from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import assert_same_output, run_cli, settings_for, write_config


def test_tasks_of_a_merged_stage_run_nothing(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    settings = settings_for(corpus, tmp_path / "bin", tasks=2, engine="local")
    config = write_config(tmp_path / "run.yaml", settings)
    assert run_cli("-c", str(config), "-q", "--no-report").returncode == 0
    finished = tmp_path / "finished"
    shutil.copytree(tmp_path / "bin", finished)  # the finished run, to compare with after the phases below
    for phase in ("clean", "encode"):
        again = run_cli("-c", str(config), "--phase", phase, "--task", "1")
        assert again.returncode == 0, again.stderr
        assert "is already merged; nothing to do" in again.stdout
    merge = run_cli("-c", str(config), "-q", "--phase", "merge", "--no-report")
    assert merge.returncode == 0, merge.stderr
    assert_same_output(finished, tmp_path / "bin")
