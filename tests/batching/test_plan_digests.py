"""Plans stay byte-identical: every case of ``tests/batching/plan_digests.py`` against its recorded digest.

The digests were recorded by the code before the planning speed work (main at d9f71a7): epoch plans,
elastic re-plans and re-plans under a new mix, in lowpad (plain, row multiples, block by block),
fairseq, opennmt and packed modes, for several seeds and world sizes. A plan that is meant to change
bumps ``PLAN_VERSION`` and regenerates the file (``python -m tests.batching.plan_digests``).
"""

from __future__ import annotations

import json

import pytest

from tests.batching.plan_digests import GOLDEN, MODES, RUNS, case_digests

RECORDED = json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.mark.parametrize("mode", list(MODES))
def test_plans_are_the_recorded_ones(mode):
    for pairs, seed, world, after in RUNS:
        name = f"{mode}/{pairs}/{seed}/{world}->{after}"
        assert case_digests(mode, pairs, seed, world, after) == RECORDED[name], name


def test_every_recorded_case_is_checked():
    assert set(RECORDED) == {f"{m}/{p}/{s}/{w}->{a}" for m in MODES for p, s, w, a in RUNS}
