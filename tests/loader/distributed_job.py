"""One launcher for the real torch.distributed jobs of the loader tests (gloo on 127.0.0.1).

Every rank joins the group, builds its loader (rank and world size come from torch.distributed),
optionally loads a saved state (of another mix too, when allowed), serves batches (all of them, or
``stop_after`` then stops), and
agrees with the other ranks on the most and fewest batches served (an all_reduce: a rank that ran
fewer steps would hang a real job). Each rank writes one JSON record; :func:`run_job` returns them.

The ranks start from a fork server that imported torch once for the whole test session (a spawned rank
imports torch anew: seconds each on a loaded 2-core machine, and these tests start 20 ranks); each rank
takes the launching test's environment (its ``TOKENMILL_CACHE``), not the one the server started with.
Where there is no fork server, the ranks are spawned.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

MakeLoader = Callable[[], Any]
"""Builds one rank's loader inside the rank's process (a module-level function or a partial of one)."""
RecordBatch = Callable[[Any], Any]
"""Turns a served batch into JSON values (a module-level function)."""

_PRELOAD = ["torch", "torch.distributed", __name__]
"""Imported once by the fork server, so a rank starts with them loaded."""


def _start_method() -> str:
    """``forkserver`` (its server preloading torch) where the platform has it, else ``spawn``."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return "spawn"
    multiprocessing.get_context("forkserver").set_forkserver_preload(_PRELOAD)  # read when the server starts
    return "forkserver"


def free_port() -> int:
    """A free TCP port on the loopback address."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(
    rank: int,
    world: int,
    port: int,
    out: str,
    make_loader: MakeLoader,
    record_batch: RecordBatch,
    resume: str | None,
    stop_after: int | None,
    allow_mix_change: bool,
    environ: dict[str, str],
) -> None:
    os.environ.clear()
    os.environ.update(environ)  # the launching test's, not the fork server's
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        loader = make_loader()
        where = (loader.batches.rank, loader.batches.world_size)
        if resume:
            loader.load_state_dict(json.loads(Path(resume).read_text()), allow_mix_change=allow_mix_change)
        served = []
        for batch in loader:
            served.append(record_batch(batch))
            if stop_after is not None and len(served) == stop_after:
                break
        counts = torch.tensor([len(served), -len(served)])
        dist.all_reduce(counts, op=dist.ReduceOp.MAX)  # the most and the fewest batches of any rank
        record = {"rank": where[0], "world": where[1], "served": served, "max": int(counts[0]),
                  "min": -int(counts[1]), "state": loader.state_dict()}
        Path(out, f"rank{rank}.json").write_text(json.dumps(record))
    finally:
        dist.destroy_process_group()


def run_job(
    world: int,
    out: Path,
    make_loader: MakeLoader,
    record_batch: RecordBatch,
    *,
    resume: Path | None = None,
    stop_after: int | None = None,
    allow_mix_change: bool = False,
) -> list[dict[str, Any]]:
    """Run ``world`` spawned ranks to the end; their records in rank order. ``allow_mix_change``: the
    loader resumes a state saved under another mix (``load_state_dict(..., allow_mix_change=True)``)."""
    out.mkdir(parents=True, exist_ok=True)
    mp.start_processes(_rank, args=(world, free_port(), str(out), make_loader, record_batch,
                                    resume and str(resume), stop_after, allow_mix_change, dict(os.environ)),
                       nprocs=world, join=True, start_method=_start_method())
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]
