"""Pair datasets over two token stores: per-item options, the length filter, directory discovery."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from tests.batching.corpus import make_pair_dir, pair_lengths
from tests.batching.fairseq_peer import run_jobs, split_batches
from tokenmill.data.pairs import PairDataset, PairOptions, open_store, stamp_dir
from tokenmill.errors import ConfigError, FormatError
from tokenmill.store import IndexedDataset, IndexedWriter

EOS, BOS = 2, 0


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Plan caches and verification stamps of these tests stay out of ~/.cache."""
    monkeypatch.setenv("TOKENMILL_CACHE", str(tmp_path_factory.mktemp("tokenmill-cache")))


@pytest.fixture
def data(tmp_path):
    return make_pair_dir(tmp_path / "data", 300, seed=4)


def test_languages_from_manifest_and_file_names(data, tmp_path):
    dataset = PairDataset.from_dir(data)
    assert (dataset.src_lang, dataset.tgt_lang, len(dataset)) == ("en", "de", 300)
    bare = make_pair_dir(tmp_path / "bare", 20, src="fr", tgt="it", manifest=False)
    assert (PairDataset.from_dir(bare).src_lang, PairDataset.from_dir(bare).tgt_lang) == ("fr", "it")
    make_pair_dir(tmp_path / "bare", 20, src="fr", tgt="es", manifest=False)
    with pytest.raises(ConfigError, match="found: fr-es, fr-it"):
        PairDataset.from_dir(bare)
    assert PairDataset.from_dir(bare, src_lang="fr", tgt_lang="es").tgt_lang == "es"


def test_monolingual_data_is_named_as_such_not_searched_for_a_pair(tmp_path):
    with IndexedWriter(tmp_path / "train", layout="fairseq", vocab_size=100) as writer:
        writer.add_item([5, 6, 2])
    with pytest.raises(ConfigError, match=r"holds monolingual data \(train.bin/.idx, no target language\)"):
        PairDataset.from_dir(tmp_path, "train")


def test_shard_folders(tmp_path):
    make_pair_dir(tmp_path / "sharded" / "shard000", 10)
    make_pair_dir(tmp_path / "sharded" / "shard001", 12)
    with pytest.raises(ConfigError, match="shard folders"):
        PairDataset.from_dir(tmp_path / "sharded", src_lang=None)
    assert len(PairDataset.from_dir(tmp_path / "sharded", shard=1)) == 12


def test_sides_must_have_equal_counts(data):
    src = IndexedDataset(data / "train.en-de.en")
    other = make_pair_dir(data.parent / "other", 299)
    with pytest.raises(FormatError, match=r"300 sentences but .* has 299"):
        PairDataset(src, IndexedDataset(other / "train.en-de.de"))


def test_stored_sentences_come_back_with_their_eos(data):
    dataset = PairDataset.from_dir(data)
    item = dataset[7]
    assert item["id"] == 7 and item["source"][-1] == EOS and item["target"][-1] == EOS
    assert len(item["source"]) == dataset.src_sizes[7]


@pytest.fixture
def small(tmp_path):
    root = tmp_path / "small"
    make_pair_dir(root, 3)
    rows = {
        "en": [[5, 6, EOS], [7, EOS], [BOS, 8, EOS]],
        "de": [[9, EOS], [10, 11], [12, EOS]],
    }  # row 1 of de lacks </s>
    for lang, items in rows.items():
        with IndexedWriter(root / f"train.en-de.{lang}", layout="fairseq", vocab_size=200) as writer:
            for row in items:
                writer.add_item(np.array(row))
    return root


@pytest.mark.parametrize(
    ("options", "source", "target"),
    [
        (PairOptions(), [[5, 6, 2], [7, 2], [0, 8, 2]], [[9, 2], [10, 11], [12, 2]]),
        (
            PairOptions(prepend_src=100, prepend_tgt=101),
            [[100, 5, 6, 2], [100, 7, 2], [100, 0, 8, 2]],
            [[101, 9, 2], [101, 10, 11], [101, 12, 2]],
        ),
        (PairOptions(remove_eos_from_source=True), [[5, 6], [7], [0, 8]], [[9, 2], [10, 11], [12, 2]]),
        (PairOptions(append_eos_to_target=True), [[5, 6, 2], [7, 2], [0, 8, 2]], [[9, 2], [10, 11, 2], [12, 2]]),
        (PairOptions(append_bos=True), [[0, 5, 6, 2], [0, 7, 2], [0, 8, 2]], [[0, 9, 2], [0, 10, 11], [0, 12, 2]]),
        (
            PairOptions(prepend_src=100, append_bos=True, remove_eos_from_source=True, append_eos_to_target=True),
            [[0, 100, 5, 6], [0, 100, 7], [0, 100, 0, 8]],
            [[0, 9, 2], [0, 10, 11, 2], [0, 12, 2]],
        ),
    ],
)
def test_per_item_options(small, options, source, target):
    dataset = PairDataset.from_dir(small, options=options)
    assert [dataset[i]["source"].tolist() for i in range(3)] == source
    assert [dataset[i]["target"].tolist() for i in range(3)] == target
    rows = dataset.rows(np.array([2, 0, 1]), "source")
    assert np.split(rows.tokens, rows.offsets[1:-1])[0].tolist() == source[2]


def test_planned_lengths_follow_the_store_convention(data):
    options = PairOptions(prepend_src=100, remove_eos_from_source=True, append_bos=True)
    dataset = PairDataset.from_dir(data, options=options)
    raw = PairDataset.from_dir(data)
    assert np.array_equal(dataset.src_sizes, raw.src_sizes + 1)  # +tag +<s> -</s>
    assert np.array_equal(dataset.tgt_sizes, raw.tgt_sizes + 1)  # +<s>
    assert all(len(dataset[i]["source"]) == dataset.src_sizes[i] for i in range(0, 300, 17))


def test_length_filter_counts_each_reason(tmp_path):
    lengths = (np.array([3, 30, 3, 30, 3]), np.array([3, 3, 40, 40, 3]))
    root = make_pair_dir(tmp_path / "f", lengths=lengths)
    dataset = PairDataset.from_dir(root, options=PairOptions(max_source_positions=20, max_target_positions=20))
    report = dataset.filter_report
    assert (report.num_total, report.num_kept, report.num_dropped) == (5, 2, 3)
    assert report.dropped == {"source_too_long": 1, "target_too_long": 1, "both_too_long": 1}
    assert np.flatnonzero(dataset.keep).tolist() == [0, 4]


def test_strict_mode_names_the_first_offender(tmp_path):
    root = make_pair_dir(tmp_path / "f", lengths=(np.array([3, 30, 3]), np.array([3, 3, 3])))
    with pytest.raises(ConfigError, match=r"pair 1 .*source 31, target 4.*max_source_positions=20"):
        PairDataset.from_dir(root, options=PairOptions(max_source_positions=20, strict=True))


def test_fingerprint_follows_lengths_and_options(data, tmp_path):
    one = PairDataset.from_dir(data).fingerprint()
    assert one == PairDataset.from_dir(data).fingerprint()
    assert one != PairDataset.from_dir(data, options=PairOptions(max_source_positions=10)).fingerprint()
    src, tgt = pair_lengths(300, 4)
    tgt[0] += 1
    other = make_pair_dir(tmp_path / "other", lengths=(src, tgt))
    assert one != PairDataset.from_dir(other).fingerprint()


def test_pickles_as_paths_not_arrays(data):
    dataset = PairDataset.from_dir(data, options=PairOptions(prepend_src=100))
    blob = pickle.dumps(dataset)
    assert len(blob) < 2000
    copy = pickle.loads(blob)
    assert copy[5]["source"].tolist() == dataset[5]["source"].tolist()
    assert copy.fingerprint() == dataset.fingerprint()


def test_manifest_is_read_defensively(tmp_path):
    root = make_pair_dir(tmp_path / "m", 5, manifest=False)
    (root / "manifest.json").write_text(
        json.dumps({"format": "tokenmill", "settings": {"source_lang": "en", "target_lang": "de"}})
    )
    assert PairDataset.from_dir(root).src_lang == "en"
    (root / "manifest.json").write_text("not json")
    assert PairDataset.from_dir(root).tgt_lang == "de"  # falls back to the file names


FAIRSEQ_OPTIONS = [
    {"prepend_src": 150},
    {"prepend_tgt": 151},
    {"remove_eos_from_source": True},
    {"append_eos_to_target": True},
    {"append_bos": True},
]


@pytest.mark.fairseq
def test_items_equal_fairseq_language_pair_dataset(small, tmp_path):
    # one fairseq process answers every option (fairseq's options apply one at a time there; see pairs.py)
    indices = [0, 1, 2]
    base = {"kind": "items", "src": str(small / "train.en-de.en"), "tgt": str(small / "train.en-de.de"), "vocab": 200}
    jobs = [{"id": f"o{i}", "indices": indices, **base, **options} for i, options in enumerate(FAIRSEQ_OPTIONS)]
    run_jobs(tmp_path / "fs", jobs)
    for i, options in enumerate(FAIRSEQ_OPTIONS):
        dataset = PairDataset.from_dir(small, options=PairOptions(**options))
        for side in ("source", "target"):
            flat = np.load(tmp_path / "fs" / f"o{i}.{side}.flat.npy")
            theirs = split_batches(flat, np.load(tmp_path / "fs" / f"o{i}.{side}.lengths.npy"))
            assert [dataset[j][side].tolist() for j in indices] == [t.tolist() for t in theirs], options


def test_pointer_scan_runs_once_per_unchanged_store(data):
    prefix = str(data / "train.en-de.en")
    open_store(prefix)
    stamps = list(stamp_dir().iterdir())
    assert len(stamps) == 1
    open_store(prefix)  # same files: the stamp is reused, no new one
    assert list(stamp_dir().iterdir()) == stamps
    # garble one pointer: the files changed, so the scan runs again and catches it
    index = bytearray((data / "train.en-de.en.idx").read_bytes())
    pointer = 26 + 4 * 300 + 8 * 5  # header, sizes, then pointer of item 5
    index[pointer] ^= 0x10
    (data / "train.en-de.en.idx").write_bytes(bytes(index))
    with pytest.raises(FormatError, match="pointer of item 5"):
        open_store(prefix)
