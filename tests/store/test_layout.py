"""store/layout.py spells every on-disk name once, and reads each back: what a builder writes, a parser returns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenmill.errors import ConfigError
from tokenmill.store.layout import (
    AlignName,
    MegatronName,
    StoreName,
    align_name,
    dict_name,
    in_split,
    is_direction,
    is_shard_name,
    megatron_name,
    pair_prefix,
    parse_align_name,
    parse_direction,
    parse_megatron_name,
    parse_store_name,
    shard_dir,
    shard_dirs,
    shard_index,
    split_part,
    store_name,
    stores_in,
)
from tokenmill.store.manifest import ManifestHints, read_manifest_hints


# ----------------------------------------------------------------------------- builder -> parser
@pytest.mark.parametrize(
    ("split", "src", "tgt"),
    [
        ("train", "en", "de"),
        ("valid1", "eng_Latn", "deu_Latn"),
        ("test", "zh", "en"),
        ("train.v2", "en", "ru"),  # a split may hold dots: the codes never do
        ("train", "zh-Hans", "en"),  # codes may hold '-': the side named by lang settles where to cut
        ("train", "en", "sr-Latn"),
        ("train", "pt-BR", "pt-PT"),
    ],
)
def test_a_side_of_a_pair_reads_back(split, src, tgt):
    for lang in (src, tgt):
        name = store_name(split, src, tgt, lang)
        parsed = parse_store_name(name)
        assert parsed == StoreName(split, src, tgt, lang)
        assert parsed.paired and parsed.direction == f"{src}-{tgt}"
        assert parsed.name == str(parsed) == name
        assert name.startswith(pair_prefix(split, src, tgt) + ".")


def test_the_examples_of_the_docstrings():
    assert store_name("train", "de", "en", "de") == "train.de-en.de"
    assert parse_store_name("train.de-en.de") == StoreName("train", "de", "en", "de")
    assert store_name("train", "en", None, "en") == "train"  # monolingual: fairseq's language-model layout
    assert parse_store_name("train") == StoreName("train")
    assert align_name("train", "de", "en") == "train.align.de-en"
    assert megatron_name("corpus", "text") == "corpus_text_document"
    assert dict_name("de") == "dict.de.txt" and dict_name(None) == "dict.txt"
    assert shard_dir(7) == "shard007"
    assert parse_direction("eng_Latn-tur_Latn") == ("eng_Latn", "tur_Latn")


def test_paths_and_file_names_read_as_their_store():
    expected = StoreName("valid", "en", "de", "de")
    assert parse_store_name("valid.en-de.de.idx") == expected
    assert parse_store_name("valid.en-de.de.bin") == expected
    assert parse_store_name(Path("data-bin/shard003/valid.en-de.de")) == expected
    assert parse_store_name("data-bin/valid.en-de.de") == expected


@pytest.mark.parametrize("split", ["train", "valid", "train1", "my-corpus_2024"])
def test_a_monolingual_store_reads_back(split):
    parsed = parse_store_name(store_name(split, None, None, None))
    assert parsed == StoreName(split) and not parsed.paired and parsed.direction is None


@pytest.mark.parametrize(("split", "src", "tgt"), [("train", "en", "de"), ("valid2", "eng_Latn", "fra_Latn")])
def test_an_alignment_store_reads_back(split, src, tgt):
    name = align_name(split, src, tgt)
    assert parse_align_name(name) == AlignName(split, src, tgt)
    assert parse_align_name(name).name == name and parse_align_name(name).direction == f"{src}-{tgt}"
    assert parse_store_name(name) is None  # not a side of a pair
    assert parse_align_name("train.align") == AlignName("train")  # fairseq's name without the pair
    assert AlignName("train").name == "train.align" and AlignName("train").direction is None


@pytest.mark.parametrize(("prefix", "key"), [("corpus", "text"), ("my_corpus", "text"), ("c4.en", "content")])
def test_a_megatron_store_reads_back(prefix, key):
    name = megatron_name(prefix, key)
    assert parse_megatron_name(name) == MegatronName(prefix, key)
    assert parse_megatron_name(f"{name}.idx").name == name


@pytest.mark.parametrize("level", ["document", "sentence"])
def test_a_megatron_store_of_sentences_reads_back(level):
    name = megatron_name("corpus", "text", level)
    assert name == f"corpus_text_{level}"
    assert parse_megatron_name(name) == MegatronName("corpus", "text", level) and parse_megatron_name(name).name == name
    assert parse_megatron_name("corpus_text_paragraph") is None


def test_a_megatron_key_holding_an_underscore_keeps_its_full_name():
    parsed = parse_megatron_name(megatron_name("corpus", "raw_text"))
    assert parsed == MegatronName("corpus_raw", "text") and parsed.name == "corpus_raw_text_document"


@pytest.mark.parametrize("index", [0, 1, 7, 42, 999, 1000, 12345])
def test_a_shard_folder_reads_back(index):
    assert shard_index(shard_dir(index)) == index
    assert is_shard_name(Path("data-bin") / shard_dir(index))


def test_extra_training_parts_belong_to_their_split():
    assert [split_part("train", k) for k in range(3)] == ["train", "train1", "train2"]
    assert all(in_split(split_part("train", k), "train") for k in range(12))
    assert not in_split("valid", "train") and not in_split("trainx", "train") and not in_split("tra", "train")


# ----------------------------------------------------------------------------- odd names
@pytest.mark.parametrize(
    "name",
    [
        "",
        "train.en-de",  # a pair prefix, not a store: no side
        "train.en.de",  # no '-' between the codes
        "train.-de.de",  # an empty code
        "train.en-.en",
        ".en-de.en",  # no split
        "train..en-de.en",  # an empty piece in the split
        "train.en-de.",  # no side
        "train.a-b-c.x",  # two '-' and the side names neither end: no way to tell the codes apart
        "train.a-a-a.a-a",  # two ways to cut: refused rather than guessed
        "train.align.en-de",  # an alignment store
        "dict.en.txt",
    ],
)
def test_odd_store_names_are_refused(name):
    assert parse_store_name(name) is None


@pytest.mark.parametrize("name", ["train", "train.align.en", "train.align.en-de.en", "align.en-de", "train.align.-de"])
def test_odd_alignment_names_are_refused(name):
    assert parse_align_name(name) is None


@pytest.mark.parametrize(
    "name", ["document", "_document", "text_document", "corpus_text_document2", "corpus__document"]
)
def test_odd_megatron_names_are_refused(name):
    assert parse_megatron_name(name) is None


@pytest.mark.parametrize("name", ["shard", "shards", "shard0x", "shard-1", "xshard000", "shard000.bak", "Shard000"])
def test_odd_shard_names_are_refused(name):
    assert shard_index(name) is None and not is_shard_name(name)


@pytest.mark.parametrize(
    "name", ["eng_Latn", "eng_Latn-", "-deu", "en-de-fr", "en.x-de", "zh-Hans-en", "en-de\n", "a b-c"]
)
def test_odd_directions_are_refused_naming_the_rule(name):
    assert not is_direction(name)
    with pytest.raises(ConfigError, match="not 'src-tgt'"):
        parse_direction(name)


# ----------------------------------------------------------------------------- finding on disk
def _touch(folder: Path, *names: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(b"")


def test_shard_folders_come_in_shard_order_and_nothing_else_counts(tmp_path):
    for name in ("shard010", "shard002", "shard1000", "shard000", "shards", "shard_x", "notes"):
        (tmp_path / name).mkdir()
    _touch(tmp_path, "shard003")  # a file, not a folder
    assert [p.name for p in shard_dirs(tmp_path)] == ["shard000", "shard002", "shard010", "shard1000"]
    assert shard_dirs(tmp_path / "missing") == []


def test_stores_in_a_folder_by_their_index_files(tmp_path):
    _touch(
        tmp_path,
        "train.en-de.en.idx", "train.en-de.en.bin", "train.en-de.de.idx", "train.en-de.de.bin",
        "valid.en-de.en.idx", "train1.de-en.de.idx", "train.align.en-de.idx", "train.idx", "dict.en.txt",
        "notes.txt",
    )
    _touch(tmp_path / "shard000", "train.fr-de.fr.idx")  # below: not in this folder
    assert stores_in(tmp_path, "train") == [
        StoreName("train"),
        StoreName("train", "en", "de", "de"),
        StoreName("train", "en", "de", "en"),
    ]
    assert [s.name for s in stores_in(tmp_path)] == [
        "train", "train.en-de.de", "train.en-de.en", "train1.de-en.de", "valid.en-de.en",
    ]


# ----------------------------------------------------------------------------- manifest hints
def test_hints_of_a_manifest_prepare_wrote():
    hints = ManifestHints.from_json({
        "format": "tokenmill",
        "settings": {"source_lang": "en", "target_lang": "de"},
        "summary": {"directions": {"eng_Latn-deu_Latn": {"splits": {"train": {}, "valid": {}}},
                                   "eng_Latn-fra_Latn": {"splits": {"train": {}}}}},
        "vocab": {"lang_token_format": "__{lang}__"},
    })
    assert hints.language_pair == ("en", "de")
    assert hints.multilingual
    assert hints.directions_for("train") == ["eng_Latn-deu_Latn", "eng_Latn-fra_Latn"]
    assert hints.directions_for("valid") == ["eng_Latn-deu_Latn"]
    assert hints.directions_for("test") is None
    assert hints.lang_token_format == "__{lang}__"


def test_hints_of_partial_manifests():
    assert ManifestHints.from_json({"source_lang": "en", "target_lang": "de"}).language_pair == ("en", "de")
    listed = ManifestHints.from_json({"directions": ["en-de", "not a direction", 3]})
    assert listed.directions_for("train") == ["en-de"] and listed.directions_for("valid") is None
    assert not listed.multilingual
    assert ManifestHints.from_json({"vocab": {"lang_token_format": "no placeholder"}}).lang_token_format is None
    assert ManifestHints.from_json([1, 2]) == ManifestHints()


def test_reading_hints_never_raises(tmp_path):
    assert read_manifest_hints(None) == ManifestHints()
    assert read_manifest_hints(tmp_path) == ManifestHints()  # no manifest
    (tmp_path / "manifest.json").write_text("not json")
    assert read_manifest_hints(tmp_path) == ManifestHints()
    (tmp_path / "manifest.json").write_text(json.dumps({"settings": {"source_lang": "en", "target_lang": "de"}}))
    assert read_manifest_hints(tmp_path).language_pair == ("en", "de")


# ----------------------------------------------------------------------------- what a folder holds
def _touch_store(folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for suffix in (".bin", ".idx"):
        (folder / f"{name}{suffix}").write_bytes(b"")


def test_kind_of_store_lists():
    from tokenmill.store.layout import kind_of

    none = ManifestHints()
    assert kind_of(["train.de-en.de", "train.de-en.en"], none) == "pairs"
    assert kind_of(["train", "valid"], none) == "monolingual"
    assert kind_of(["corpus_text_document"], none) == "megatron"
    assert kind_of(["train"], ManifestHints(layout="megatron", present=True)) == "megatron"
    assert kind_of([], none) == "empty"
    assert kind_of(["shard000/train.a-b.a"], none, sharded=True) == "multilingual"  # no manifest: shards
    assert kind_of(["shard000/train.a-b.a"], ManifestHints(present=True), sharded=True) == "pairs"
    listed = ManifestHints(directions={"en-de": frozenset({"train"})}, present=True)
    assert kind_of(["train.en-de.en"], listed) == "multilingual"


def test_describe_folders(tmp_path):
    from tokenmill.store.layout import describe

    _touch_store(tmp_path / "pairs", "train.en-de.en")
    _touch_store(tmp_path / "pairs", "train.en-de.de")
    assert describe(tmp_path / "pairs").kind == "pairs"
    assert describe(tmp_path / "pairs" / "train.en-de.en").kind == "store"
    _touch_store(tmp_path / "lm", "corpus_text_document")
    lm = describe(tmp_path / "lm")
    assert lm.kind == "megatron" and "Megatron layout (corpus_text_document)" in lm.what()
    _touch_store(tmp_path / "many" / "shard000", "train.a-b.a")
    _touch_store(tmp_path / "many" / "shard001", "train.a-b.b")
    many = describe(tmp_path / "many")
    assert many.kind == "multilingual" and many.stores == ("shard000/train.a-b.a", "shard001/train.a-b.b")
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "train.en").write_text("hello\n")
    raw = describe(tmp_path / "raw")
    assert raw.kind == "text" and "train.en" in raw.what() and "tokenmill prepare" in raw.what()
    (tmp_path / "empty").mkdir()
    assert describe(tmp_path / "empty").kind == "empty"
    assert describe(tmp_path / "nothing").kind == "missing"
