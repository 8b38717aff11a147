"""Our GPT loader vs megatron-core's GPTDataset + Megatron's MegatronPretrainingSampler + torch DataLoader:
every rank's micro batches, element for element, from the start and from a consumed-samples position,
and after an elastic resume the rest equals what Megatron serves from that consumed count."""

from __future__ import annotations

import numpy as np
import pytest

import tokenmill
from tests.data.peers_megatron import MegatronJobs
from tests.data.test_gpt_dataset import EOD, make_documents, write_store
from tokenmill.data.gpt_dataset import GPTDataset, GPTDatasetConfig

KEYS = ("tokens", "labels", "loss_mask", "position_ids")
CASES = {
    # (dataset settings, global batch, micro batch, world size, consumed samples, steps compared)
    "start": ({"seq_length": 48, "seed": 31, "num_samples": 900}, 24, 2, 3, 0, 40),
    "consumed": ({"seq_length": 33, "seed": 32, "num_samples": 1200, "reset_position_ids": True,
                  "eod_mask_loss": True}, 32, 4, 4, 320, 25),
    "elastic": ({"seq_length": 40, "seed": 33, "num_samples": 1000}, 24, 1, 6, 72, 40),
}


@pytest.fixture(scope="module")
def megatron(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("megatron-gpt-loader")
    store = write_store(workdir / "ours", make_documents(400, seed=12))
    jobs = MegatronJobs(workdir)
    for case, (settings, _, micro, world, consumed, steps) in CASES.items():
        jobs.add(case, "gpt_loader", prefix="ours", eod=EOD, vocab_size=1000, micro_batch_size=micro,
                 world_size=world, consumed_samples=consumed, steps=steps, **settings)
    jobs.run()
    return jobs, store


def ours(store, case: str, rank: int):
    settings, global_batch, micro, world, consumed, steps = CASES[case]
    dataset = GPTDataset(store, GPTDatasetConfig(**settings, eod_id=EOD))
    config = tokenmill.GPTBatchConfig(global_batch_size=global_batch, micro_batch_size=micro)
    if case != "elastic":
        it = tokenmill.batches(dataset, config, rank=rank, world_size=world, consumed_samples=consumed)
    else:  # ran 3 steps of one global batch each at world size 2, then goes on at 6
        before = tokenmill.batches(dataset, config, rank=0, world_size=2)
        before.seek(1, consumed // 2)
        it = tokenmill.batches(dataset, config, rank=rank, world_size=world)
        it.load_state_dict(before.state_dict())
        assert it.state_dict()["consumed_samples"] == consumed
    return dataset, [batch for _, batch in zip(range(steps), it, strict=False)]


@pytest.mark.megatron
@pytest.mark.parametrize("case", sorted(CASES))
def test_micro_batches_equal_megatron_sampler_and_dataloader(megatron, case):
    jobs, store = megatron
    world = CASES[case][3]
    for rank in range(world):
        dataset, batches = ours(store, case, rank)
        assert len(dataset) == jobs.results[case]["length"]
        for key in KEYS:
            expected = jobs.get(case, f"{key}.{rank}")
            got = np.stack([b[key] for b in batches])
            assert got.shape == expected.shape, (case, rank, key)
            np.testing.assert_array_equal(got, expected, err_msg=f"{case} rank {rank}: {key}")
