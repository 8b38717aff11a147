"""Multilingual training data as one dataset: many directions in rotating shards read from an
Open-NLLB-style ``data_bin`` (file names, ``a:b:c`` paths, chosen and reversed directions, the
valid split), language tags and the length filter, rows of many directions, and bad input named.

Planning a sampled mix of the directions is tested in ``tests/batching/test_sampled.py``, collating
it in ``tests/batching/test_multi_collate.py``, iterating and resuming it in
``tests/loader/test_multilingual.py``. The ``multi_data_bin`` comes from ``tests/data/multi_corpus.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.batching.corpus import VOCAB
from tests.data.multi_corpus import SHARDS, TAG, VALID, make_data_bin, write_direction
from tokenmill.batching.collate import pad_rows
from tokenmill.batching.config import BatchConfig
from tokenmill.data.multi_langtok import LangTokConfig
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import PairOptions
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import ConfigError, FormatError, TokenmillError
from tokenmill.loader import multilingual_batches

BATCHES = BatchConfig(max_tokens=200, required_batch_size_multiple=2)
SAMPLING = SamplingConfig(temperature=5.0, seed=3)  # upsamples the 12-pair direction


def plain_part(multi_data_bin: Path, direction: str, shard: int) -> MultiPairDataset:
    """One direction's shard as stored, without tags (for expectations)."""
    return MultiPairDataset.from_dir(
        multi_data_bin / f"shard{shard:03d}", directions=[direction], langtok=LangTokConfig(None, False)
    )


# ---------------------------------------------------------------- layout and language tags
def test_directions_and_shards_come_from_file_names(multi_dataset):
    assert multi_dataset.directions == sorted(SHARDS)
    assert [len(s) for s in multi_dataset.shards] == [len(SHARDS[d]) for d in multi_dataset.directions]
    assert [len(p) for p in multi_dataset.parts] == [n for d in multi_dataset.directions for n in SHARDS[d]]
    assert len(multi_dataset) == sum(sum(s) for s in SHARDS.values())
    turkish = multi_dataset.directions.index("eng_Latn-tur_Latn")
    assert multi_dataset.folders[turkish] == ["shard000", "shard001", "shard002"]


def test_language_tags_come_first_on_the_right_side(multi_dataset, multi_data_bin):
    plain = plain_part(multi_data_bin, "eng_Latn-hin_Deva", 1)
    part = multi_dataset.part_index("eng_Latn-hin_Deva", 1)
    for local in (0, 7, 49):
        item = multi_dataset[int(multi_dataset.offsets[part]) + local]
        raw = plain[local]
        assert item["direction"] == "eng_Latn-hin_Deva"
        assert item["source"].tolist() == [TAG["eng_Latn"], *raw["source"].tolist()]  # NLLB: source-language tag
        assert item["target"].tolist() == [TAG["hin_Deva"], *raw["target"].tolist()]  # decoder: target-language tag


def test_encoder_tag_of_the_target_language_and_no_tags(multi_data_bin):
    target_tag = LangTokConfig(encoder_langtok="tgt", decoder_langtok=False)
    tgt_tag = MultiPairDataset.from_dir(multi_data_bin, langtok=target_tag)
    none = MultiPairDataset.from_dir(multi_data_bin, langtok=LangTokConfig(encoder_langtok=None, decoder_langtok=False))
    g = int(tgt_tag.offsets[tgt_tag.part_index("fra_Latn-eng_Latn", 0)]) + 3
    assert tgt_tag[g]["source"].tolist() == [TAG["eng_Latn"], *none[g]["source"].tolist()]
    assert tgt_tag[g]["target"].tolist() == none[g]["target"].tolist()


def test_tags_count_in_lengths_and_the_length_filter(multi_data_bin):
    none = MultiPairDataset.from_dir(multi_data_bin, langtok=LangTokConfig(None, False))
    tagged = MultiPairDataset.from_dir(multi_data_bin)
    ids = np.arange(len(none))
    assert np.array_equal(tagged.src_sizes[ids], none.src_sizes[ids] + 1)
    assert np.array_equal(tagged.tgt_sizes[ids], none.tgt_sizes[ids] + 1)
    limit = int(np.median(none.src_sizes[ids]))
    options = PairOptions(max_source_positions=limit)
    filtered_plain = MultiPairDataset.from_dir(multi_data_bin, langtok=LangTokConfig(None, False), options=options)
    filtered_tagged = MultiPairDataset.from_dir(multi_data_bin, options=options)
    assert filtered_plain.filter_report.num_kept == int((none.src_sizes[ids] <= limit).sum())
    assert filtered_tagged.filter_report.num_kept == int((none.src_sizes[ids] + 1 <= limit).sum())  # the tag counts


def test_custom_tag_template(tmp_path):
    root = tmp_path / "bin"
    root.mkdir()
    (root / "dict.txt").write_text("".join(f"w{i} 1\n" for i in range(4, VOCAB)) + "[en] 1\n[de] 1\n")
    write_direction(root, "train", "en-de", 10, seed=3)
    ds = MultiPairDataset.from_dir(root, langtok=LangTokConfig(template="[{lang}]"))
    assert ds[0]["source"][0] == VOCAB and ds[0]["target"][0] == VOCAB + 1


def test_reads_what_tokenmill_prepare_writes(tmp_path):
    """End to end: ``prepare --directions`` output opened, tagged with its manifest's tokens, batched."""
    import json

    from tests.prepare.test_multilingual import settings
    from tests.prepare.test_multilingual import write_direction as write_raw
    from tokenmill.prepare import build_config, prepare

    raw = tmp_path / "raw"
    raw.mkdir()
    for k, (tgt, n) in enumerate((("deu_Latn", 200), ("rus_Cyrl", 40), ("zho_Hans", 12))):
        write_raw(raw, tgt, n, k)
    directions = ["eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl", "eng_Latn-zho_Hans"]
    out = prepare(build_config(settings(raw, tmp_path, directions)), progress=False).destdir
    tags = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["vocab"]["lang_tokens"]
    ds = MultiPairDataset.from_dir(out)
    assert ds.directions == directions and ds.folders == [["shard000", "shard001"]] * 3
    for name in directions:
        src, tgt = name.split("-")
        item = ds[int(ds.offsets[ds.part_index(name, 1)])]
        assert item["source"][0] == tags[src] and item["target"][0] == tags[tgt]
    valid = MultiPairDataset.from_dir(out, "valid")
    assert [[len(p) for p in s] for s in valid.shards] == [[5], [5], [5]]
    batch = next(iter(multilingual_batches(out, BATCHES, SAMPLING, cache=False)))
    assert set(batch["direction"].tolist()) <= {0, 1, 2} and batch["net_input"]["src_tokens"].shape[0] > 0


# ---------------------------------------------------------------- rows of many directions
def test_mixed_batch_rows_equal_each_directions_own_rows(multi_dataset, multi_data_bin):
    rng = np.random.default_rng(0)
    ids = rng.choice(len(multi_dataset), 40, replace=False)
    part, local = multi_dataset.locate(ids)
    for which in ("source", "target"):
        rows = multi_dataset.rows(ids, which)
        expected = [
            multi_dataset.parts[p].rows(np.array([i]), which).tokens.tolist() for p, i in zip(part, local, strict=True)
        ]
        got = [rows.tokens[rows.offsets[r] : rows.offsets[r + 1]].tolist() for r in range(len(ids))]
        assert got == expected
        for left in (True, False):
            matrix, lengths = multi_dataset.padded(ids, which, 1, left=left, multiple=8)
            assert np.array_equal(matrix, pad_rows(rows.tokens, rows.offsets, 1, left=left, multiple=8))
            assert np.array_equal(lengths, rows.lengths)


# ---------------------------------------------------------------- shards and data paths
def test_valid_comes_from_the_first_shard_only(multi_data_bin, tmp_path):
    copy = tmp_path / "multi_data_bin"
    shutil.copytree(multi_data_bin, copy)
    write_direction(copy / "shard001", "valid", "eng_Latn-tur_Latn", 33, seed=1)  # must be ignored
    valid = MultiPairDataset.from_dir(copy, "valid")
    assert [[len(part) for part in s] for s in valid.shards] == [[VALID[d]] for d in valid.directions]
    assert {f for folders in valid.folders for f in folders} == {"shard000"}


def test_fairseq_colon_separated_paths_and_lists(multi_data_bin, multi_dataset):
    folders = [multi_data_bin / f"shard{k:03d}" for k in range(3)]
    joined = MultiPairDataset.from_dir(":".join(map(str, folders)))
    listed = MultiPairDataset.from_dir(folders)
    assert joined.fingerprint() == listed.fingerprint() == multi_dataset.fingerprint()
    assert len(joined) == len(multi_dataset) and joined.directions == multi_dataset.directions


def test_chosen_directions_and_reversed_files(multi_data_bin):
    ds = MultiPairDataset.from_dir(multi_data_bin, directions=["eng_Latn-fra_Latn", "eng_Latn-hin_Deva"])
    assert ds.directions == ["eng_Latn-fra_Latn", "eng_Latn-hin_Deva"]
    plain = plain_part(multi_data_bin, "fra_Latn-eng_Latn", 0)
    item = ds[2]  # eng->fra read from the fra_Latn-eng_Latn files, sides swapped
    assert item["source"].tolist() == [TAG["eng_Latn"], *plain[2]["target"].tolist()]
    assert item["target"].tolist() == [TAG["fra_Latn"], *plain[2]["source"].tolist()]


# ---------------------------------------------------------------- bad input
def test_direction_not_on_disk(multi_data_bin):
    with pytest.raises(ConfigError, match=r"direction eng_Latn-deu_Latn: it has no train files.*on disk: eng_Latn"):
        MultiPairDataset.from_dir(multi_data_bin, directions=["eng_Latn-deu_Latn"])
    with pytest.raises(ConfigError, match="not 'src-tgt'"):
        MultiPairDataset.from_dir(multi_data_bin, directions=["eng.Latn-tur"])


def test_direction_listed_in_the_manifest_without_files(multi_data_bin, tmp_path):
    copy = tmp_path / "multi_data_bin"
    shutil.copytree(multi_data_bin, copy)
    (copy / "manifest.json").write_text('{"directions": ["eng_Latn-tur_Latn", "eng_Latn-zul_Latn"]}')
    with pytest.raises(ConfigError, match=r"direction eng_Latn-zul_Latn: manifest\.json lists it but it has no train"):
        MultiPairDataset.from_dir(copy)


def test_shard_folder_with_one_side_missing(multi_data_bin, tmp_path):
    copy = tmp_path / "multi_data_bin"
    shutil.copytree(multi_data_bin, copy)
    for suffix in (".bin", ".idx"):
        (copy / "shard001" / f"train.eng_Latn-hin_Deva.hin_Deva{suffix}").unlink()
    with pytest.raises(FormatError, match=r"shard001: direction eng_Latn-hin_Deva .*train.eng_Latn-hin_Deva.hin_Deva"):
        MultiPairDataset.from_dir(copy)


def test_mismatched_sentence_counts_name_the_direction(multi_data_bin, tmp_path):
    copy = tmp_path / "multi_data_bin"
    shutil.copytree(multi_data_bin, copy)
    write_direction(copy / "shard001", "train", "eng_Latn-hin_Deva", 51, seed=5, sides="tgt")
    with pytest.raises(FormatError, match=r"direction eng_Latn-hin_Deva, shard folder .*shard001: .*50 sentences"):
        MultiPairDataset.from_dir(copy)


def test_language_tag_missing_from_the_dictionary(tmp_path):
    root = make_data_bin(tmp_path / "bin", {"eng_Latn-tur_Latn": [10]}, langs=["eng_Latn"])
    with pytest.raises(ConfigError, match="direction eng_Latn-tur_Latn: language token __tur_Latn__ is not in"):
        MultiPairDataset.from_dir(root)
    assert len(MultiPairDataset.from_dir(root, langtok=LangTokConfig(decoder_langtok=False))) == 10


def test_dictionaries_must_be_shared(multi_data_bin, tmp_path):
    copy = tmp_path / "multi_data_bin"
    shutil.copytree(multi_data_bin, copy)
    with open(copy / "shard000" / "dict.hin_Deva.txt", "a", encoding="utf-8") as handle:
        handle.write("extra 1\n")
    with pytest.raises(FormatError, match="differ; a multilingual data set uses one shared dictionary"):
        MultiPairDataset.from_dir(copy)


def test_missing_data_paths(tmp_path):
    with pytest.raises(TokenmillError, match="does not exist"):
        MultiPairDataset.from_dir(f"{tmp_path}/a:{tmp_path}/b")
    with pytest.raises(ConfigError, match="no train data"):
        MultiPairDataset.from_dir(tmp_path)


@pytest.mark.parametrize(("hard", "opens"), [(4096, True), (100, False)])
def test_the_open_file_limit_is_raised_for_many_shards_or_named(multi_data_bin, hard, opens):
    import resource
    import subprocess
    import sys

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (100, hard))

    code = (
        "import resource, sys\n"
        "from tokenmill.data import MultiPairDataset\n"
        "from tokenmill.errors import ConfigError\n"
        "try:\n"
        f"    MultiPairDataset.from_dir({str(multi_data_bin)!r})\n"
        "except ConfigError as error:\n"
        "    print(error); sys.exit(3)\n"
        "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
    )
    machine_hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if machine_hard != resource.RLIM_INFINITY and machine_hard < hard:
        pytest.skip("this machine's hard limit is lower than the test needs")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=low_limit)
    if opens:
        assert done.returncode == 0, done.stderr
        assert int(done.stdout) == 4 * 6 + 256, "soft limit raised to what 6 parts (4 files each) need"
    else:
        assert done.returncode == 3, done.stderr
        assert "maps 24 files, but this process may open at most 100" in done.stdout


