"""--near-dedup on the Ray engine (the engine's own one-node Ray, on loopback): the same bytes as the local
engine. Ray counts lines and settles exact duplicates in task rounds of its own, so this also checks that
near-dedup's positions agree with theirs."""

from __future__ import annotations

import json

import pytest

import tokenmill
from tests.prepare.test_multilingual_near_dedup import DIRECTIONS, corpus, many_directions  # noqa: F401
from tests.prepare.test_near_dedup import near_corpus  # noqa: F401  (the fixture)
from tests.prepare.test_tasks import assert_same_output, run_cli, settings_for, write_config

pytest.importorskip("ray")

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # a Ray cluster: in the serial part (tests/conftest.py)
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


def test_ray_gives_the_local_bytes(near_corpus, tmp_path):  # noqa: F811
    local = tokenmill.prepare(settings_for(near_corpus, tmp_path / "local", tasks=2, near_dedup=True),
                              progress=False)
    assert local.splits["train"]["clean"]["near_dedup"]["near_duplicates"] > 50
    config = write_config(tmp_path / "ray.yaml", settings_for(near_corpus, tmp_path / "ray", tasks=3, engine="ray",
                                                             near_dedup=True))
    done = run_cli("-c", str(config), "-q", "--no-report", env=LOOPBACK)
    assert done.returncode == 0, done.stderr
    assert_same_output(tmp_path / "local", tmp_path / "ray")


@pytest.mark.parametrize("near_dedup", [True, False])
def test_ray_gives_the_local_bytes_for_many_directions(corpus, tmp_path, near_dedup):  # noqa: F811
    """--directions on Ray: each direction's clean and encode tasks (and Ray's count and dedup rounds) run as
    Ray tasks that build their direction's context; the output equals the local one-process run's (without
    near-dedup, with exact dedup: Ray settles its partitions in task rounds of its own), also when a worker
    is SIGKILLed in the middle of the first direction's clean task 1 (Ray runs that task again, alone)."""
    raw, _ = corpus
    settings = many_directions(raw, tmp_path / "local", near_dedup=near_dedup, dedup=not near_dedup)
    tokenmill.prepare(settings, progress=False)
    config = write_config(tmp_path / "ray.yaml", {**settings, "destdir": str(tmp_path / "ray"), "tasks": 3,
                                                 "engine": "ray"})
    crash = {"TOKENMILL_CRASH_AT": "clean.train#1:midway", "TOKENMILL_CRASH_ONCE": str(tmp_path / "crashed-once")}
    done = run_cli("-c", str(config), "-q", "--no-report", env={**LOOPBACK, **crash})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "crashed-once").exists()  # a worker did die in the middle of a task
    assert_same_output(tmp_path / "local", tmp_path / "ray")
    tables = json.loads((tmp_path / "ray" / "manifest.json").read_text())["run"]["tasks"]
    attempts = {name: [row["attempts"] for row in tables[f"{name}.clean.train"]] for name in DIRECTIONS}
    assert attempts == {DIRECTIONS[0]: [1, 2, 1], DIRECTIONS[1]: [1, 1, 1]}  # the first direction's task 1 ran again
    for name in DIRECTIONS:  # each direction's tasks ran on Ray (its rows name the Ray node)
        assert all("node" in row for row in tables[f"{name}.clean.train"])
