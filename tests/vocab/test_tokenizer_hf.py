"""The Hugging Face backend gives exactly what ``tokenizers`` itself gives, on real multilingual text."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tokenizers
from tokenizers import models, pre_tokenizers

from tests.vocab.multilingual import sample_lines
from tokenmill.errors import ConfigError
from tokenmill.store.format import token_dtype
from tokenmill.store.reader import IndexedDataset
from tokenmill.store.writer import IndexedWriter
from tokenmill.vocab.tokenizer import Tokenizer, load_saved, load_tokenizer, train_tokenizer

LINES = sample_lines()


def per_line(flat: np.ndarray, lengths: np.ndarray) -> list[list[int]]:
    assert flat.dtype == np.int64 and lengths.dtype == np.int64 and int(lengths.sum()) == len(flat)
    return [part.tolist() for part in np.split(flat, np.cumsum(lengths)[:-1])] if len(lengths) else []


@pytest.fixture(scope="module")
def byte_bpe(tmp_path_factory):
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    settings = {"kind": "byte-level-bpe", "vocab_size": 1200, "min_frequency": 2}
    return train_tokenizer("hf", LINES, settings, path)


def test_byte_level_bpe_equals_the_library_and_round_trips(byte_bpe):
    assert isinstance(byte_bpe, Tokenizer)
    reference = tokenizers.Tokenizer.from_file(str(byte_bpe.path))
    expected = [e.ids for e in reference.encode_batch(LINES, add_special_tokens=False)]
    for threads in (1, 3):
        assert per_line(*byte_bpe.encode_batch(LINES, num_threads=threads)) == expected
    assert byte_bpe.vocab_size == reference.get_vocab_size(with_added_tokens=True) <= 1200
    assert byte_bpe.vocab_size > 256 + 200  # it learned merges, in every script
    for line, ids in zip(LINES, expected, strict=True):
        assert byte_bpe.decode(ids) == line  # byte-level: lossless, emoji and \u3000 included
    # no unknown token: every byte has an id; the end-of-text token is the EOD
    eot = reference.token_to_id("<|endoftext|>")
    assert byte_bpe.special_ids == {"eos": eot, "eod": eot}
    assert byte_bpe.id_to_token(eot) == "<|endoftext|>" and byte_bpe.token_to_id("<|endoftext|>") == eot
    assert byte_bpe.token_to_id("no such token at all") is None
    with pytest.raises(IndexError):
        byte_bpe.id_to_token(byte_bpe.vocab_size)


def test_empty_batch_and_empty_lines(byte_bpe):
    flat, lengths = byte_bpe.encode_batch([], num_threads=2)
    assert flat.dtype == np.int64 and len(flat) == len(lengths) == 0
    flat, lengths = byte_bpe.encode_batch(["", "a", ""], num_threads=2)
    assert lengths.tolist()[0] == 0 and lengths.tolist()[2] == 0 and lengths[1] >= 1


def test_added_token_text_in_a_line_is_the_token_as_in_the_library(byte_bpe):
    line = "end of one story<|endoftext|>start of the next"
    reference = tokenizers.Tokenizer.from_file(str(byte_bpe.path))
    ids = per_line(*byte_bpe.encode_batch([line], num_threads=2))[0]
    assert ids == reference.encode(line, add_special_tokens=False).ids
    assert byte_bpe.special_ids["eod"] in ids


@pytest.mark.parametrize(
    ("kind", "specials"),
    [
        ("bpe", {"unk": "<unk>", "bos": "<s>", "eos": "</s>", "pad": "<pad>", "eod": "</s>"}),
        ("unigram", {"unk": "<unk>", "bos": "<s>", "eos": "</s>", "pad": "<pad>", "eod": "</s>"}),
        ("wordpiece", {"unk": "[UNK]", "bos": "[CLS]", "eos": "[SEP]", "pad": "[PAD]", "eod": "[SEP]"}),
    ],
)
def test_other_kinds_train_and_equal_the_library(tmp_path, kind, specials):
    tok = train_tokenizer("hf", LINES, {"kind": kind, "vocab_size": 700, "min_frequency": 1}, tmp_path / "t.json")
    reference = tokenizers.Tokenizer.from_file(str(tmp_path / "t.json"))
    expected = [e.ids for e in reference.encode_batch(LINES, add_special_tokens=False)]
    assert per_line(*tok.encode_batch(LINES, num_threads=2)) == expected
    assert per_line(*tok.encode_batch(LINES, num_threads=1)) == expected
    assert tok.special_ids == {key: reference.token_to_id(token) for key, token in specials.items()}
    assert 100 < tok.vocab_size <= 700
    if kind != "wordpiece":  # ▁ word marks: text comes back, spacing normalized to single spaces
        assert tok.decode(expected[0]) == LINES[0]


def test_specials_can_be_named(byte_bpe, tmp_path):
    eot = byte_bpe.special_ids["eod"]
    tok = load_tokenizer("hf", byte_bpe.path, {"specials": {"eod": "<|endoftext|>", "bos": "<|endoftext|>"}})
    assert tok.special_ids == {"bos": eot, "eos": eot, "eod": eot}
    assert tok.fingerprint() != byte_bpe.fingerprint()  # settings are part of the identity
    with pytest.raises(ConfigError, match="no token '<\\|im_end\\|>'"):
        load_tokenizer("hf", byte_bpe.path, {"specials": {"eod": "<|im_end|>"}})
    with pytest.raises(ConfigError, match="unknown key 'sep'"):
        load_tokenizer("hf", byte_bpe.path, {"specials": {"sep": "<|endoftext|>"}})
    with pytest.raises(ConfigError, match="no setting 'eod_token'"):
        load_tokenizer("hf", byte_bpe.path, {"eod_token": "<|endoftext|>"})
    with pytest.raises(ConfigError, match="kind must be one of"):
        train_tokenizer("hf", LINES, {"kind": "sentencepiece"}, tmp_path / "x.json")


def test_save_and_load_saved(byte_bpe, tmp_path):
    written = byte_bpe.save(tmp_path / "out", tag="en")
    assert [p.name for p in written] == ["tokenizer.en.json", "tokenmill-tokenizer.en.json"]
    assert written[0].read_bytes() == byte_bpe.path.read_bytes()
    manifest = json.loads(written[1].read_text())
    assert manifest["backend"] == "hf" and manifest["vocab_size"] == byte_bpe.vocab_size
    again = load_saved(tmp_path / "out", tag="en")
    assert again.fingerprint() == byte_bpe.fingerprint()
    assert per_line(*again.encode_batch(LINES[:50])) == per_line(*byte_bpe.encode_batch(LINES[:50]))
    assert not [p for p in (tmp_path / "out").iterdir() if ".tmp-" in p.name]


def test_vocabulary_over_65500_ids_come_out_right(tmp_path):
    """A 70,000-word WordLevel vocabulary: ids above 65535 survive encoding and the int32 store."""
    words = [f"w{i}" for i in range(70_000)]
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}
    model = tokenizers.Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    model.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    model.save(str(tmp_path / "tokenizer.json"))
    tok = load_tokenizer("hf", tmp_path / "tokenizer.json")
    assert tok.vocab_size == 70_001 and token_dtype(tok.vocab_size) == np.int32
    lines = ["w0 w65534 w65535 w65536", "w69999 unknown w70000", "w1"]
    flat, lengths = tok.encode_batch(lines, num_threads=2)
    assert per_line(flat, lengths) == [[1, 65535, 65536, 65537], [70_000, 0, 0], [2]]
    with IndexedWriter(tmp_path / "big", vocab_size=tok.vocab_size) as writer:
        writer.add_items(flat, lengths)
    stored = IndexedDataset(tmp_path / "big")
    assert stored.tokens.dtype == np.int32 and stored.tokens.tolist() == flat.tolist()
    assert tok.id_to_token(70_000) == "w69999" and tok.special_ids == {"unk": 0}
