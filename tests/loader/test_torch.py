"""The PyTorch adapter: same batches in the same order for any num_workers, exact resume, torchrun ranks.

Skipped when torch is not installed (``pip install tokenmill[torch]``).
"""

from __future__ import annotations

import itertools
from functools import partial

import pytest

torch = pytest.importorskip("torch")

from tests.batching.corpus import make_pair_dir  # noqa: E402
from tests.loader.distributed_job import run_job  # noqa: E402
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


def pair_loader(data: str, cache: str) -> StatefulLoader:
    return make_loader(PairDataset.from_dir(data), CONFIG, cache=cache)  # rank and world from torch.distributed


def batch_ids(batch) -> list[int]:
    return batch["id"].tolist()


@pytest.mark.slow  # two spawned processes import torch: ~10 s on 2 cores
def test_ranks_come_from_torch_distributed(data, tmp_path):
    ranks = run_job(2, tmp_path / "job", partial(pair_loader, str(data), str(tmp_path)), batch_ids)
    assert [(r["rank"], r["world"]) for r in ranks] == [(0, 2), (1, 2)]
    assert ranks[0]["min"] == ranks[0]["max"] == len(ranks[0]["served"]) > 0  # same number of batches on both ranks
    seen = [i for r in ranks for batch in r["served"] for i in batch]
    assert sorted(seen) == list(range(300))
