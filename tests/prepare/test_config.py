"""Config from YAML and flags: names users know, unknown keys rejected, bad values explained."""

from __future__ import annotations

import pytest

from tokenmill.errors import ConfigError
from tokenmill.prepare import build_config, load_yaml


def test_yaml_and_lists(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "source_lang: en\ntarget_lang: de\ntrainpref: a/train,b/train\nvalidpref: [a/valid]\n"
        "filters: {max_tokens: 100, max_ratio: 3}\nnormalize: {nfkc: true}\n",
        encoding="utf-8",
    )
    config = build_config(load_yaml(path))
    assert config.trainpref == ["a/train", "b/train"] and config.validpref == ["a/valid"]
    assert config.filters.max_tokens == 100 and config.normalize.nfkc
    assert config.langs == ["en", "de"] and not config.monolingual


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"source_lang": "en", "trainpref": "t", "vocab_sise": 5}, "unknown setting.*vocab_sise"),
        ({"source_lang": "en"}, "--trainpref is required"),
        ({"trainpref": "t"}, "--source-lang is required"),
        ({"source_lang": "en", "trainpref": "t", "tokenizer": "bpe"}, "--tokenizer must be"),
        ({"source_lang": "en", "trainpref": "t", "layout": "tf"}, "--layout must be"),
        ({"source_lang": "en", "trainpref": "t", "filters": {"max_tokenz": 3}}, "unknown filters setting"),
        ({"source_lang": "en", "trainpref": "t", "spm_model": "/nope.model"}, "does not exist"),
        ({"source_lang": "en", "trainpref": "t", "input_format": "tsv"}, "give --target-lang"),
        ({"trainpref": "t", "input_format": "jsonl"}, "--source-lang is required"),
    ],
)
def test_bad_settings_name_the_problem(settings, message):
    with pytest.raises(ConfigError, match=message):
        build_config(settings)


def test_yaml_must_be_a_mapping(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_yaml(path)
    path.write_text("a: [\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_yaml(path)


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
    assert config.source_key == "body"
    summary = prepare(config, progress=False)
    assert len(IndexedDataset(summary.destdir / "train")) == 5
    with pytest.raises(ConfigError, match="give one key per run"):
        build_config({**settings, "json_keys": "body,text"})
