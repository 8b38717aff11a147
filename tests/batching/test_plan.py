"""Epoch plans: pure functions of their inputs, cached on disk as memory-mapped arrays."""

from __future__ import annotations

import json
import multiprocessing

import numpy as np
import pytest

from tests.batching.corpus import pair_lengths
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.costs import Sizes
from tokenmill.batching.plan import Planner


def sizes_of(n: int = 3000, seed: int = 0) -> Sizes:
    src, tgt = pair_lengths(n, seed)
    return Sizes((src + 1).astype(np.int32), (tgt + 1).astype(np.int32))


def stream(plan) -> list[list[int]]:
    return [plan.indices(t, r).tolist() for t in range(plan.num_steps) for r in range(plan.world_size)]


@pytest.mark.parametrize("mode", ["lowpad", "fairseq", "opennmt"])
def test_order_is_a_pure_function_of_seed_epoch_sizes_and_settings(mode):
    sizes = sizes_of()
    config = BatchConfig(mode=mode, max_tokens=512)
    one = Planner(sizes, config, data_fingerprint="d").plan(2)
    again = Planner(sizes, config, data_fingerprint="d").plan(2)
    assert stream(one) == stream(again)
    assert stream(one) != stream(Planner(sizes, config, data_fingerprint="d").plan(3))
    assert stream(one) != stream(Planner(sizes, config.replace(seed=2), data_fingerprint="d").plan(2))


def test_second_start_maps_the_cached_plan(tmp_path):
    sizes, config = sizes_of(), BatchConfig(max_tokens=512)
    first = Planner(sizes, config, data_fingerprint="d", cache=tmp_path).plan(1)
    assert not first.stats.cached
    entries = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(entries) == 1 and not any(".tmp-" in p.name for p in tmp_path.iterdir())
    meta = json.loads((entries[0] / "meta.json").read_text())
    assert set(meta["arrays"]) == {"order", "starts", "stops", "max_src", "max_tgt", "sum_src", "sum_tgt"}
    second = Planner(sizes, config, data_fingerprint="d", cache=tmp_path).plan(1)
    assert second.stats.cached
    assert isinstance(second.order.base, np.memmap) and not second.order.flags.writeable
    assert stream(first) == stream(second)
    assert second.stats.padding_fraction == pytest.approx(first.stats.padding_fraction)


def test_other_settings_or_data_get_their_own_entry(tmp_path):
    cache = tmp_path
    sizes, config = sizes_of(), BatchConfig(max_tokens=512)
    Planner(sizes, config, data_fingerprint="d", cache=cache).plan(1)
    Planner(sizes, config.replace(max_tokens=1024), data_fingerprint="d", cache=cache).plan(1)
    Planner(sizes, config, data_fingerprint="other", cache=cache).plan(1)
    Planner(sizes, config, world_size=2, data_fingerprint="d", cache=cache).plan(1)
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 4


def test_old_epochs_are_pruned_and_fairseq_mode_shares_one_entry(tmp_path):
    sizes = sizes_of(800)
    planner = Planner(sizes, BatchConfig(max_tokens=512), data_fingerprint="d", cache=tmp_path / "low")
    for epoch in range(1, 6):
        planner.plan(epoch)
    names = sorted(p.name.rsplit("-", 1)[1] for p in (tmp_path / "low").iterdir() if p.is_dir())
    assert names == ["e4", "e5"]
    planner = Planner(sizes, BatchConfig(mode="fairseq"), data_fingerprint="d", cache=tmp_path / "fs")
    plans = [planner.plan(epoch) for epoch in (1, 2, 3)]
    assert [p.name.rsplit("-", 1)[1] for p in (tmp_path / "fs").iterdir() if p.is_dir()] == ["e0"]
    assert stream(plans[0]) != stream(plans[1])  # same batches, reshuffled per epoch
    assert sorted(map(tuple, stream(plans[0]))) == sorted(map(tuple, stream(plans[1])))


def _plan_in_child(directory: str, queue) -> None:
    plan = Planner(sizes_of(), BatchConfig(max_tokens=512), data_fingerprint="race", cache=directory).plan(1)
    queue.put((plan.stats.cached, plan.order[:50].tolist()))


def test_concurrent_processes_compute_a_plan_once(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    workers = [ctx.Process(target=_plan_in_child, args=(str(tmp_path), queue)) for _ in range(3)]
    for worker in workers:
        worker.start()
    results = [queue.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    assert sorted(cached for cached, _ in results) == [False, True, True]
    assert len({tuple(order) for _, order in results}) == 1


def test_unreadable_entry_is_a_clear_error(tmp_path):
    from tokenmill.errors import TokenmillError

    plan = Planner(sizes_of(), BatchConfig(max_tokens=512), data_fingerprint="d", cache=tmp_path).plan(1)
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    (folder / "order.npy").write_bytes(b"garbage")
    with pytest.raises(TokenmillError, match="delete"):
        Planner(sizes_of(), BatchConfig(max_tokens=512), data_fingerprint="d", cache=tmp_path).plan(1)
    assert folder.exists() and plan.num_steps


def test_without_shuffle_batches_run_in_plan_order():
    sizes = sizes_of(1000)
    plan = Planner(sizes, BatchConfig(max_tokens=256, shuffle=False), data_fingerprint="v").plan(1)
    assert plan.schedule[:, 0].tolist() == list(range(plan.num_steps))
    shuffled = Planner(sizes, BatchConfig(max_tokens=256), data_fingerprint="v").plan(1)
    assert sorted(shuffled.schedule[:, 0].tolist()) == list(range(shuffled.num_steps))
    assert shuffled.schedule[:, 0].tolist() != list(range(shuffled.num_steps))
