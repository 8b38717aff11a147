"""A real torch.distributed job (gloo on 127.0.0.1) checkpoints its data position at 2 ranks and resumes
at 1 rank and at 3 ranks: over the two parts every sample of the epoch is served exactly once."""

from __future__ import annotations

import json
import socket
import sys
from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from tests.batching.corpus import make_pair_dir  # noqa: E402
from tokenmill.batching.config import BatchConfig  # noqa: E402
from tokenmill.data.pairs import PairDataset  # noqa: E402
from tokenmill.loader.torch import make_loader  # noqa: E402

CONFIG = BatchConfig(max_tokens=200, required_batch_size_multiple=1, seed=7)
STEPS_BEFORE = 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank: int, world: int, port: int, data: str, out: str, resume: str | None) -> None:
    """One rank: join the group, serve batches (all of the epoch, or STEPS_BEFORE then checkpoint)."""
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        loader = make_loader(PairDataset.from_dir(data), CONFIG, collate=None, cache=False)
        assert loader.batches.world_size == world and loader.batches.rank == rank, "rank from torch.distributed"
        if resume:
            loader.load_state_dict(json.loads(Path(resume).read_text()))
        served = []
        for step, batch in enumerate(loader):
            served.append([int(i) for i in batch])
            if not resume and step + 1 == STEPS_BEFORE:
                break
        steps = torch.tensor([len(served)])
        dist.all_reduce(steps, op=dist.ReduceOp.MAX)  # every rank ran as many steps: no rank waits forever
        record = {"served": served, "max_steps": int(steps), "state": loader.state_dict()}
        Path(out, f"rank{rank}.json").write_text(json.dumps(record))
    finally:
        dist.destroy_process_group()


def run_job(world: int, data: Path, out: Path, resume: Path | None = None) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    mp.start_processes(worker, args=(world, free_port(), str(data), str(out), resume and str(resume)),
                       nprocs=world, join=True, start_method="spawn")
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="gloo over TCP on loopback is set up for Linux here")
def test_checkpoint_at_two_ranks_resumes_at_one_and_at_three(tmp_path):
    data = make_pair_dir(tmp_path / "data", 157, seed=11)
    everything = Counter(i for batch in make_loader(PairDataset.from_dir(data), CONFIG, rank=0, world_size=1,
                                                     collate=None, cache=False) for i in batch.tolist())
    before = run_job(2, data, tmp_path / "w2")
    assert all(len(r["served"]) == STEPS_BEFORE for r in before)
    state = tmp_path / "state.json"
    state.write_text(json.dumps(before[0]["state"]))
    first = Counter(i for r in before for batch in r["served"] for i in batch)
    for world in (1, 3):
        after = run_job(world, data, tmp_path / f"w{world}", resume=state)
        counts = {len(r["served"]) for r in after}
        assert len(counts) == 1 and counts == {after[0]["max_steps"]}, f"equal steps at {world} ranks"
        rest = Counter(i for r in after for batch in r["served"] for i in batch)
        total = first + rest
        assert max(total.values()) == 1, f"resumed at {world}: a sample served twice"
        left_out = len(everything) - len(total)
        assert 0 <= left_out < world, f"resumed at {world}: every sample once ({left_out} left over)"
        assert after[0]["state"]["epoch"] == 2, "the resumed epoch ran to its end"
