"""GPT samples and blends through the batch iterator and torch loader: Megatron's consumed-samples order,
rank slices, exact resume (also at another world size), refusals naming the field."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import tokenmill
from tokenmill.batching.gpt_plan import GPTBatchConfig
from tokenmill.data.blending import BlendedDataset
from tokenmill.data.gpt_dataset import GPTDataset, GPTDatasetConfig
from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.store import IndexedDataset, IndexedWriter

# 840 = lcm(1..8): one global batch divides over every world size 1..8 with micro batches of 1.
GLOBAL = 840


def megatron_sampler(total: int, consumed: int, micro: int, rank: int, world: int):
    """Megatron-LM's MegatronPretrainingSampler (drop_last=True), restated: samples ``consumed..total``
    in chunks of micro * world; rank r yields slice r of every whole chunk."""
    chunk = micro * world
    for first in range(consumed, total - chunk + 1, chunk):
        yield list(range(first + rank * micro, first + (rank + 1) * micro))


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> IndexedDataset:
    rng = np.random.default_rng(7)
    prefix = tmp_path_factory.mktemp("gpt") / "docs"
    with IndexedWriter(prefix, layout="megatron", dtype=np.uint16) as writer:
        for d in range(400):
            writer.add_item(np.append(2 + (31 * d + np.arange(rng.integers(1, 120))) % 997, 1))
            writer.end_document()
    return IndexedDataset(prefix)


@pytest.fixture(scope="module")
def gpt(store) -> GPTDataset:
    # 3.5 global batches of 840: the half batch at the end is not served (Megatron trains whole steps).
    return GPTDataset(store, GPTDatasetConfig(seq_length=8, seed=5, num_samples=3 * GLOBAL + 420))


def rank_stream(iterator) -> list[np.ndarray]:
    """Sample ids of every remaining micro batch of the iterator's rank in its current epoch."""
    plan = iterator.plan()
    return [plan.indices(t, iterator.rank) for t in range(iterator.step, plan.num_steps)]


@pytest.mark.parametrize(("world", "micro", "consumed"), [(1, 1, 0), (2, 2, 0), (4, 3, 24), (3, 2, 600)])
def test_order_equals_megatrons_sampler_on_every_rank(gpt, world, micro, consumed):
    config = GPTBatchConfig(global_batch_size=math.lcm(12, world * micro), micro_batch_size=micro)
    total = len(gpt) // config.global_batch_size * config.global_batch_size
    for rank in range(world):
        it = tokenmill.batches(gpt, config, rank=rank, world_size=world, consumed_samples=consumed)
        ours = [ids.tolist() for ids in rank_stream(it)]
        assert ours == list(megatron_sampler(total, consumed, micro, rank, world))
        batch = next(iter(it))
        expected = gpt.get_batch(ours[0])
        for key in ("tokens", "labels", "loss_mask", "position_ids", "cu_seqlens"):
            np.testing.assert_array_equal(batch[key], expected[key])
        assert batch["tokens"].shape == (micro, 8)


def test_state_records_megatrons_consumed_samples(gpt):
    config = GPTBatchConfig(global_batch_size=24, micro_batch_size=2)
    it = tokenmill.batches(gpt, config, rank=1, world_size=3)
    stream = iter(it)
    for _ in range(5):
        next(stream)
    assert it.state_dict()["consumed_samples"] == 5 * 2 * 3
    again = tokenmill.batches(gpt, config, rank=1, world_size=3, consumed_samples=30)
    assert (again.epoch, again.step) == (it.epoch, it.step)


@pytest.mark.parametrize(("saved_world", "world"), list(itertools.product(range(1, 9), repeat=2)))
def test_elastic_resume_serves_the_rest_exactly_once_with_equal_steps(gpt, saved_world, world):
    config = GPTBatchConfig(global_batch_size=GLOBAL)
    total = len(gpt) // GLOBAL * GLOBAL
    steps_per_global = GLOBAL // saved_world
    plan = tokenmill.batches(gpt, config, rank=0, world_size=saved_world).plan()
    for stopped in sorted({0, 1, 7, steps_per_global, steps_per_global + 3, 2 * steps_per_global, plan.num_steps}):
        saver = tokenmill.batches(gpt, config, rank=0, world_size=saved_world)
        saver.seek(1, stopped)  # the whole pass run: the position is the start of the next one
        saved = saver.state_dict()
        finished = stopped == plan.num_steps
        served = [] if finished else [ids for r in range(saved_world) for ids in plan.rank_batches(r)[:stopped]]
        consumed = stopped * saved_world
        if consumed % world and not finished:
            with pytest.raises(ConfigError, match="step boundary"):
                tokenmill.batches(gpt, config, rank=0, world_size=world).load_state_dict(saved)
            continue
        rest, counts = [], set()
        for rank in range(world):
            it = tokenmill.batches(gpt, config, rank=rank, world_size=world)
            it.load_state_dict(saved)
            stream = rank_stream(it)
            counts.add(len(stream))
            rest.extend(stream)
            assert it.state_dict()["consumed_samples"] == (total if finished else consumed)
        assert len(counts) == 1, f"ranks ran different numbers of steps: {counts}"
        assert np.array_equal(np.sort(np.concatenate(served + rest)), np.arange(total)), (stopped, saved_world, world)


def test_resume_across_three_world_sizes_and_then_the_next_pass(gpt):
    config = GPTBatchConfig(global_batch_size=GLOBAL)
    total = len(gpt) // GLOBAL * GLOBAL
    served = []
    it = tokenmill.batches(gpt, config, rank=0, world_size=8)
    served += [ids for r in range(8) for ids in it.plan().rank_batches(r)[:105]]  # one global batch
    it.seek(1, 105)
    state = it.state_dict()
    for world, steps in ((5, 168), (3, 100)):  # at 3, 100 steps is not a step boundary: fine, it divides
        ranks = [tokenmill.batches(gpt, config, rank=r, world_size=world) for r in range(world)]
        for r in ranks:
            r.load_state_dict(state)
        served += [ids for r in ranks for ids in rank_stream(r)[:steps]]
        ranks[0].seek(ranks[0].epoch, ranks[0].step + steps)
        state = ranks[0].state_dict()
    assert state["segments"] == [[8, 105], [5, 168]] and state["consumed_samples"] == 840 + 840 + 300
    last = [tokenmill.batches(gpt, config, rank=r, world_size=2) for r in range(2)]
    for r in last:
        r.load_state_dict(state)
    assert len({len(rank_stream(r)) for r in last}) == 1
    served += [ids for r in last for ids in rank_stream(r)]
    assert np.array_equal(np.sort(np.concatenate(served)), np.arange(total))
    last[0].seek(1, last[0].num_steps())  # next pass: the plain plan of world size 2
    assert last[0].state_dict()["segments"] == [] and last[0].plan().start == 0


def test_torch_loader_resumes_exactly_across_workers(gpt):
    pytest.importorskip("torch")
    config = GPTBatchConfig(global_batch_size=24, micro_batch_size=4)
    whole = [b["tokens"].numpy() for b in tokenmill.loader(gpt, config, rank=1, world_size=2)]
    loader = tokenmill.loader(gpt, config, rank=1, world_size=2, num_workers=2)
    head = []
    for batch in loader:
        head.append(batch["tokens"].numpy())
        if len(head) == 7:
            break
    state = loader.state_dict()
    again = tokenmill.loader(gpt, config, rank=1, world_size=2, num_workers=1)
    again.load_state_dict(state)
    tail = [b["tokens"].numpy() for b in again]
    assert len(whole) == len(gpt) // 24 * 3
    np.testing.assert_array_equal(np.concatenate(head + tail), np.concatenate(whole))


def test_blends_go_through_the_same_iterator(store, gpt):
    other = GPTDataset(store, GPTDatasetConfig(seq_length=8, seed=9, num_samples=3000))
    blend = BlendedDataset([gpt, other], [0.3, 0.7], size=2000)
    config = GPTBatchConfig(global_batch_size=16, micro_batch_size=2)
    ranks = [tokenmill.batches(blend, config, rank=r, world_size=4) for r in range(4)]
    ids = [ids for step in zip(*(rank_stream(r) for r in ranks), strict=True) for ids in step]
    assert np.array_equal(np.concatenate(ids), np.arange(2000 // 16 * 16))
    batch = next(iter(ranks[2]))
    expected = blend.get_batch([4, 5])
    np.testing.assert_array_equal(batch["tokens"], expected["tokens"])
    np.testing.assert_array_equal(batch["dataset_id"], expected["dataset_id"])
    state = ranks[2].state_dict()
    resumed = tokenmill.batches(blend, config, rank=0, world_size=2)
    resumed.load_state_dict(state)
    assert resumed.plan().start == 8 and resumed.state_dict()["consumed_samples"] == 8


def test_changed_settings_and_data_are_refused_naming_them(store, gpt):
    config = GPTBatchConfig(global_batch_size=24, micro_batch_size=2)
    it = tokenmill.batches(gpt, config, world_size=2)
    it.seek(1, 3)
    state = it.state_dict()
    with pytest.raises(TokenmillError, match=r"micro_batch_size: 2 -> 1"):
        tokenmill.batches(gpt, GPTBatchConfig(global_batch_size=24), world_size=2).load_state_dict(state)
    with pytest.raises(TokenmillError, match=r"global_batch_size: 24 -> 48"):
        tokenmill.batches(gpt, GPTBatchConfig(global_batch_size=48, micro_batch_size=2), world_size=2)\
            .load_state_dict(state)
    reseeded = GPTDataset(store, GPTDatasetConfig(seq_length=8, seed=6, num_samples=3 * GLOBAL + 420))
    with pytest.raises(TokenmillError, match="data differ"):
        tokenmill.batches(reseeded, config, world_size=2).load_state_dict(state)


def test_world_sizes_the_global_batch_does_not_divide_are_config_errors(gpt):
    with pytest.raises(ConfigError, match=r"global_batch_size=24 does not divide .* world_size=5"):
        tokenmill.batches(gpt, GPTBatchConfig(global_batch_size=24, micro_batch_size=2), world_size=5)
    it = tokenmill.batches(gpt, GPTBatchConfig(global_batch_size=24, micro_batch_size=2), world_size=2)
    with pytest.raises(ConfigError, match="world_size=5"):
        tokenmill.batches(gpt, GPTBatchConfig(global_batch_size=24, micro_batch_size=2), world_size=3)\
            .load_state_dict({**it.state_dict(), "world_size": 5})
    with pytest.raises(ConfigError, match="micro_batch_size=5"):
        GPTBatchConfig(global_batch_size=24, micro_batch_size=5)
    with pytest.raises(ConfigError, match="global_batch_size"):
        GPTBatchConfig(global_batch_size=0)
    with pytest.raises(ConfigError, match="GPTBatchConfig"):
        tokenmill.batches(gpt, tokenmill.BatchConfig())
    with pytest.raises(ConfigError, match="consumed_samples=5"):
        tokenmill.batches(gpt, GPTBatchConfig(global_batch_size=24, micro_batch_size=2), consumed_samples=5)
    assert GPTBatchConfig.from_dict(GPTBatchConfig(48, 4).to_dict()) == GPTBatchConfig(48, 4)
    with pytest.raises(ConfigError, match="seq"):
        GPTBatchConfig.from_dict({"global_batch_size": 8, "seq": 3})


def test_the_front_door_takes_cache_for_gpt_and_names_what_does_not_apply(gpt):
    micro = tokenmill.batches(gpt, GPTBatchConfig(global_batch_size=8, micro_batch_size=2), cache=False)
    assert next(iter(micro))["tokens"].shape[0] == 2
    with pytest.raises(ConfigError, match="consumed_samples= and infinite="):
        tokenmill.batches(gpt, GPTBatchConfig(global_batch_size=8, micro_batch_size=2), collate="fairseq")
    with pytest.raises(ConfigError, match="pack"):
        tokenmill.batches(gpt, GPTBatchConfig(global_batch_size=8, micro_batch_size=2), pack=tokenmill.PackConfig())
