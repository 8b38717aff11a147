"""--near-dedup on the Ray engine (the engine's own one-node Ray, on loopback): the same bytes as the local
engine. Ray counts lines and settles exact duplicates in task rounds of its own, so this also checks that
near-dedup's positions agree with theirs."""

from __future__ import annotations

import pytest

import tokenmill
from tests.prepare.test_near_dedup import near_corpus  # noqa: F401  (the fixture)
from tests.prepare.test_tasks import assert_same_output, run_cli, settings_for, write_config

pytest.importorskip("ray")

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]  # under xdist: one Ray at a time (tests/conftest.py)
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
