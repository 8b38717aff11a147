"""Reservoir sampling and SentencePiece training/encoding to flat arrays."""

from __future__ import annotations

import numpy as np
import pytest

from tokenmill.errors import ConfigError
from tokenmill.vocab.sentencepiece import Reservoir, SentencePieceEncoder, SentencePieceOptions, train_sentencepiece


def test_reservoir_keeps_everything_when_the_stream_is_small():
    reservoir = Reservoir(10, seed=1)
    reservoir.add(["a", "b"])
    reservoir.add(["c"])
    assert reservoir.sample() == ["a", "b", "c"]


def test_reservoir_is_deterministic_and_independent_of_chunking():
    lines = [f"line {i}" for i in range(5000)]
    one = Reservoir(100, seed=7)
    one.add(lines)
    # same seed, other chunk sizes: the per-line draws come from one stream, so the sample is equal
    other = Reservoir(100, seed=7)
    for start in range(0, 5000, 333):
        other.add(lines[start : start + 333])
    assert one.sample() == other.sample()
    assert len(one.sample()) == 100 and len(set(one.sample())) == 100


def test_reservoir_is_uniform():
    counts = np.zeros(100)
    for seed in range(300):
        reservoir = Reservoir(10, seed=seed)
        for start in range(0, 100, 17):
            reservoir.add([str(i) for i in range(start, min(start + 17, 100))])
        for line in reservoir.sample():
            counts[int(line)] += 1
    # each of 100 lines is kept with probability 0.1 -> expected 30 of 300 draws, sd ~5.2
    assert abs(counts.mean() - 30) < 1e-9
    assert counts.min() > 30 - 5 * 5.2 and counts.max() < 30 + 5 * 5.2
    assert abs(counts[:50].sum() - counts[50:].sum()) < 6 * np.sqrt(2 * 50 * 27)


def test_train_and_encode_flat(tmp_path):
    lines = [f"the cat number {i} sat on the mat {i % 7}" for i in range(300)] + ["猫坐在垫子上"] * 20
    options = SentencePieceOptions(vocab_size=60, character_coverage=1.0, user_defined_symbols=["__en__"])
    model = train_sentencepiece(lines, tmp_path / "spm.model", options)
    assert model.exists() and (tmp_path / "spm.vocab").exists()
    encoder = SentencePieceEncoder(model)
    flat, lengths = encoder.encode_flat(["the cat", "__en__ 猫", ""], num_threads=2)
    assert lengths[2] == 0 and lengths.sum() == len(flat) and flat.dtype == np.int32
    assert "__en__" in [encoder.processor.id_to_piece(int(i)) for i in flat]
    assert encoder.processor.decode(flat[: lengths[0]].tolist()) == "the cat"


def test_bad_options_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="model-type"):
        train_sentencepiece(["a"], tmp_path / "m.model", SentencePieceOptions(model_type="wordpiece"))
    with pytest.raises(ConfigError, match="no training lines"):
        train_sentencepiece([], tmp_path / "m.model", SentencePieceOptions())
    with pytest.raises(ConfigError, match="does not exist"):
        SentencePieceEncoder(tmp_path / "missing.model")
