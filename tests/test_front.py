"""The front door: the common jobs from ``import tokenmill`` alone."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import tokenmill
from tests.prepare.conftest import SAMPLE
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import PairDataset

CONFIG = {"source_lang": "en", "target_lang": "zh", "trainpref": str(SAMPLE / "train"),
          "validpref": str(SAMPLE / "valid"), "vocab_size": 200, "character_coverage": 1.0,
          "joined_dictionary": True}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TOKENMILL_CACHE", str(tmp_path_factory.mktemp("cache")))


def test_prepare_open_batches_and_resume_at_another_world_size(tmp_path):
    config_file = tmp_path / "c.yaml"
    config_file.write_text(json.dumps(CONFIG), encoding="utf-8")  # JSON is YAML
    summary = tokenmill.prepare(config_file, destdir=str(tmp_path / "bin"), progress=False)
    assert summary.splits["train"]["langs"]["zh"]["sentences"] == 343
    data = tokenmill.open(tmp_path / "bin")
    assert isinstance(data, PairDataset)
    assert len(data) == 343 and data.src_lang == "en" and data.tgt_lang == "zh"
    config = tokenmill.BatchConfig(max_tokens=256)
    stream = tokenmill.batches(data, config, rank=0, world_size=2, infinite=True)
    first = [batch["id"].tolist() for batch in itertools.islice(stream, 3)]
    assert all(first)
    resumed = tokenmill.batches(tmp_path / "bin", config, rank=0, world_size=3, infinite=True)
    resumed.load_state_dict(stream.state_dict())
    assert resumed.segments == [(2, 3)] and next(iter(resumed))["id"].size > 0
    valid = tokenmill.open(tmp_path / "bin", "valid")
    assert len(valid) == 30


def test_prepare_takes_a_mapping_or_a_config_and_checks_it_first(tmp_path):
    with pytest.raises(tokenmill.ConfigError, match=r"--vocab-size: expected an integer"):
        tokenmill.prepare({**CONFIG, "destdir": str(tmp_path / "x")}, vocab_size="eight")
    assert not (tmp_path / "x").exists()
    from tokenmill.prepare import build_config

    config = build_config({**CONFIG, "destdir": str(tmp_path / "y")})
    summary = tokenmill.prepare(config, destdir=str(tmp_path / "z"), progress=False)  # keywords override it
    assert summary.destdir == tmp_path / "z" and not (tmp_path / "y").exists()


def test_open_finds_language_model_stores_and_many_directions(tmp_path):
    docs = tmp_path / "train.en"
    docs.write_text("".join(f"document {i} with words\n" for i in range(20)), encoding="utf-8")
    tokenmill.prepare({"source_lang": "en", "trainpref": str(tmp_path / "train"), "destdir": str(tmp_path / "lm"),
                       "tokenizer": "none", "layout": "megatron"}, progress=False)
    store = tokenmill.open(tmp_path / "lm")
    assert isinstance(store, tokenmill.IndexedDataset) and len(store) == 20
    assert isinstance(tokenmill.open(tmp_path / "lm" / "train"), tokenmill.IndexedDataset)
    with pytest.raises(tokenmill.ConfigError, match="GPTDataset"):
        tokenmill.batches(store)

    from tests.prepare.test_multilingual import settings, write_direction

    raw = tmp_path / "raw"
    raw.mkdir()
    for tgt, n, seed in (("deu_Latn", 60, 1), ("rus_Cyrl", 20, 2)):
        write_direction(raw, tgt, n, seed)
    multi = tmp_path / "multi"
    multi.mkdir()
    tokenmill.prepare(settings(raw, multi, ["eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl"]), progress=False)
    mix = tokenmill.open(multi / "data_bin")
    assert isinstance(mix, MultiPairDataset) and len(mix.directions) == 2
    sampled = tokenmill.batches(mix, tokenmill.BatchConfig(max_tokens=200), sampling=tokenmill.SamplingConfig(
        temperature=5.0), collate=None)
    assert len(np.concatenate(list(sampled))) > 0


def test_loader_gives_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    tokenmill.prepare({**CONFIG, "destdir": str(tmp_path / "bin")}, progress=False)
    loader = tokenmill.loader(tmp_path / "bin", tokenmill.BatchConfig(max_tokens=256))
    batch = next(iter(loader))
    assert isinstance(batch["net_input"]["src_tokens"], torch.Tensor)
    assert loader.state_dict()["step"] == 1


def test_open_says_what_a_folder_without_stores_is(tmp_path):
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "train.en").write_text("hello\n")
    with pytest.raises(tokenmill.ConfigError, match=r"raw.* holds no token stores, only other files \(train.en\)"):
        tokenmill.open(tmp_path / "raw")
    (tmp_path / "empty").mkdir()
    with pytest.raises(tokenmill.ConfigError, match="is an empty folder"):
        tokenmill.open(tmp_path / "empty")
    with pytest.raises(tokenmill.ConfigError, match="no such directory or token store"):
        tokenmill.open(tmp_path / "nothing")
