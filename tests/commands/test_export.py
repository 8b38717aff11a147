"""``tokenmill export tfrecord``: Tensor2Tensor's files, read back by TensorFlow and by T2T itself.

The order check is independent of our numpy code: it rebuilds T2T's order with ``random.shuffle``
on record lists, as ``generator_utils.shuffle_dataset`` does. The ``t2t`` test runs T2T's own
``Text2TextProblem.generate_data`` on the same ids (same seed) and compares the files record for
record and by size (T2T writes each example's feature map in hash order, we in key order, so the
bytes inside a record may be permuted), then reads our files the way the problem does: its file
pattern per mode, its ``example_reading_spec``, its vocabulary from ``feature_encoders``.
(``Problem.dataset`` itself needs tf_slim and tensorflow_addons, which T2T 1.15 on TF 2.21 lacks.)
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.batching.corpus import make_pair_dir
from tests.peers import run_peer
from tokenmill.cli import cli
from tokenmill.export.t2t import serialize_examples
from tokenmill.prepare import build_config, prepare
from tokenmill.store import IndexedDataset

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"
PROBLEM = "translate_enzh_tokenmill"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TOKENMILL_CACHE", str(tmp_path_factory.mktemp("tokenmill-cache")))


@pytest.fixture(scope="module")
def t2t_data(tmp_path_factory) -> Path:
    """The bundled sample prepared with a small T2T subword vocabulary (ids end with <EOS>=1)."""
    out = tmp_path_factory.mktemp("t2t") / "bin"
    settings = {
        "source_lang": "en", "target_lang": "zh", "destdir": str(out), "workers": 1,
        "trainpref": str(SAMPLE / "train"), "validpref": str(SAMPLE / "valid"), "testpref": str(SAMPLE / "test"),
        "tokenizer": "t2t-subword", "approx_vocab_size": 100,
    }
    prepare(build_config(settings), progress=False)
    return out


def items(prefix: Path) -> list[list[int]]:
    store = IndexedDataset(prefix)
    return [store[i].tolist() for i in range(len(store))]


def split_records(data: Path, split: str) -> list[tuple[list[int], list[int]]]:
    return list(zip(items(data / f"{split}.en-zh.en"), items(data / f"{split}.en-zh.zh"), strict=True))


def t2t_order(records: dict[str, list], shards: dict[str, int], seed: int) -> dict[str, list[list]]:
    """T2T's files: round-robin into shards, then random.shuffle per file, train then dev then test."""
    rng = random.Random(seed)
    files = {}
    for split in ("train", "dev", "test"):
        for k in range(shards[split]):
            part = records[split][k :: shards[split]]
            rng.shuffle(part)
            files[f"{PROBLEM}-{split}-{k:05d}-of-{shards[split]:05d}"] = part
    return files


def read_tfrecords(path: Path) -> list[tuple[list[int], list[int]]]:
    tf = pytest.importorskip("tensorflow")
    spec = {"inputs": tf.io.VarLenFeature(tf.int64), "targets": tf.io.VarLenFeature(tf.int64)}
    out = []
    for record in tf.data.TFRecordDataset(str(path)):
        example = tf.io.parse_single_example(record, spec)
        out.append((example["inputs"].values.numpy().tolist(), example["targets"].values.numpy().tolist()))
    return out


def export(*args: str) -> str:
    result = CliRunner().invoke(cli, ["export", "tfrecord", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_files_hold_every_id_in_t2ts_order(t2t_data, tmp_path):
    pytest.importorskip("tensorflow")
    out = tmp_path / "t2t"
    printed = export(str(t2t_data), str(out), "--problem", PROBLEM, "--train-shards", "3")
    assert "train" in printed and "343 records in 3 file(s)" in printed
    records = {tag: split_records(t2t_data, split) for tag, split in [("train", "train"), ("dev", "valid"),
                                                                      ("test", "test")]}
    assert all(r[0][-1] == 1 and r[1][-1] == 1 for part in records.values() for r in part), "<EOS>=1 ends items"
    expected = t2t_order(records, {"train": 3, "dev": 1, "test": 1}, 429459)
    vocab = f"vocab.{PROBLEM}.100.subwords"
    assert sorted(p.name for p in out.iterdir()) == sorted([*expected, vocab])
    for name, part in expected.items():
        assert read_tfrecords(out / name) == part, name
    assert (out / vocab).read_bytes() == (t2t_data / "vocab.subwords").read_bytes()


def test_no_shuffle_keeps_round_robin_and_a_new_shard_count_removes_old_files(t2t_data, tmp_path):
    pytest.importorskip("tensorflow")
    out = tmp_path / "t2t"
    export(str(t2t_data), str(out), "--problem", PROBLEM, "--train-shards", "4")
    (out / "notes.txt").write_text("mine")
    (out / "other-train-00000-of-00001").write_text("another problem's")
    printed = export(str(t2t_data), str(out), "--problem", PROBLEM, "--train-shards", "2", "--dev-shards", "0",
                     "--test-shards", "0", "--no-shuffle")
    assert "removed 6 file(s)" in printed
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([f"{PROBLEM}-train-00000-of-00002", f"{PROBLEM}-train-00001-of-00002", "notes.txt",
                            "other-train-00000-of-00001", f"vocab.{PROBLEM}.100.subwords"])
    train = split_records(t2t_data, "train")
    assert read_tfrecords(out / f"{PROBLEM}-train-00001-of-00002") == train[1::2]
    assert not any(".tmp-" in n for n in names)


def test_monolingual_data_give_targets_only(tmp_path):
    tf = pytest.importorskip("tensorflow")
    lines = (SAMPLE / "train.en").read_text(encoding="utf-8").splitlines()[:40]
    (tmp_path / "raw.en").write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = tmp_path / "lm"
    prepare(build_config({"source_lang": "en", "trainpref": str(tmp_path / "raw"), "destdir": str(data),
                          "tokenizer": "t2t-subword", "approx_vocab_size": 60, "workers": 1}), progress=False)
    export(str(data), str(tmp_path / "out"), "--problem", "languagemodel_tm", "--train-shards", "1", "--no-shuffle")
    spec = {"targets": tf.io.VarLenFeature(tf.int64)}
    got = [tf.io.parse_single_example(r, spec)["targets"].values.numpy().tolist()
           for r in tf.data.TFRecordDataset(str(tmp_path / "out" / "languagemodel_tm-train-00000-of-00001"))]
    assert got == items(data / "train")
    first = next(iter(tf.data.TFRecordDataset(str(tmp_path / "out" / "languagemodel_tm-train-00000-of-00001"))))
    assert set(tf.train.Example.FromString(first.numpy()).features.feature) == {"targets"}


def test_serialized_examples_are_tensorflows_own_bytes():
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(3)
    lengths = [rng.integers(0, 30, 300), rng.integers(1, 200, 300)]
    lengths[0][7] = 0  # an empty feature: an empty Int64List
    values = [rng.integers(0, 2**62, int(lengths[0].sum())) >> rng.integers(0, 62, int(lengths[0].sum())),
              rng.integers(0, 70000, int(lengths[1].sum())).astype(np.int32)]
    offsets = [np.concatenate([[0], np.cumsum(n)]) for n in lengths]
    data, bounds = serialize_examples([("inputs", values[0], offsets[0]), ("targets", values[1], offsets[1])])
    for i in range(300):
        rows = [v[o[i] : o[i + 1]].tolist() for v, o in zip(values, offsets, strict=True)]
        example = tf.train.Example(features=tf.train.Features(feature={
            name: tf.train.Feature(int64_list=tf.train.Int64List(value=row))
            for name, row in zip(("inputs", "targets"), rows, strict=True)}))
        assert data[bounds[i] : bounds[i + 1]].tobytes() == example.SerializeToString(deterministic=True)


def _error(args: list[str]) -> str:
    result = CliRunner().invoke(cli, ["export", "tfrecord", *args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_bad_input_is_one_error_line(t2t_data, tmp_path):
    fairseq_ids = make_pair_dir(tmp_path / "fairseq", 20)
    (fairseq_ids / "manifest.json").unlink()
    assert "no manifest.json" in _error([str(fairseq_ids), str(tmp_path / "o"), "--problem", "p"])
    spm = Path(__file__).resolve().parents[2] / "runs" / "sample-bin"
    if (spm / "manifest.json").exists():
        assert "--tokenizer t2t-subword" in _error([str(spm), str(tmp_path / "o"), "--problem", "p"])
    assert "letters, digits and underscores" in _error([str(t2t_data), str(tmp_path / "o"), "--problem", "a-b"])
    (tmp_path / "file").write_text("x")
    assert "is a file" in _error([str(t2t_data), str(tmp_path / "file"), "--problem", "p"])
    assert "--train-shards" in _error([str(t2t_data), str(tmp_path / "o"), "--problem", "p", "--train-shards", "0"])
    assert "--vocab-name" in _error([str(t2t_data), str(tmp_path / "o"), "--problem", "p", "--vocab-name", "a/b"])
    assert "does not exist" in _error([str(tmp_path / "nope"), str(tmp_path / "o"), "--problem", "p"])
    assert "--problem" in _error([str(t2t_data), str(tmp_path / "o")])
    assert not (tmp_path / "o").exists(), "nothing is written for bad input"


T2T_SIDE = r"""
import importlib.abc, importlib.machinery, os, random, sys, types

# T2T 1.15 imports optional libraries at module level that its data path never calls, and names
# tf.estimator.ModeKeys (gone from TF >= 2.16) in a default argument: inert stand-ins for both.
STANDINS = ("tensorflow_addons", "tf_slim", "tensorflow_probability", "scipy")


class Inert:
    def __getattr__(self, name):
        return Inert()

    def __call__(self, *args, **kwargs):
        return Inert()

    def __mro_entries__(self, bases):
        return (object,)


class StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in STANDINS:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda attr: Inert()
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, StandIns())
import tensorflow.compat.v1 as tf
if not hasattr(tf, "estimator"):
    tf.estimator = types.SimpleNamespace(ModeKeys=types.SimpleNamespace(TRAIN="train", EVAL="eval", PREDICT="infer"))
from tensor2tensor.data_generators import problem, text_problems
from tensor2tensor.utils import registry

P = PAYLOAD

@registry.register_problem
class TranslateEnzhTokenmill(text_problems.Text2TextProblem):
    @property
    def approx_vocab_size(self):
        return 100

    @property
    def is_generate_per_split(self):
        return True

    @property
    def dataset_splits(self):
        return [{"split": problem.DatasetSplit.TRAIN, "shards": P["train_shards"]},
                {"split": problem.DatasetSplit.EVAL, "shards": 1},
                {"split": problem.DatasetSplit.TEST, "shards": 1}]

    def generate_encoded_samples(self, data_dir, tmp_dir, dataset_split):
        tag = {problem.DatasetSplit.TRAIN: "train", problem.DatasetSplit.EVAL: "dev"}.get(dataset_split, "test")
        for inputs, targets in P["records"][tag]:
            yield {"inputs": inputs, "targets": targets}

t2t = registry.problem(P["problem"])
assert t2t.name == P["problem"]
random.seed(P["seed"])  # what t2t-datagen does before generating (--random_seed)
t2t.generate_data(P["t2t_dir"], P["t2t_dir"])

spec, _ = t2t.example_reading_spec()


def parse(files):
    rows = []
    for record in tf.data.TFRecordDataset(files):
        example = tf.io.parse_single_example(record, spec)
        rows.append([tf.sparse.to_dense(example[k]).numpy().tolist() for k in ("inputs", "targets")])
    return rows


# T2T serializes each Example's feature map in hash order, we in key order: same records, same sizes
result = {"t2t_files": sorted(os.listdir(P["t2t_dir"])), "same_records": {}, "same_size": {}}
for name in result["t2t_files"]:
    theirs, ours = os.path.join(P["t2t_dir"], name), os.path.join(P["ours"], name)
    result["same_records"][name] = parse([theirs]) == parse([ours])
    result["same_size"][name] = os.path.getsize(theirs) == os.path.getsize(ours)

# our files as the problem reads them: its file pattern, its example_reading_spec, its vocabulary
read = {}
for mode in ("train", "eval", "test"):
    files = sorted(tf.io.gfile.glob(t2t.filepattern(P["ours"], mode)))
    read[mode] = {"files": [os.path.basename(f) for f in files], "rows": parse(files)}
result["read"] = read
encoders = t2t.feature_encoders(P["ours"])
first = read["train"]["rows"][0]
result["decoded"] = [encoders["inputs"].decode(first[0][:-1]), encoders["targets"].decode(first[1][:-1])]
print("RESULT:" + __import__("json").dumps(result))
"""


@pytest.mark.t2t
def test_t2t_generates_the_same_files_and_reads_ours(t2t_data, tmp_path):
    pytest.importorskip("tensorflow")
    from tokenmill.vocab.t2t_backend import T2TSubwordTokenizer

    out = tmp_path / "ours"
    export(str(t2t_data), str(out), "--problem", PROBLEM, "--train-shards", "3")
    records = {"train": split_records(t2t_data, "train"), "dev": split_records(t2t_data, "valid"),
               "test": split_records(t2t_data, "test")}
    (tmp_path / "t2t").mkdir()
    payload = {"problem": PROBLEM, "seed": 429459, "train_shards": 3, "records": records,
               "t2t_dir": str(tmp_path / "t2t"), "ours": str(out)}
    result = run_peer("t2t", T2T_SIDE, payload, timeout=300)
    ours = sorted(p.name for p in out.iterdir() if not p.name.startswith("vocab."))
    assert result["t2t_files"] == ours, "T2T's generate_data writes the same file names"
    assert all(result["same_records"].values()), result["same_records"]
    assert all(result["same_size"].values()), result["same_size"]
    expected = t2t_order(records, {"train": 3, "dev": 1, "test": 1}, 429459)
    for mode, tag in (("train", "train"), ("eval", "dev"), ("test", "test")):
        files = result["read"][mode]["files"]
        assert files == [n for n in expected if f"-{tag}-" in n]
        assert result["read"][mode]["rows"] == [list(map(list, r)) for n in files for r in expected[n]]
    tokenizer = T2TSubwordTokenizer(t2t_data / "vocab.subwords")
    first = expected[f"{PROBLEM}-train-00000-of-00003"][0]
    assert result["decoded"] == [tokenizer.decode(first[0][:-1]), tokenizer.decode(first[1][:-1])]
