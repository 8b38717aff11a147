"""The model type and byte fallback read from a SentencePiece model's bytes (tokenmill.vocab.spm_proto) equal
what the model was trained with, and the fast encoder's precheck turns down what gigatoken would."""

from __future__ import annotations

import io

import pytest
import sentencepiece

from tokenmill.vocab.fast_encoder import Unsupported, sentencepiece_bpe_with_byte_fallback
from tokenmill.vocab.spm_proto import model_settings
from tokenmill.vocab.tokenizer import load_tokenizer

LINES = [f"the quick brown fox {i} jumps over den faulen Hund {i * 7} — é ü ß" for i in range(2000)]


def trained(model_type: str, byte_fallback: bool) -> bytes:
    out = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(LINES), model_writer=out, vocab_size=400,
                                             model_type=model_type, byte_fallback=byte_fallback,
                                             hard_vocab_limit=False, minloglevel=3)
    return out.getvalue()


@pytest.mark.parametrize("model_type", ["unigram", "bpe", "char", "word"])
@pytest.mark.parametrize("byte_fallback", [False, True])
def test_the_settings_are_those_the_model_was_trained_with(model_type, byte_fallback):
    settings = model_settings(trained(model_type, byte_fallback))
    assert settings is not None
    assert (settings.model_type, settings.byte_fallback) == (model_type, byte_fallback)


def test_bytes_that_are_no_model_are_left_to_the_full_reader():
    data = trained("bpe", True)
    assert model_settings(data[:-3]) is None  # cut inside the last field
    assert model_settings(b"\xff\xff\xff") is None
    assert model_settings(b"") is None  # no trainer spec


@pytest.mark.parametrize(("model_type", "byte_fallback", "why"), [
    ("unigram", True, "BPE models only, not unigram ones"),
    ("char", False, "BPE models only, not char ones"),
    ("bpe", False, "with byte fallback only"),
])
def test_the_precheck_turns_down_what_gigatoken_cannot_load(tmp_path, model_type, byte_fallback, why):
    path = tmp_path / "spm.model"
    path.write_bytes(trained(model_type, byte_fallback))
    with pytest.raises(Unsupported, match=why):
        sentencepiece_bpe_with_byte_fallback(load_tokenizer("sentencepiece", path))


def test_the_precheck_lets_bpe_with_byte_fallback_through(tmp_path):
    path = tmp_path / "spm.model"
    path.write_bytes(trained("bpe", True))
    assert sentencepiece_bpe_with_byte_fallback(load_tokenizer("sentencepiece", path)) is None
