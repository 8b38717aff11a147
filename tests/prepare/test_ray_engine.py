"""--engine ray on a real two-node Ray cluster: the same bytes as the local engine, also when a worker
process is SIGKILLed in the middle of a task; a run whose task keeps dying keeps what it finished.

Ray advertises the machine's own interface address, so the cluster, the driver and the prepare all run
inside a network namespace this test creates (``tests/ray_cluster.py``: a veth pair with 10.254.0.1/24
and a default route on it) and removes afterwards: no traffic reaches the machine's external address.
The single-node test runs the engine's own Ray, on loopback (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, set
for it by the engine and here as well).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import assert_same_output, run_cli, settings_for, write_config
from tests.ray_cluster import can_make_namespaces, run_in, two_node_ray

pytest.importorskip("ray")

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # a Ray cluster: in the serial part (tests/conftest.py)
needs_namespaces = pytest.mark.skipif(not can_make_namespaces(),
                                      reason="needs root and iproute2 to make a network namespace")


@pytest.fixture(scope="module")
def local(tmp_path_factory) -> tuple[Path, Path]:
    """(corpus, its one-process run in 3 tasks): what both Ray runs must equal, prepared once and only read."""
    root = tmp_path_factory.mktemp("ray-reference")
    corpus = write_corpus(root / "corpus", pairs=2000)
    tokenmill.prepare(settings_for(corpus, root / "local", tasks=3), progress=False)
    return corpus, root / "local"


@pytest.fixture
def cluster(tmp_path):
    """A head and a second node (one CPU each) inside a fresh network namespace; yields (namespace, address).

    Their workers SIGKILL themselves once, in the middle of task 1 of clean.train (the crash-test hook,
    armed through the nodes' environment)."""
    env = {**os.environ, "TOKENMILL_CRASH_AT": "clean.train#1:midway",
           "TOKENMILL_CRASH_ONCE": str(tmp_path / "crashed-once")}
    with two_node_ray(cpus=1, env=env) as (namespace, address):
        yield namespace, address


@needs_namespaces
def test_ray_cluster_gives_the_local_bytes_despite_a_killed_worker(local, cluster, tmp_path):
    namespace, address = cluster
    corpus, plain = local
    config = tmp_path / "ray.yaml"
    config.write_text(json.dumps(settings_for(corpus, tmp_path / "ray", tasks=3, engine="ray", ray_address=address)))
    done = run_in(namespace, sys.executable, "-m", "tokenmill", "prepare", "-c", str(config), "-q", "--no-report",
                  check=False, env={k: v for k, v in os.environ.items() if not k.startswith("TOKENMILL_CRASH")})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "crashed-once").exists()  # a worker did die in the middle of task 1
    assert_same_output(plain, tmp_path / "ray")
    rows = json.loads((tmp_path / "ray" / "manifest.json").read_text())["run"]["tasks"]
    assert [row["attempts"] for row in rows["clean.train"]] == [1, 2, 1]  # Ray ran task 1 again, alone
    nodes = {row["node"] for stage in rows.values() for row in stage}
    assert len(nodes) == 2  # both nodes took tasks


def test_a_ray_run_whose_task_keeps_dying_keeps_the_finished_tasks(local, tmp_path):
    """Out of retries, the run stops as a killed local task stops it: the output folder (a first run's)
    stays with the tasks that finished, and the next run does only the task left."""
    corpus, plain = local
    config = write_config(tmp_path / "ray.yaml", settings_for(corpus, tmp_path / "ray", tasks=3, engine="ray"))
    # RAY_AUTH_MODE: a local ray.init would otherwise write a token to ~/.ray/auth_token, which turns on token
    # authentication for every `ray start` after it on this machine (the two-node test's among them)
    loopback = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    crash = {"TOKENMILL_CRASH_AT": "clean.train#2:midway"}  # every attempt of task 2 dies
    failed = run_cli("-c", str(config), "-q", "--no-report", env={**loopback, **crash})
    assert failed.returncode == 2, failed.stderr
    assert "task clean.train #2 did not finish after 3 retries on the Ray cluster" in failed.stderr
    tasks = tmp_path / "ray" / ".work" / "tasks" / "clean.train"
    finished = [i for i in range(3) if (tasks / f"{i:05d}" / "done.json").exists()]
    assert 2 not in finished and finished  # the tasks that finished before it gave up are kept
    assert (tasks / "00002.attempts").read_text().strip() == "4"  # the first run and Ray's 3 retries

    again = run_cli("-c", str(config), "-q", "--no-report", env=loopback)
    assert again.returncode == 0, again.stderr
    rows = json.loads((tmp_path / "ray" / "manifest.json").read_text())["run"]["tasks"]["clean.train"]
    assert [row["attempts"] for row in rows if row["task"] in finished] == [1] * len(finished)  # not run again
    assert rows[2]["attempts"] == 5
    assert_same_output(plain, tmp_path / "ray")


def test_the_engine_s_own_ray_advertises_loopback_even_when_ray_was_imported_first():
    """Ray reads RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER once, when it is imported, and otherwise advertises the
    machine's interface address. The engine's own Ray must still use 127.0.0.1: the address is looked up
    here without starting Ray (no socket is opened)."""
    probe = (
        "import ray\n"
        "from ray._private import services\n"
        "from tokenmill.prepare.ray_engine import _stay_on_loopback\n"
        "_stay_on_loopback()\n"
        "print(services.get_node_ip_address())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "127.0.0.1"
