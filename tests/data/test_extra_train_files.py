"""fairseq's extra training files (train, train1, train2 ...) and --upsample-primary, read as fairseq reads them."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from tests.peers import run_peer
from tokenmill.batching import BatchConfig
from tokenmill.batching.collate import collate_fairseq, collate_opennmt
from tokenmill.data.pairs import ConcatStore, PairDataset, PairOptions
from tokenmill.errors import ConfigError, FormatError
from tokenmill.loader import BatchIterator
from tokenmill.store import IndexedDataset, IndexedWriter
from tokenmill.vocab.dictionary import Dictionary

EOS = 2
WORDS = 60


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TOKENMILL_CACHE", str(tmp_path_factory.mktemp("tokenmill-cache")))


def write_part(root, split, n, seed, *, names=("en", "de"), dtype=None, align=False):
    """``n`` pairs of random words (each sentence ends in </s>); returns them as lists."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(n):
        src = [*rng.integers(4, WORDS, rng.integers(1, 9)).tolist(), EOS]
        tgt = [*rng.integers(4, WORDS, rng.integers(1, 9)).tolist(), EOS]
        pairs.append((src, tgt))
    a, b = names
    for lang, side in (("en", 0), ("de", 1)):
        kwargs = {"dtype": dtype} if dtype is not None else {"vocab_size": WORDS}
        with IndexedWriter(root / f"{split}.{a}-{b}.{lang}", layout="fairseq", **kwargs) as writer:
            for pair in pairs:
                writer.add_item(np.asarray(pair[side]))
    if align:
        with IndexedWriter(root / f"{split}.align.en-de", layout="fairseq", dtype=np.int32) as writer:
            for src, tgt in pairs:
                writer.add_item(np.asarray([0, 0, len(src) - 2, len(tgt) - 2]))
    return pairs


@pytest.fixture
def data(tmp_path):
    """train (7 pairs), train1 (5), train2 (4, named de-en as fairseq also finds it), valid and valid1."""
    root = tmp_path / "bin"
    root.mkdir()
    dictionary = Dictionary.from_counts({f"w{i}": 1000 - i for i in range(4, WORDS)}, padding_factor=1)
    for lang in ("en", "de"):
        dictionary.save(root / f"dict.{lang}.txt")
    parts = {
        "train": write_part(root, "train", 7, 1),
        "train1": write_part(root, "train1", 5, 2, dtype=np.int32),  # another dtype than the first part
        "train2": write_part(root, "train2", 4, 3, names=("de", "en")),
        "valid": write_part(root, "valid", 3, 4),
        "valid1": write_part(root, "valid1", 2, 5),
    }
    write_part(root, "train4", 2, 6)  # after a gap: fairseq stops at the first missing train3
    return root, parts


def items(dataset: PairDataset) -> list[list[list[int]]]:
    return [[dataset[i]["source"].tolist(), dataset[i]["target"].tolist()] for i in range(len(dataset))]


def expected(parts, k):
    first = [[list(s), list(t)] for s, t in parts["train"]]
    rest = [[list(s), list(t)] for name in ("train1", "train2") for s, t in parts[name]]
    return first * k + rest


@pytest.mark.parametrize("k", [1, 3])
def test_extra_parts_follow_the_primary_repeated_k_times(data, k):
    root, parts = data
    dataset = PairDataset.from_dir(root, "train", upsample_primary=k)
    assert len(dataset) == 7 * k + 5 + 4
    assert items(dataset) == expected(parts, k)
    assert dataset.src_sizes.tolist() == [len(s) for s, _ in expected(parts, k)]
    assert dataset.tgt_sizes.tolist() == [len(t) for _, t in expected(parts, k)]
    assert isinstance(dataset.src, ConcatStore) and "train2.de-en.en" in dataset.describe()


def test_batches_across_parts_equal_item_by_item(data):
    root, _ = data
    dataset = PairDataset.from_dir(root, upsample_primary=2, options=PairOptions(prepend_src=50, append_bos=True))
    ids = np.array([20, 0, 9, 15, 7, 3, 14, 22])  # parts 2, 0, 0 (the repeat), 1, 0, 0, 1, 2
    batch = collate_fairseq(dataset, ids)
    by_id = {int(i): dataset[int(i)] for i in ids}
    for row, sample_id in enumerate(batch["id"].tolist()):
        source = by_id[sample_id]["source"]
        assert batch["net_input"]["src_tokens"][row][-len(source) :].tolist() == source.tolist()
        target = by_id[sample_id]["target"]
        assert batch["target"][row][: len(target)].tolist() == target.tolist()
    features, _ = collate_opennmt(dataset, ids)
    assert [row[:n].tolist() for row, n in zip(features["ids"], features["length"], strict=True)] == [
        by_id[int(i)]["source"].tolist() for i in ids
    ]
    assert dataset.rows(ids, "source").tokens.dtype == np.int32  # the widest part's dtype


def test_the_batch_iterator_and_pickling(data):
    root, _ = data
    dataset = PairDataset.from_dir(root, upsample_primary=2)
    again = pickle.loads(pickle.dumps(dataset))
    assert items(again) == items(dataset) and again.fingerprint() == dataset.fingerprint()
    iterator = BatchIterator(dataset, BatchConfig(max_tokens=40), collate=None, cache=False)
    seen = sorted(int(i) for batch in iterator for i in batch)
    assert seen == list(range(len(dataset)))
    # the plan depends on the parts and the repeat: another upsampling is another dataset
    assert PairDataset.from_dir(root, upsample_primary=3).fingerprint() != dataset.fingerprint()


def test_fairseq_rules_for_what_is_combined(data):
    root, _ = data
    assert len(PairDataset.from_dir(root, "valid")) == 3  # valid1 is a validation set of its own
    assert len(PairDataset.from_dir(root, "valid", combine=True)) == 5
    assert len(PairDataset.from_dir(root, "valid", combine=True, upsample_primary=2)) == 8
    assert len(PairDataset.from_dir(root, "train", combine=False, upsample_primary=4)) == 7
    assert len(PairDataset.from_dir(root, "valid1", upsample_primary=4)) == 2  # nothing to combine: no repeat
    alone = PairDataset.from_dir(root, "valid1", combine=True, upsample_primary=4)
    assert len(alone) == 2 and isinstance(alone.src, IndexedDataset)  # fairseq ignores the ratio with one part
    with pytest.raises(ConfigError, match="upsample_primary must be an integer >= 1"):
        PairDataset.from_dir(root, upsample_primary=0)


def test_one_part_with_unequal_sides_is_named_even_when_the_sums_agree(tmp_path):
    root = tmp_path / "bin"
    root.mkdir()
    write_part(root, "train", 4, 1)
    write_part(root, "train1", 3, 2)
    # swap one sentence across the parts of the target: 5 + 2 de sentences for 4 + 3 en ones
    moved = [IndexedDataset(root / "train1.en-de.de")[i].tolist() for i in range(3)]
    with IndexedWriter(root / "train1.en-de.de", layout="fairseq", vocab_size=WORDS) as writer:
        for row in moved[:2]:
            writer.add_item(np.asarray(row))
    first = [IndexedDataset(root / "train.en-de.de")[i].tolist() for i in range(4)] + [moved[2]]
    with IndexedWriter(root / "train.en-de.de", layout="fairseq", vocab_size=WORDS) as writer:
        for row in first:
            writer.add_item(np.asarray(row))
    with pytest.raises(FormatError, match=r"train.en-de.en has 4 sentences but .*train.en-de.de has 5"):
        PairDataset.from_dir(root, src_lang="en", tgt_lang="de")


def test_alignments_of_every_part_come_along(tmp_path):
    root = tmp_path / "bin"
    root.mkdir()
    train = write_part(root, "train", 3, 1, align=True)
    extra = write_part(root, "train1", 2, 2, align=True)
    dataset = PairDataset.from_dir(root, src_lang="en", tgt_lang="de", upsample_primary=2)
    expected_pairs = [[0, 0, len(s) - 2, len(t) - 2] for s, t in train * 2 + extra]
    assert [dataset[i]["alignment"].reshape(-1).tolist() for i in range(len(dataset))] == expected_pairs
    # a part without alignments: left out when optional, named when required
    write_part(root, "train2", 2, 3)
    assert PairDataset.from_dir(root, src_lang="en", tgt_lang="de").align is None
    with pytest.raises(ConfigError, match="no alignments for train2 in"):
        PairDataset.from_dir(root, src_lang="en", tgt_lang="de", alignments=True)


FAIRSEQ_SIDE = """
from fairseq.data import Dictionary
from fairseq.tasks.translation import load_langpair_dataset
p = PAYLOAD
result = {}
for split, k, combine in p["runs"]:
    ds = load_langpair_dataset(p["dir"], split, "en", Dictionary.load(p["dir"] + "/dict.en.txt"), "de",
                               Dictionary.load(p["dir"] + "/dict.de.txt"), combine=combine, dataset_impl="mmap",
                               upsample_primary=k, left_pad_source=True, left_pad_target=False,
                               max_source_positions=1024, max_target_positions=1024)
    result[f"{split}-{k}-{combine}"] = {
        "items": [[ds[i]["source"].tolist(), ds[i]["target"].tolist()] for i in range(len(ds))],
        "src_sizes": ds.src_sizes.tolist(),
        "tgt_sizes": ds.tgt_sizes.tolist(),
    }
print("RESULT:" + json.dumps(result))
"""


@pytest.mark.fairseq
def test_fairseq_load_langpair_dataset_gives_the_same_items_in_the_same_order(data):
    root, _ = data
    runs = [("train", 1, True), ("train", 3, True), ("train", 2, False), ("valid", 2, True)]
    theirs = run_peer("fairseq", FAIRSEQ_SIDE, {"dir": str(root), "runs": runs})
    for split, k, combine in runs:
        ours = PairDataset.from_dir(root, split, combine=combine, upsample_primary=k)
        fairseq = theirs[f"{split}-{k}-{combine}"]
        assert items(ours) == fairseq["items"], (split, k, combine)
        assert ours.src_sizes.tolist() == fairseq["src_sizes"] and ours.tgt_sizes.tolist() == fairseq["tgt_sizes"]
    assert len(theirs["train-3-True"]["items"]) == 7 * 3 + 5 + 4
