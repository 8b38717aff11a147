"""A real torch.distributed job (gloo on 127.0.0.1) checkpoints its data position at 2 ranks and resumes
at 1 rank and at 3 ranks: over the two parts every sample of the epoch is served exactly once."""

from __future__ import annotations

import json
import sys
from collections import Counter
from functools import partial
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tests.batching.corpus import make_pair_dir  # noqa: E402
from tests.loader.distributed_job import run_job  # noqa: E402
from tokenmill.batching.config import BatchConfig  # noqa: E402
from tokenmill.data.pairs import PairDataset  # noqa: E402
from tokenmill.loader.torch import make_loader  # noqa: E402

CONFIG = BatchConfig(max_tokens=200, required_batch_size_multiple=1, seed=7)
STEPS_BEFORE = 2


def pair_loader(data: str):
    return make_loader(PairDataset.from_dir(data), CONFIG, collate=None, cache=False)


def sample_ids(batch) -> list[int]:
    return [int(i) for i in batch]


def job(world: int, data: Path, out: Path, resume: Path | None = None) -> list[dict]:
    """``world`` ranks over the pairs: the whole rest of the epoch when resuming, else STEPS_BEFORE batches."""
    return run_job(world, out, partial(pair_loader, str(data)), sample_ids, resume=resume,
                   stop_after=None if resume else STEPS_BEFORE)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="gloo over TCP on loopback is set up for Linux here")
def test_checkpoint_at_two_ranks_resumes_at_one_and_at_three(tmp_path):
    data = make_pair_dir(tmp_path / "data", 157, seed=11)
    everything = Counter(i for batch in make_loader(PairDataset.from_dir(data), CONFIG, rank=0, world_size=1,
                                                     collate=None, cache=False) for i in batch.tolist())
    before = job(2, data, tmp_path / "w2")
    assert [(r["rank"], r["world"], len(r["served"])) for r in before] == [(0, 2, STEPS_BEFORE), (1, 2, STEPS_BEFORE)]
    state = tmp_path / "state.json"
    state.write_text(json.dumps(before[0]["state"]))
    first = Counter(i for r in before for batch in r["served"] for i in batch)
    for world in (1, 3):
        after = job(world, data, tmp_path / f"w{world}", resume=state)
        steps = {(r["min"], r["max"], len(r["served"])) for r in after}
        assert len(steps) == 1 and len(set(steps.pop())) == 1, f"equal steps on every rank at {world}"
        rest = Counter(i for r in after for batch in r["served"] for i in batch)
        total = first + rest
        assert max(total.values()) == 1, f"resumed at {world}: a sample served twice"
        left_out = len(everything) - len(total)
        assert 0 <= left_out < world, f"resumed at {world}: every sample once ({left_out} left over)"
        assert after[0]["state"]["epoch"] == 2, "the resumed epoch ran to its end"
