"""Config from YAML and flags: names users know, unknown keys rejected, bad values explained — all
before any work starts, with the setting (and the config file it came from) named."""

from __future__ import annotations

import typing

import pytest

from tokenmill.errors import ConfigError
from tokenmill.prepare import PrepareConfig, build_config, load_yaml
from tokenmill.prepare.config import SECTION_TYPES, TOKENIZERS, LayoutName, Leakage
from tokenmill.settings import check_settings


@pytest.fixture(autouse=True)
def _in_corpus(tmp_path, monkeypatch):
    """Run in a folder with t.en/t.de, v.en/v.de, a/train.{en,de}, b/train.{en,de} and a dictionary."""
    monkeypatch.chdir(tmp_path)
    for prefix in ("t", "v", "a/train", "b/train", "a/valid"):
        for lang in ("en", "de"):
            path = tmp_path / f"{prefix}.{lang}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("hello world\n", encoding="utf-8")
    (tmp_path / "dict.txt").write_text("hello 3\nworld 2\n", encoding="utf-8")
    (tmp_path / "binary.bin").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "bad-dict.txt").write_text("hello 3\nworld many\n", encoding="utf-8")


BASE = {"source_lang": "en", "target_lang": "de", "trainpref": "t"}


def test_yaml_and_lists(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "source_lang: en\ntarget_lang: de\ntrainpref: a/train,b/train\nvalidpref: [a/valid]\n"
        "filters:\n  max_tokens: 100\n  max_ratio: 3\n  langid_candidates: en,de\nnormalize: {nfkc: true}\n"
        "character_coverage: 1\nuser_defined_symbols: [__en__, __de__]\n",
        encoding="utf-8",
    )
    config = build_config(load_yaml(path), config_file=path)
    assert config.inputs.trainpref == ["a/train", "b/train"] and config.inputs.validpref == ["a/valid"]
    assert config.cleaning.filters.max_tokens == 100 and config.cleaning.normalize.nfkc
    assert config.cleaning.filters.langid_candidates == ("en", "de")
    assert config.tokenizer.sentencepiece.character_coverage == 1, "an int is a fine float"
    assert config.tokenizer.user_defined_symbols == ["__en__", "__de__"]
    assert config.langs == ["en", "de"] and not config.monolingual


def test_the_defaults_pass_their_own_checks():
    config = PrepareConfig()
    for name, kind in SECTION_TYPES.items():
        check_settings(kind, getattr(config, name), lambda field: field)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({**BASE, "vocab_sise": 5}, r"unknown setting 'vocab_sise' \(did you mean 'vocab_size'\?\)"),
        ({"source_lang": "en"}, "--trainpref is required"),
        ({"trainpref": "t"}, "--source-lang is required"),
        ({**BASE, "tokenizer": "bpe"},
         "--tokenizer must be one of sentencepiece, hf, tiktoken, t2t-subword, none, got 'bpe'"),
        ({**BASE, "tokenizer": "sentencepice"}, r"did you mean 'sentencepiece'\?"),
        ({**BASE, "layout": "tf"}, "--layout must be one of fairseq, megatron, got 'tf'"),
        ({**BASE, "filters": {"max_tokenz": 3}}, r"unknown filters setting 'max_tokenz' \(did you mean 'max_tokens'"),
        ({**BASE, "normalize": {"nfkcc": True}}, r"unknown normalize setting 'nfkcc' \(did you mean 'nfkc'\?\)"),
        ({**BASE, "spm_model": "/nope.model"}, "--spm-model: /nope.model: no such file"),
        ({"source_lang": "en", "trainpref": "t", "input_format": "tsv"}, "give --target-lang"),
        ({"trainpref": "t", "input_format": "jsonl"}, "--source-lang is required"),
        # types: bools are not ints, strings are not numbers
        ({**BASE, "vocab_size": "eight"}, "--vocab-size: expected an integer, got 'eight'"),
        ({**BASE, "vocab_size": True}, "--vocab-size: expected an integer, got True"),
        ({**BASE, "character_coverage": "high"}, "--character-coverage: expected a number, got 'high'"),
        ({**BASE, "dedup": "yes"}, "--dedup: expected true or false, got 'yes'"),
        ({**BASE, "normalize": {"nfkc": 1}}, "--nfkc: expected true or false, got 1"),
        ({**BASE, "filters": {"min_chars": "3"}}, "--filter-min-chars: expected an integer, got '3'"),
        ({**BASE, "filters": 3}, "^filters: expected a mapping of filters settings"),
        ({**BASE, "trainpref": {"a": 1}}, "--trainpref: expected a list of strings"),
        ({**BASE, "source_lang": 7}, r"--source-lang: expected a string, got 7 \(in YAML, put it in quotes\)"),
        # ranges, each naming its own flag
        ({**BASE, "character_coverage": 5}, r"--character-coverage must be in \(0, 1\], got 5"),
        ({**BASE, "character_coverage": 0}, r"--character-coverage must be in \(0, 1\], got 0"),
        ({**BASE, "vocab_size": 0}, "--vocab-size must be >= 8"),
        ({**BASE, "input_sentence_size": 0}, "--input-sentence-size must be >= 1, got 0"),
        ({**BASE, "workers": 0}, "^--workers must be >= 1, got 0$"),
        ({**BASE, "chunk_lines": 0}, "--chunk-lines must be >= 1, got 0"),
        ({**BASE, "padding_factor": 0}, "--padding-factor must be >= 1, got 0"),
        ({**BASE, "shard_size": -1}, "--shard-size must be >= 0"),
        ({**BASE, "nwordssrc": -2}, "--nwordssrc must be >= -1"),
        ({**BASE, "thresholdtgt": -1}, "--thresholdtgt must be >= 0, got -1"),
        ({**BASE, "seed": -1}, "--seed must be >= 0, got -1"),
        ({**BASE, "approx_vocab_size": 0}, "--approx-vocab-size must be >= 1"),
        ({**BASE, "max_subtoken_length": 0}, "--max-subtoken-length must be >= 1"),
        ({**BASE, "spm_temperature": 0.0}, "--spm-temperature must be > 0"),
        ({**BASE, "filters": {"max_ratio": 0.5}}, "--filter-max-ratio must be >= 1"),
        ({**BASE, "filters": {"max_nonletter": 1.5}}, r"--filter-max-nonletter must be a fraction in \[0, 1\]"),
        ({**BASE, "filters": {"min_chars": -1}}, "--filter-min-chars must be >= 0"),
        ({**BASE, "filters": {"src_script": "Klingon"}}, "--filter-src-script: unknown script"),
        # languages
        ({**BASE, "target_lang": "en"}, "--source-lang and --target-lang are both 'en'"),
        ({**BASE, "source_lang": "en/x"}, "--source-lang must be a language code usable in file names"),
        ({**BASE, "target_lang": "d e"}, "--target-lang must be a language code usable in file names"),
        ({**BASE, "source_lang": "e.n"}, "--source-lang must be a language code"),
        ({**BASE, "destdir": ""}, "--destdir must be a non-empty string"),
        # every input file exists, named with its flag
        ({**BASE, "trainpref": "t,nope"}, r"--trainpref: nope\.en: no such file"),
        ({**BASE, "target_lang": "fr"}, r"--trainpref: t\.fr: no such file"),
        ({**BASE, "validpref": "gone"}, r"--validpref: gone\.en: no such file"),
        ({**BASE, "tokenizer": "none", "align_suffix": "align"}, r"--trainpref with --align-suffix: t\.align: no such"),
        ({**BASE, "input_format": "jsonl", "trainpref": "t.jsonl"}, r"--trainpref: t\.jsonl: no such file"),
        ({**BASE, "input_format": "tsv", "trainpref": "a"}, r"--trainpref: a: is a directory"),
        # given files are of the right kind
        ({**BASE, "spm_model": "dict.txt"}, r"--spm-model: .*dict\.txt is not a SentencePiece model"),
        ({**BASE, "srcdict": "binary.bin"}, r"--srcdict: binary\.bin is not a fairseq dictionary \(not UTF-8"),
        ({**BASE, "tgtdict": "bad-dict.txt"}, r"--tgtdict: bad-dict\.txt:2: expected '<token> <count>'"),
        ({**BASE, "srcdict": "a"}, r"--srcdict: a is a directory, not a fairseq dictionary"),
        ({"source_lang": "en", "trainpref": "t", "tgtdict": "dict.txt"}, "--tgtdict is for the target side"),
    ],
)
def test_bad_settings_name_the_problem(settings, message):
    with pytest.raises(ConfigError, match=message):
        build_config(settings)


def test_a_good_dictionary_and_model_are_accepted(tmp_path):
    import sentencepiece

    lines = [f"word{i % 37} other{i % 11} thing" for i in range(400)]
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=str(tmp_path / "m"),
                                             vocab_size=30, hard_vocab_limit=False, minloglevel=2)
    config = build_config({**BASE, "srcdict": "dict.txt", "tgtdict": "dict.txt", "spm_model": "m.model"})
    assert config.tokenizer.spm_model == "m.model" and config.dictionary.srcdict == "dict.txt"


def test_compressed_inputs_resolve_like_the_pipeline(tmp_path):
    import gzip

    (tmp_path / "z.en.gz").write_bytes(gzip.compress(b"a\n"))
    (tmp_path / "z.de").write_text("b\n", encoding="utf-8")
    assert build_config({**BASE, "trainpref": "z"}).inputs.trainpref == ["z"]


def test_values_from_a_yaml_file_are_named_by_file_and_key(tmp_path):
    path = tmp_path / "c.yaml"

    def fails(text, message, **overrides):
        path.write_text("source_lang: en\ntarget_lang: de\ntrainpref: t\n" + text, encoding="utf-8")
        with pytest.raises(ConfigError, match=message):
            build_config(load_yaml(path), overrides=overrides or None, config_file=str(path))

    where = str(path).replace("\\", "\\\\").replace(".", r"\.")
    fails("vocab_size: eight\n", f"^{where}: vocab_size: expected an integer, got 'eight'$")
    fails("vocab_size: 0\n", f"^{where}: vocab_size must be >= 8")
    fails("character_coverage: 1e-3\n", f"{where}: character_coverage: expected a number, got '1e-3'")
    fails("filters: {max_ratio: 0.5}\n", f"{where}: filters.max_ratio must be >= 1")
    fails("vocab_sise: 8\n", rf"{where}: unknown setting 'vocab_sise' \(did you mean 'vocab_size'\?\)")
    fails("nfkc: true\n", r"unknown setting 'nfkc' \(did you mean normalize: \{nfkc: \.\.\.\}\?\)")
    fails("filter_max_tokens: 3\n", r"did you mean filters: \{max_tokens: \.\.\.\}\?")
    fails("normalize: {nfkcc: true}\n", rf"{where}: unknown normalize setting 'nfkcc' \(did you mean 'nfkc'\?\)")
    fails("directions: {eng_Latn-deu_Latn: {trainprefs: x}}\n", r"did you mean 'trainpref'\?")
    # a flag given on top of a bad file value wins, and a bad flag is named as a flag
    path.write_text("source_lang: en\ntarget_lang: de\ntrainpref: t\nvocab_size: eight\n", encoding="utf-8")
    assert build_config(load_yaml(path), overrides={"vocab_size": 100}, config_file=path).tokenizer.vocab_size == 100
    with pytest.raises(ConfigError, match=r"^--vocab-size must be >= 8 \(SentencePiece needs .*\), got 0$"):
        build_config(load_yaml(path), overrides={"vocab_size": 0}, config_file=path)
    path.write_text("source_lang: en\ntarget_lang: de\ntrainpref: t\nfilters: {max_ratio: 3}\n", encoding="utf-8")
    config = build_config(load_yaml(path), overrides={"filters": {"max_tokens": 50}}, config_file=path)
    filters = config.cleaning.filters
    assert filters.max_ratio == 3 and filters.max_tokens == 50, "nested flags merge into the file's"


def test_yaml_norway_problem_says_to_quote(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("source_lang: no\ntarget_lang: de\ntrainpref: t\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"source_lang: expected a string, got False \(in YAML, put it in quotes\)"):
        build_config(load_yaml(path), config_file=path)


def test_yaml_must_be_a_mapping(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_yaml(path)
    path.write_text("a: [\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"c\.yaml:2:1: not valid YAML") as info:
        load_yaml(path)
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="is a directory, not a config file"):
        load_yaml(tmp_path)
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_yaml(tmp_path / "bin.yaml")


def test_multilingual_files_are_checked_per_direction(tmp_path):
    for lang in ("eng_Latn", "deu_Latn"):
        (tmp_path / f"m.eng_Latn-deu_Latn.{lang}").write_text("x\n", encoding="utf-8")
    config = build_config({"directions": "eng_Latn-deu_Latn", "trainpref": "m"})
    assert config.directions.files["eng_Latn-deu_Latn"]["trainpref"] == ["m.eng_Latn-deu_Latn"]
    with pytest.raises(ConfigError, match=r"direction eng_Latn-fra_Latn: --trainpref: m\.eng_Latn-fra_Latn\.eng_Latn"):
        build_config({"directions": "eng_Latn-deu_Latn,eng_Latn-fra_Latn", "trainpref": "m"})
    with pytest.raises(ConfigError, match="--num-shards must be >= 1"):
        build_config({"directions": "eng_Latn-deu_Latn", "trainpref": "m", "num_shards": 0})


def test_choices_have_one_source_of_truth():
    from tokenmill.store.format import Layout
    from tokenmill.text.dedup import LeakageMode

    assert set(typing.get_args(LayoutName)) == {layout.value for layout in Layout}
    assert set(typing.get_args(Leakage)) == {*typing.get_args(LeakageMode), "off"}
    from tokenmill.vocab.tokenizer import BACKENDS

    assert {t for t in TOKENIZERS if t != "none"} | {"whitespace"} == set(BACKENDS), "every backend is a choice"


def test_megatron_json_keys_is_the_source_key_one_key_per_run(tmp_path):
    import gzip
    import json

    from tokenmill.prepare import prepare
    from tokenmill.store import IndexedDataset

    rows = "".join(json.dumps({"body": f"doc {i} words", "text": "other"}) + "\n" for i in range(5))
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(rows.encode()))
    settings = {"source_lang": "en", "trainpref": str(tmp_path / "c.jsonl.gz"), "input_format": "jsonl",
                "tokenizer": "none", "layout": "megatron", "destdir": str(tmp_path / "lm"), "json_keys": "body"}
    config = build_config(settings)
    assert config.inputs.source_key == "body"
    summary = prepare(config, progress=False)
    assert len(IndexedDataset(summary.destdir / "train")) == 5
    with pytest.raises(ConfigError, match="give one key per run"):
        build_config({**settings, "json_keys": "body,text"})
