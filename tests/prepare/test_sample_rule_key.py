"""A folder prepared by a version that drew the tokenizer's sample by a reservoir must not keep that model:
the tokenizer stage's key names the sample's rule, so the stage is redone and the folder's output is the
fresh run's (a pure function of inputs and settings, whatever version began the folder)."""

from __future__ import annotations

import json

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import settings_for
from tokenmill.prepare import build_config
from tokenmill.prepare.run.summary import jsonable as _jsonable
from tokenmill.prepare.stages.tokenizer import SAMPLE_RULE
from tokenmill.prepare.state import fingerprint
from tokenmill.prepare.tokenizing import train_settings


def test_a_reservoir_era_tokenizer_record_is_not_taken_as_done(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", pairs=300)
    settings = settings_for(corpus, tmp_path / "bin", vocab_size=200)
    tokenmill.prepare(settings, progress=False)
    state = tmp_path / "bin" / ".state"
    record = json.loads((state / "tokenizer.json").read_text(encoding="utf-8"))
    clean_key = json.loads((state / "clean.train.json").read_text(encoding="utf-8"))["fingerprint"]
    cfg = build_config(settings)
    train = _jsonable(train_settings(cfg))
    sample = (cfg.tokenizer.input_sentence_size, cfg.run.seed)
    joint = cfg.tokenizer.joint_spm
    earlier = fingerprint("tokenizer", "sentencepiece", clean_key, train, joint, sample)  # before 0c67edc
    assert record["fingerprint"] == fingerprint("tokenizer", "sentencepiece", clean_key, train, joint,
                                                (*sample, SAMPLE_RULE))  # the same ingredients, and the rule
    assert record["fingerprint"] != earlier
