"""The tf.data adapter: exact element specs, the numpy iterator's batches, ranks from a strategy, resume
through ``tf.train.Checkpoint``. Real TensorFlow (CPU); skipped when it is not installed."""

from __future__ import annotations

import functools
import itertools
import subprocess
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

# two logical CPUs for MirroredStrategy; must happen before TensorFlow starts its runtime
try:
    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2
    )
except RuntimeError:  # the runtime was started by an earlier test module
    pass

from tests.batching.corpus import make_pair_dir  # noqa: E402
from tokenmill.batching.collate import CollateOptions  # noqa: E402
from tokenmill.batching.config import BatchConfig  # noqa: E402
from tokenmill.batching.packed_collate import collate_packed  # noqa: E402
from tokenmill.batching.packed_pairs import PackConfig, PackedPairPlanner  # noqa: E402
from tokenmill.data.pairs import PairDataset  # noqa: E402
from tokenmill.errors import ConfigError, TokenmillError  # noqa: E402
from tokenmill.loader import BatchIterator  # noqa: E402
from tokenmill.loader.tf import TFBatches  # noqa: E402

CONFIG = BatchConfig(max_tokens=400, required_batch_size_multiple=2)
V = functools.partial(tf.TensorSpec, dtype=tf.int64)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_pair_dir(tmp_path_factory.mktemp("tf") / "data", 240, seed=5)


def iterator(data, **kwargs) -> BatchIterator:
    return BatchIterator(PairDataset.from_dir(data), CONFIG, cache=False, **kwargs)


def numpy_leaves(batch) -> list[np.ndarray]:
    return [np.asarray(x) for x in tf.nest.flatten(batch)]


def assert_same(tf_batch, np_batch) -> None:
    ours, theirs = numpy_leaves(tf_batch), numpy_leaves(np_batch)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_element_specs_are_exact_for_each_layout(data):
    tokens, lengths = V([None, None]), V([None])
    fairseq = {
        "id": lengths,
        "nsentences": V([]),
        "ntokens": V([]),
        "net_input": {"src_tokens": tokens, "src_lengths": lengths, "prev_output_tokens": tokens},
        "target": tokens,
    }
    length32 = tf.TensorSpec([None], tf.int32)
    opennmt = ({"length": length32, "ids": tokens}, {"length": length32, "ids": tokens, "ids_out": tokens})
    for layout, expected in [("ours", fairseq), ("fairseq", fairseq), ("opennmt", opennmt)]:
        adapter = TFBatches(iterator(data), layout)
        assert adapter.element_spec == expected
        assert adapter.dataset().element_spec == expected
    options = CollateOptions(dtype="int32", tokens=True)
    spec = TFBatches(iterator(data, collate="opennmt", collate_options=options)).element_spec
    strings = tf.TensorSpec([None, None], tf.string)
    assert spec[0] == {"length": length32, "ids": tf.TensorSpec([None, None], tf.int32), "tokens": strings}
    assert spec[1]["tokens"] == strings and spec[1]["ids_out"].dtype == tf.int32
    source_only = PairDataset.from_dir(data, target=False)
    spec = TFBatches(BatchIterator(source_only, CONFIG, cache=False), "opennmt").element_spec
    assert spec == {"length": length32, "ids": tokens}  # no labels without a target side


@pytest.mark.parametrize("parallel", [None, 2])
@pytest.mark.parametrize("layout", ["fairseq", "opennmt"])
def test_same_batches_as_the_numpy_iterator(data, layout, parallel):
    adapter = TFBatches(iterator(data, rank=1, world_size=3), layout, num_parallel_calls=parallel)
    expected = list(iterator(data, rank=1, world_size=3, collate=layout))
    got = list(adapter.dataset())
    assert len(got) == len(expected) == len(adapter) > 3
    for a, b in zip(got, expected, strict=True):
        assert_same(a, b)


@pytest.mark.parametrize("parallel", [None, 2])
def test_string_tokens_take_the_general_path_with_the_same_batches(tmp_path, parallel):
    data = make_pair_dir(tmp_path / "words", 60, seed=2)  # dict.{lang}.txt: ids 4.. are words w4, w5 ...
    options = CollateOptions(tokens=True)
    make = functools.partial(iterator, data, collate="opennmt", collate_options=options)
    adapter = TFBatches(make(), num_parallel_calls=parallel)
    got = list(adapter.dataset())
    expected = list(make())
    assert len(got) == len(expected)
    for (features, labels), (np_features, np_labels) in zip(got, expected, strict=True):
        assert features["tokens"].dtype == tf.string
        assert features["tokens"].numpy().astype(str).tolist() == np_features["tokens"].tolist()
        assert np.array_equal(labels["ids_out"].numpy(), np_labels["ids_out"])
        assert labels["tokens"].numpy().astype(str).tolist() == np_labels["tokens"].tolist()


def test_packed_rows_get_an_inferred_spec_and_the_same_batches(data, tmp_path):
    dataset = PairDataset.from_dir(data)
    planner = PackedPairPlanner(dataset, PackConfig(max_length=32, rows_per_batch=4, max_tokens=None),
                                cache=False)
    made = functools.partial(BatchIterator, dataset, planner=planner, collate=collate_packed, cache=False)
    adapter = TFBatches(made())
    assert adapter.element_spec["inputs_segmentation"] == V([None, None])
    assert adapter.element_spec["nsentences"] == V([])
    got = list(adapter.dataset())
    for a, b in zip(got, made(), strict=True):
        assert_same(a, b)
        assert a["inputs"].shape[1] == 32  # packed rows: one width


def test_checkpoint_between_batches_resumes_exactly_across_epochs(data, tmp_path):
    make = functools.partial(iterator, data, infinite=True, collate="opennmt")
    steps = make().num_steps(1)
    expected = list(itertools.islice(make(), steps + 6))
    adapter = TFBatches(make(), "opennmt", prefetch=8)
    checkpoint = tf.train.Checkpoint(data=adapter)
    taken = []
    for batch in adapter:  # tf.data reads ahead; the saved position is the training loop's
        taken.append(batch)
        if len(taken) == steps - 2:
            path = checkpoint.save(str(tmp_path / "ckpt"))
        if len(taken) == steps + 6:
            break
    for a, b in zip(taken, expected, strict=True):
        assert_same(a, b)
    resumed = TFBatches(make(), "opennmt")
    tf.train.Checkpoint(data=resumed).restore(path).assert_consumed()
    assert (resumed.batches.epoch, resumed.batches.step) == (1, steps - 2)
    rest = list(itertools.islice(resumed, 8))  # the last two of epoch 1, then epoch 2
    for a, b in zip(rest, expected[steps - 2 :], strict=True):
        assert_same(a, b)


def test_counter_tracks_a_dataset_consumed_inside_tf_function(data, tmp_path):
    make = functools.partial(iterator, data, infinite=True)
    expected = list(itertools.islice(make(), 30))
    step = tf.Variable(0, dtype=tf.int64)
    adapter = TFBatches(make(), counter=step)
    stream = iter(adapter.dataset())

    @tf.function
    def train_step(batch):
        step.assign_add(1)
        return tf.reduce_sum(batch["net_input"]["src_lengths"])

    for _ in range(11):
        train_step(next(stream))
    path = tf.train.Checkpoint(step=step, data=adapter).save(str(tmp_path / "ckpt"))
    step2 = tf.Variable(0, dtype=tf.int64)
    resumed = TFBatches(make(), counter=step2)
    tf.train.Checkpoint(step=step2, data=resumed).restore(path)
    assert int(step2.numpy()) == 11 and resumed.batches.state_dict()["consumed"] == 11
    rest = list(itertools.islice(iter(resumed.dataset()), 19))
    for a, b in zip(rest, expected[11:], strict=True):
        assert_same(a, b)


def test_a_dataset_nobody_counts_is_refused_at_save(data, tmp_path):
    adapter = TFBatches(iterator(data))
    next(iter(adapter.dataset()))
    with pytest.raises(TokenmillError, match="counter"):
        tf.train.Checkpoint(data=adapter).save(str(tmp_path / "ckpt"))


def test_mirrored_strategy_gives_each_replica_its_rank(data):
    assert len(tf.config.list_logical_devices("CPU")) >= 2, "two logical CPUs are set up at import"
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    adapter = TFBatches(iterator(data, world_size=strategy.num_replicas_in_sync), "opennmt")
    ranks = [list(iterator(data, rank=r, world_size=2, collate="opennmt")) for r in range(2)]
    steps = 0
    for per_replica in adapter.distribute(strategy):
        features, labels = per_replica
        for rank in range(2):
            got = (strategy.experimental_local_results(features)[rank],
                   strategy.experimental_local_results(labels)[rank])
            assert_same(got, ranks[rank][steps])
        steps += 1
    assert steps == len(ranks[0]) == len(ranks[1])
    with pytest.raises(ConfigError, match="world_size"):
        TFBatches(iterator(data, world_size=3)).distribute(strategy)


def test_input_pipelines_interleave_their_replicas_ranks(data):
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1, num_replicas_in_sync=4)
    adapter = TFBatches(iterator(data, world_size=4))
    assert adapter.ranks_for(context) == [2, 3]
    got = list(itertools.islice(adapter.dataset(context), 6))
    two, three = list(iterator(data, rank=2, world_size=4)), list(iterator(data, rank=3, world_size=4))
    for k, batch in enumerate(got):
        assert_same(batch, (two if k % 2 == 0 else three)[k // 2])


def test_importing_tokenmill_never_imports_tensorflow_or_grain():
    code = (
        "import sys, tokenmill, tokenmill.loader, tokenmill.cli\n"
        "assert 'tensorflow' not in sys.modules and 'grain' not in sys.modules, 'imported'\n"
        "sys.modules['tensorflow'] = None\n"
        "try:\n    import tokenmill.loader.tf\nexcept ModuleNotFoundError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'tokenmill[tf]'" in out.stdout
