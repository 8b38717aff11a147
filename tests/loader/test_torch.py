"""The PyTorch adapter: same batches in the same order for any num_workers, exact resume, torchrun ranks.

Skipped when torch is not installed (``pip install tokenmill[torch]``).
"""

from __future__ import annotations

import itertools
import os
import socket

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.batching.corpus import make_pair_dir  # noqa: E402
from tokenmill.batching.config import BatchConfig  # noqa: E402
from tokenmill.data.pairs import PairDataset  # noqa: E402
from tokenmill.loader import BatchIterator  # noqa: E402
from tokenmill.loader.torch import StatefulLoader, TorchBatches, make_loader  # noqa: E402

CONFIG = BatchConfig(max_tokens=300, required_batch_size_multiple=2)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_pair_dir(tmp_path_factory.mktemp("torch") / "data", 300, seed=21)


def batches(data, cache, **kwargs) -> BatchIterator:
    return BatchIterator(PairDataset.from_dir(data), CONFIG, cache=cache, **kwargs)


def reference_ids(data, cache, count: int) -> list[list[int]]:
    iterator = batches(data, cache, infinite=True)
    return [b["id"].tolist() for b in itertools.islice(iterator, count)]


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_same_stream_for_any_number_of_workers(data, tmp_path, workers):
    iterator = batches(data, tmp_path, infinite=True)
    total = iterator.num_steps(1) + 5  # cross into epoch 2
    loader = StatefulLoader(iterator, num_workers=workers)
    got = []
    for batch in itertools.islice(loader, total):
        assert batch["net_input"]["src_tokens"].dtype == torch.int64
        got.append(batch["id"].tolist())
    assert got == reference_ids(data, tmp_path, total)


@pytest.mark.parametrize(("before", "after"), [(0, 2), (2, 1), (1, 0)])
def test_resume_with_other_worker_counts(data, tmp_path, before, after):
    iterator = batches(data, tmp_path)
    steps = iterator.num_steps(1)
    expected = reference_ids(data, tmp_path, steps)
    loader = StatefulLoader(iterator, num_workers=before, prefetch_factor=4)
    stop = 7
    seen = [b["id"].tolist() for b in itertools.islice(loader, stop)]
    state = loader.state_dict()  # workers prefetched further; the state is where the consumer stopped
    resumed = StatefulLoader(batches(data, tmp_path), num_workers=after)
    resumed.load_state_dict(state)
    rest = [b["id"].tolist() for b in resumed]
    assert seen + rest == expected
    assert resumed.state_dict()["epoch"] == 2 and resumed.state_dict()["step"] == 0


def test_plain_dataloader_over_the_iterable_dataset(data, tmp_path):
    iterator = batches(data, tmp_path)
    loader = torch.utils.data.DataLoader(TorchBatches(iterator), batch_size=None, num_workers=2)
    assert [b["id"].tolist() for b in loader] == reference_ids(data, tmp_path, iterator.num_steps(1))


def test_opennmt_batches_as_tensors(data, tmp_path):
    loader = StatefulLoader(batches(data, tmp_path, collate="opennmt"))
    features, labels = next(iter(loader))
    assert labels["ids"].dtype == torch.int64 and features["length"].dtype == torch.int32


@pytest.mark.skipif(not torch.cuda.is_available(), reason="pinned memory needs a CUDA device")
def test_pinned_memory(data, tmp_path):
    loader = StatefulLoader(batches(data, tmp_path), num_workers=1, pin_memory=True)
    batch = next(iter(loader))
    assert batch["net_input"]["src_tokens"].is_pinned() and batch["target"].is_pinned()


def _rank_main(rank: int, world: int, port: int, data: str, cache: str, out: str) -> None:
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    loader = make_loader(PairDataset.from_dir(data), CONFIG, cache=cache)  # rank and world from torch.distributed
    ids = [b["id"].numpy() for b in loader]
    np.save(os.path.join(out, f"rank{rank}.npy"), np.concatenate(ids))
    np.save(os.path.join(out, f"count{rank}.npy"), np.array([len(ids), loader.batches.rank, loader.batches.world_size]))
    torch.distributed.destroy_process_group()


@pytest.mark.slow  # two spawned processes import torch: ~10 s on 2 cores
def test_ranks_come_from_torch_distributed(data, tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    world = 2
    torch.multiprocessing.spawn(_rank_main, args=(world, port, str(data), str(tmp_path), str(tmp_path)), nprocs=world)
    counts = [np.load(tmp_path / f"count{r}.npy").tolist() for r in range(world)]
    assert [c[1:] for c in counts] == [[0, 2], [1, 2]]
    assert counts[0][0] == counts[1][0]  # same number of batches on both ranks
    seen = np.concatenate([np.load(tmp_path / f"rank{r}.npy") for r in range(world)])
    assert np.array_equal(np.sort(seen), np.arange(300))
