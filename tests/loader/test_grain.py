"""The Grain adapter: grain.DataLoader over a tokenmill plan serves the numpy iterator's batches, resumes
through Grain's own get_state/set_state, and gives static shapes. Real Grain; skipped when not installed."""

from __future__ import annotations

import functools
import itertools
import subprocess
import sys

import numpy as np
import pytest

grain = pytest.importorskip("grain.python")

from tests.batching.corpus import make_pair_dir  # noqa: E402
from tokenmill.batching.config import BatchConfig  # noqa: E402
from tokenmill.batching.packed_collate import collate_packed  # noqa: E402
from tokenmill.batching.packed_pairs import PackConfig, PackedPairPlanner  # noqa: E402
from tokenmill.data.pairs import PairDataset  # noqa: E402
from tokenmill.errors import ConfigError  # noqa: E402
from tokenmill.loader import BatchIterator  # noqa: E402
from tokenmill.loader.grain import GrainBatches, grain_loader  # noqa: E402

CONFIG = BatchConfig(max_tokens=400, required_batch_size_multiple=2)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_pair_dir(tmp_path_factory.mktemp("grain") / "data", 260, seed=8)


def iterator(data, **kwargs) -> BatchIterator:
    return BatchIterator(PairDataset.from_dir(data), CONFIG, cache=False, **kwargs)


def leaves(batch) -> list[np.ndarray]:
    if isinstance(batch, dict):
        return [x for key in sorted(batch) for x in leaves(batch[key])]
    if isinstance(batch, tuple | list):
        return [x for item in batch for x in leaves(item)]
    return [np.asarray(batch)]


def assert_same(a, b) -> None:
    for x, y in zip(leaves(a), leaves(b), strict=True):
        assert x.dtype == y.dtype and np.array_equal(x, y)


def expected_stream(data, rank: int, world_size: int, epochs: int, **kwargs) -> list:
    numpy_iterator = iterator(data, rank=rank, world_size=world_size, infinite=True, **kwargs)
    steps = sum(numpy_iterator.num_steps(e) for e in range(1, epochs + 1))
    return list(itertools.islice(numpy_iterator, steps))


@pytest.mark.parametrize("layout", ["ours", "opennmt"])
def test_every_rank_gets_the_numpy_iterators_batches_over_two_epochs(data, layout):
    world = 3
    for rank in range(world):
        expected = expected_stream(data, rank, world, 2, collate="fairseq" if layout == "ours" else layout)
        loader = grain_loader(iterator(data, rank=rank, world_size=world), layout=layout, epochs=2)
        got = list(loader)
        assert len(got) == len(expected) >= 10
        for a, b in zip(got, expected, strict=True):
            assert_same(a, b)


def test_resume_through_grains_state_gives_the_same_rest(data):
    source = GrainBatches(iterator(data, rank=1, world_size=2), epochs=2)
    expected = expected_stream(data, 1, 2, 2)
    epoch_one = source.batches.num_steps(1)
    for stop in (0, 3, epoch_one, epoch_one + 1):  # before anything, inside, at and past the epoch end
        stream = iter(source.loader())
        taken = list(itertools.islice(stream, stop))
        state = stream.get_state()
        fresh = iter(GrainBatches(iterator(data, rank=1, world_size=2), epochs=2).loader())
        fresh.set_state(state)
        rest = list(fresh)
        assert len(taken) + len(rest) == len(expected)
        for a, b in zip(taken + rest, expected, strict=True):
            assert_same(a, b)


def test_grain_refuses_a_state_from_another_plan(data):
    stream = iter(GrainBatches(iterator(data)).loader())
    next(stream)
    other = BatchIterator(PairDataset.from_dir(data), CONFIG.replace(seed=2), cache=False)
    with pytest.raises(ValueError, match="DataSource in checkpoint does not match"):
        iter(GrainBatches(other).loader()).set_state(stream.get_state())


def test_worker_processes_serve_the_same_stream_and_resume(data):
    expected = expected_stream(data, 0, 1, 1)
    stream = iter(GrainBatches(iterator(data)).loader(worker_count=1))
    taken = list(itertools.islice(stream, 4))
    state = stream.get_state()
    rest = list(stream)
    for a, b in zip(taken + rest, expected, strict=True):
        assert_same(a, b)
    resumed = iter(GrainBatches(iterator(data)).loader(worker_count=1))
    resumed.set_state(state)
    for a, b in zip(list(resumed), expected[4:], strict=True):
        assert_same(a, b)


def test_packed_rows_with_static_rows_have_one_shape(data):
    dataset = PairDataset.from_dir(data)
    planner = PackedPairPlanner(dataset, PackConfig(max_length=24, rows_per_batch=5, max_tokens=None),
                                world_size=2, cache=False)
    make = functools.partial(BatchIterator, dataset, planner=planner, collate=collate_packed, world_size=2,
                             cache=False)
    expected = list(make())
    got = list(GrainBatches(make(), static_rows=5).loader())
    assert len(got) == len(expected)
    shapes = {(b["inputs"].shape, b["targets"].shape, b["segments"].shape) for b in got}
    assert shapes == {((5, 24), (5, 24), (5,))}
    assert any(len(b["segments"]) < 5 for b in expected), "some batch is short and gets padded"
    for a, b in zip(got, expected, strict=True):
        rows = len(b["segments"])
        assert np.array_equal(a["id"], b["id"]) and a["ntokens"] == b["ntokens"]
        for key in ("inputs", "inputs_segmentation", "targets_position", "prev_output_tokens", "segments"):
            assert np.array_equal(a[key][:rows], b[key])
        assert (a["inputs"][rows:] == dataset.options.pad).all() and (a["targets_segmentation"][rows:] == 0).all()


def test_static_rows_pads_fairseq_batches_and_refuses_bigger_ones(data):
    config = CONFIG.replace(max_sentences=16)
    numpy_iterator = BatchIterator(PairDataset.from_dir(data), config, cache=False)
    expected = list(numpy_iterator)
    got = list(GrainBatches(BatchIterator(PairDataset.from_dir(data), config, cache=False),
                            static_rows=16).loader())
    for a, b in zip(got, expected, strict=True):
        rows = len(b["id"])
        assert a["net_input"]["src_tokens"].shape[0] == a["target"].shape[0] == len(a["id"]) == 16
        assert np.array_equal(a["target"][:rows], b["target"]) and (a["id"][rows:] == -1).all()
        assert (a["target"][rows:] == 1).all() and (a["net_input"]["src_lengths"][rows:] == 0).all()
    with pytest.raises(ConfigError, match="static_rows=2"):
        GrainBatches(iterator(data), static_rows=2)[0]


def test_without_grain_the_import_says_what_to_install():
    code = (
        "import sys\nsys.modules['grain'] = None\n"
        "try:\n    from tokenmill.loader import GrainBatches\nexcept ModuleNotFoundError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'tokenmill[grain]'" in out.stdout
