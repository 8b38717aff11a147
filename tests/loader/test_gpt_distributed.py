"""A real torch.distributed job (gloo on 127.0.0.1) over Megatron GPT samples through the front door,
``tokenmill.loader(gpt, tokenmill.GPTBatchConfig(...))``: it checkpoints at 2 ranks after some micro
batches and resumes at 1 rank and at 3 ranks. Over the two parts every sample of the pass is served
exactly once, every rank runs the same number of micro batches per step, and the resumed sequence is
Megatron's consumed-samples order (what an uninterrupted single-rank run serves from there)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from functools import partial
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tokenmill  # noqa: E402
from tests.loader.distributed_job import run_job  # noqa: E402
from tests.loader.test_gpt_loader import megatron_sampler  # noqa: E402
from tokenmill.store import IndexedWriter  # noqa: E402

SEQ = 8
GLOBAL, MICRO = 12, 2  # 12 = 2 x 1 x 6 = 2 x 2 x 3 = 2 x 3 x 2: whole steps at 1, 2 and 3 ranks
CONFIG = tokenmill.GPTBatchConfig(global_batch_size=GLOBAL, micro_batch_size=MICRO)
BEFORE = 2 * GLOBAL // (MICRO * 2)  # micro batches per rank at 2 ranks before the checkpoint: two steps


def make_store(prefix: Path) -> Path:
    """Documents of 1..40 tokens whose token ids are all different, so a sample's row names the sample."""
    lengths = np.random.default_rng(3).integers(1, 41, size=300)
    tokens = 2 + np.arange(int(lengths.sum()))
    with IndexedWriter(prefix, layout="megatron", dtype=np.uint16) as writer:
        for doc in np.split(tokens, np.cumsum(lengths)[:-1]):
            writer.add_item(doc)
            writer.end_document()
    return prefix


def gpt_dataset(prefix: str | Path) -> tokenmill.GPTDataset:
    return tokenmill.GPTDataset(tokenmill.open(prefix), tokenmill.GPTDatasetConfig(seq_length=SEQ, seed=5))


def gpt_loader(prefix: str):
    return tokenmill.loader(gpt_dataset(prefix), CONFIG)


def micro_batch_rows(batch) -> list[list[int]]:
    assert isinstance(batch["tokens"], torch.Tensor) and tuple(batch["tokens"].shape) == (MICRO, SEQ)
    return batch["tokens"].tolist()


def job(world: int, prefix: Path, out: Path, resume: Path | None = None) -> list[dict]:
    """``world`` ranks over the GPT samples: the rest of the pass when resuming, else BEFORE micro batches."""
    return run_job(world, out, partial(gpt_loader, str(prefix)), micro_batch_rows, resume=resume,
                   stop_after=None if resume else BEFORE)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="gloo over TCP on loopback is set up for Linux here")
def test_gpt_checkpoint_at_two_ranks_resumes_at_one_and_at_three_in_megatrons_order(tmp_path):
    prefix = make_store(tmp_path / "docs")
    gpt = gpt_dataset(prefix)  # builds the index once (cached); the ranks map it
    rows = gpt.get_batch(np.arange(len(gpt)))["tokens"]
    sample_of = {tuple(row.tolist()): i for i, row in enumerate(rows)}
    assert len(sample_of) == len(gpt), "every sample is told apart by its tokens"
    total = len(gpt) // GLOBAL * GLOBAL  # the pass: whole global batches

    def ids(batches) -> list[list[int]]:
        return [[sample_of[tuple(row)] for row in batch] for batch in batches]

    def interleaved(ranks: list[list[list[int]]]) -> list[int]:
        """The job's samples in Megatron's order: step by step, rank 0's slice of the chunk first."""
        return [i for step in zip(*ranks, strict=True) for batch in step for i in batch]

    before = job(2, prefix, tmp_path / "w2")
    assert [(r["rank"], r["world"], r["min"], r["max"], len(r["served"])) for r in before] == [
        (rank, 2, BEFORE, BEFORE, BEFORE) for rank in range(2)]
    served_before = [ids(r["served"]) for r in before]
    for rank, batches in enumerate(served_before):
        assert batches == list(megatron_sampler(total, 0, MICRO, rank, 2))[:BEFORE], f"rank {rank} at 2 ranks"
    consumed = BEFORE * MICRO * 2
    assert before[0]["state"] == before[1]["state"] and before[0]["state"]["consumed_samples"] == consumed
    assert interleaved(served_before) == list(range(consumed))
    state = tmp_path / "state.json"
    state.write_text(json.dumps(before[0]["state"]))

    uninterrupted = [ids([b["tokens"].tolist()])[0] for b in tokenmill.batches(gpt, CONFIG, consumed_samples=consumed)]
    assert [i for batch in uninterrupted for i in batch] == list(range(consumed, total))
    for world in (1, 3):
        after = job(world, prefix, tmp_path / f"w{world}", resume=state)
        served_after = [ids(r["served"]) for r in after]
        per_step = GLOBAL // (MICRO * world)
        steps = {(r["min"], r["max"], len(r["served"])) for r in after}
        assert len(steps) == 1 and len(set(steps.pop())) == 1, f"equal micro batches on every rank at {world}"
        assert len(served_after[0]) % per_step == 0, f"whole steps of {per_step} micro batches at {world} ranks"
        for rank, batches in enumerate(served_after):
            assert batches == list(megatron_sampler(total, consumed, MICRO, rank, world)), f"rank {rank} of {world}"
        assert interleaved(served_after) == [i for batch in uninterrupted for i in batch], "Megatron's order"
        both = Counter(i for part in (served_before, served_after) for batches in part for b in batches for i in b)
        assert both == Counter(range(total)), f"resumed at {world}: every sample of the pass once"
        assert all(r["state"]["epoch"] == 2 and r["state"]["consumed_samples"] == total for r in after)
