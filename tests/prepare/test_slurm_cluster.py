"""``--engine slurm`` on a real Slurm: the generated script submitted with sbatch to a one-node slurmctld +
slurmd (Debian's slurm-wlm, started by the test in a network namespace), its arrays and dependencies run
by Slurm itself; the output equals the one-process run byte for byte, and submitting the script again
redoes no finished task."""

from __future__ import annotations

import json

import pytest

from tests.prepare.test_multilingual_near_dedup import DIRECTIONS, corpus, many_directions, run  # noqa: F401
from tests.prepare.test_tasks import assert_same_output, run_cli, settings_for, write_config
from tests.slurm_cluster import can_start_slurm, one_node_slurm

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.skipif(  # a Slurm cluster: the serial part
    not can_start_slurm(),
    reason="needs root, iproute2 and Slurm (apt-get install slurmctld slurmd slurm-client munge: scripts/test.sh)",
)]


def test_the_script_on_a_real_slurm_gives_the_one_process_bytes(tasks_corpus, tasks_one_process, corpus,  # noqa: F811
                                                                 tmp_path):
    """One cluster start, two runs: a single-direction one, and a --directions one with --near-dedup (each
    array holds both directions' tasks)."""
    plain = tasks_one_process  # shared with test_tasks.py (tests/prepare/conftest.py)
    destdir = tmp_path / "bin"
    config = write_config(tmp_path / "run.yaml", settings_for(tasks_corpus, destdir, tasks=3, engine="slurm"))
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

        raw, _ = corpus
        run(raw, tmp_path / "many-one")
        many = many_directions(raw, tmp_path / "many", tasks=2, engine="slurm")
        made = run_cli("-c", str(write_config(tmp_path / "many.yaml", many)))
        assert made.returncode == 0, made.stderr
        slurm.run("bash", str(tmp_path / "many" / ".work" / "slurm" / "submit.sh"), cwd=logs)
        slurm.wait_idle(timeout=600)
        assert (tmp_path / "many" / "manifest.json").exists(), "\n".join(
            p.read_text()[-800:] for p in logs.glob("slurm-*.out"))
        assert_same_output(tmp_path / "many-one", tmp_path / "many")
        tables = json.loads((tmp_path / "many" / "manifest.json").read_text())["run"]["tasks"]
        assert [len(tables[f"{name}.encode.train.{name.split('-')[1]}"]) for name in DIRECTIONS] == [2, 2]
