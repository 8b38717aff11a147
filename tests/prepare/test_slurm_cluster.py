"""``--engine slurm`` on a real Slurm: the generated script submitted with sbatch to a one-node slurmctld +
slurmd (Debian's slurm-wlm, started by the test in a network namespace), its arrays and dependencies run
by Slurm itself; the output equals the one-process run byte for byte, and submitting the script again
redoes no finished task."""

from __future__ import annotations

import json

import pytest

from tests.prepare.test_tasks import assert_same_output, run_cli, settings_for, write_config
from tests.slurm_cluster import can_start_slurm, one_node_slurm

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not can_start_slurm(),
    reason="needs root, iproute2 and Slurm (apt-get install slurmctld slurmd slurm-client munge: scripts/test.sh)",
)]


def test_the_script_on_a_real_slurm_gives_the_one_process_bytes(tasks_corpus, tasks_one_process, tmp_path):
    corpus, plain = tasks_corpus, tasks_one_process  # shared with test_tasks.py (tests/prepare/conftest.py)
    destdir = tmp_path / "bin"
    config = write_config(tmp_path / "run.yaml", settings_for(corpus, destdir, tasks=3, engine="slurm"))
    made = run_cli("-c", str(config))
    assert made.returncode == 0, made.stderr
    script = destdir / ".work" / "slurm" / "submit.sh"
    logs = tmp_path / "logs"
    logs.mkdir()
    with one_node_slurm() as slurm:
        submitted = slurm.run("bash", str(script), cwd=logs)
        assert submitted.stdout.startswith("submitted: plan "), submitted.stdout
        slurm.wait_idle(timeout=600)
        # every job ran (and ended) under Slurm: its output files are in the folder sbatch was run from
        outputs = sorted(p.name for p in logs.glob("slurm-*.out"))
        assert len(outputs) >= 5, outputs
        assert (destdir / "manifest.json").exists(), "\n".join(p.read_text()[-800:] for p in logs.glob("slurm-*.out"))
        assert_same_output(plain, destdir)
        status = run_cli("-c", str(script.parent / "config.yaml"), "--status")
        assert status.returncode == 0 and "left" not in status.stdout.replace("0 left", ""), status.stdout

        # submitted again (a user re-running it to finish a failed run): the jobs find their work done
        manifest = json.loads((destdir / "manifest.json").read_text())
        slurm.run("bash", str(script), cwd=logs)
        slurm.wait_idle(timeout=300)
        assert_same_output(plain, destdir)
        assert json.loads((destdir / "manifest.json").read_text())["files"] == manifest["files"]
