"""The settings as frozen sections: flat keys in, one section per concern, checked once into a new object, and
the same flat mapping out (what manifests and task settings record)."""

from __future__ import annotations

import dataclasses

import pytest

from tokenmill.errors import ConfigError
from tokenmill.prepare import PrepareConfig, build_config
from tokenmill.prepare.config import PLACES, SECTION_TYPES, SETTINGS, field_sections


@pytest.fixture(autouse=True)
def _in_corpus(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for lang in ("en", "de"):
        (tmp_path / f"t.{lang}").write_text("hello world\n", encoding="utf-8")
        (tmp_path / f"m.en-de.{lang}").write_text("hello world\n", encoding="utf-8")
    (tmp_path / "docs.jsonl").write_text('{"body": "one doc"}\n', encoding="utf-8")


BASE = {"source_lang": "en", "target_lang": "de", "trainpref": "t"}


def test_each_key_lives_in_one_section_in_the_order_of_the_help():
    assert [setting.key for setting in SETTINGS] == list(PrepareConfig().to_dict()), "to_dict keeps the key order"
    assert len(PLACES) == len(SETTINGS)
    titles = list(dict.fromkeys(field_sections().values()))
    assert titles == [kind.TITLE for kind in SECTION_TYPES.values()], "one --help section per config section"
    config = build_config({**BASE, "vocab_size": 300, "tokenizer": "sentencepiece", "engine": "local",
                           "shard_size": 7, "nwordssrc": 50})
    assert config.tokenizer.vocab_size == 300 and config.tokenizer.name == "sentencepiece"
    assert config.engine.name == "local" and config.output.shard_size == 7 and config.dictionary.nwordssrc == 50
    assert config.to_dict()["vocab_size"] == 300 and config.to_dict()["tokenizer"] == "sentencepiece"


def test_sections_are_frozen_and_validation_makes_a_new_object():
    given = PrepareConfig(source_lang="en", trainpref=["docs.jsonl"], input_format="jsonl", json_keys=["body"],
                          tokenizer="none")
    checked = given.validate()
    assert checked is not given
    assert checked.inputs.source_key == "body", "--json-keys fills in the source key of the checked config"
    assert given.inputs.source_key is None, "the config validated is left as it was"
    assert checked.validate() is checked, "a checked config is not checked again"
    with pytest.raises(dataclasses.FrozenInstanceError):
        checked.output.shard_size = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        checked.inputs = checked.inputs  # type: ignore[misc]


def test_flat_and_section_construction_agree():
    flat = PrepareConfig(vocab_size=300, shard_size=4, directions={})
    by_section = PrepareConfig(tokenizer=dataclasses.replace(PrepareConfig().tokenizer, vocab_size=300),
                               output=dataclasses.replace(PrepareConfig().output, shard_size=4))
    assert flat == by_section
    changed = flat.replaced(shard_size=9, tokenizer="hf")
    assert (changed.output.shard_size, changed.tokenizer.name, changed.tokenizer.vocab_size) == (9, "hf", 300)
    assert flat.output.shard_size == 4 and flat.tokenizer.name == "sentencepiece", "replaced() makes a copy"
    with pytest.raises(TypeError, match="unexpected keyword argument 'vocab'"):
        PrepareConfig(vocab=3)


def test_each_backend_owns_its_training_settings_under_flat_keys():
    config = build_config({**BASE, "character_coverage": 1.0, "split_digits": True, "min_frequency": 5,
                           "approx_vocab_size": 300, "vocab_size": 400})
    tokenizer = config.tokenizer
    assert tokenizer.sentencepiece.character_coverage == 1.0 and tokenizer.sentencepiece.split_digits
    assert tokenizer.hf.min_frequency == 5 and tokenizer.t2t.approx_vocab_size == 300
    assert tokenizer.vocab_size == 400, "a setting every backend reads stays at the top of the section"
    assert {PLACES[key].sub for key in ("character_coverage", "min_frequency", "file_byte_budget", "vocab_size")} \
        == {"sentencepiece", "hf", "t2t", None}
    flat = config.to_dict()
    assert (flat["character_coverage"], flat["min_frequency"], flat["approx_vocab_size"]) == (1.0, 5, 300)
    assert config.value("split_digits") is True
    replaced = config.replaced(min_frequency=7)
    assert replaced.tokenizer.hf.min_frequency == 7 and replaced.tokenizer.sentencepiece.split_digits, "one field"
    assert config.tokenizer.hf.min_frequency == 5, "replaced() makes a copy"
    assert tokenizer.training("sentencepiece") is tokenizer.sentencepiece
    assert tokenizer.training("t2t-subword") is tokenizer.t2t and tokenizer.training("tiktoken") is None
    with pytest.raises(ConfigError, match="--min-frequency"):  # each sub-section checks its own fields
        build_config({**BASE, "min_frequency": -1})
    with pytest.raises(ConfigError, match=r"c\.yaml: max_subtoken_length"):
        build_config({**BASE, "max_subtoken_length": 0}, config_file="c.yaml")


def test_a_direction_config_is_a_copy_and_the_run_config_is_unchanged():
    config = build_config({"directions": "en-de", "trainpref": "m", "num_shards": 3, "vocab_size": 300})
    direction = config.direction_config("en-de")
    assert (direction.inputs.source_lang, direction.inputs.target_lang) == ("en", "de")
    assert direction.inputs.trainpref == ["m.en-de"] and direction.dictionary.joined_dictionary
    assert direction.directions.files == {} and direction.directions.num_shards == 1
    assert direction.tokenizer == config.tokenizer, "the shared settings are the run's"
    assert config.directions.num_shards == 3 and config.inputs.source_lang is None
    assert list(config.directions.files) == ["en-de"]


def test_cross_section_rules_still_name_the_flags():
    with pytest.raises(ConfigError, match="--align-suffix needs --tokenizer none"):
        build_config({**BASE, "align_suffix": "align"})
    with pytest.raises(ConfigError, match="--spm-model only applies to --tokenizer sentencepiece"):
        build_config({**BASE, "tokenizer": "hf", "spm_model": "x.model"})
    with pytest.raises(ConfigError, match="with --directions these settings do not apply: --shard-size"):
        build_config({"directions": "en-de", "trainpref": "m", "shard_size": 5})
