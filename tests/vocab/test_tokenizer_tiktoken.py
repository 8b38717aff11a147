"""The tiktoken backend builds its encoding from a local ranks file and equals tiktoken's own output."""

from __future__ import annotations

import itertools
import string

import numpy as np
import pytest
import tiktoken
from tokenizers import pre_tokenizers

from tests.vocab.multilingual import sample_lines
from tokenmill.errors import ConfigError
from tokenmill.store.format import token_dtype
from tokenmill.vocab.tiktoken_backend import CL100K_PATTERN, PRESETS, byte_alphabet
from tokenmill.vocab.tiktoken_ranks import ranks_from_byte_level_bpe, write_ranks
from tokenmill.vocab.tokenizer import Tokenizer, load_saved, load_tokenizer, train_tokenizer

LINES = sample_lines()


def per_line(flat: np.ndarray, lengths: np.ndarray) -> list[list[int]]:
    assert flat.dtype == np.int64 and lengths.dtype == np.int64 and int(lengths.sum()) == len(flat)
    return [part.tolist() for part in np.split(flat, np.cumsum(lengths)[:-1])] if len(lengths) else []



def reference(ranks: dict[bytes, int], pattern: str, specials: dict[str, int]) -> tiktoken.Encoding:
    return tiktoken.Encoding("reference", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)


@pytest.fixture(scope="module")
def bpe_ranks(tmp_path_factory) -> dict[bytes, int]:
    """The ranks of a byte-level BPE trained here with `tokenizers` (GPT-2's byte alphabet -> bytes)."""
    path = tmp_path_factory.mktemp("t") / "tokenizer.json"
    train_tokenizer("hf", LINES, {"kind": "byte-level-bpe", "vocab_size": 1500}, path)
    return ranks_from_byte_level_bpe(path)


def test_byte_alphabet_is_gpt2s():
    alphabet = byte_alphabet()
    assert len(set(alphabet)) == 256 and set(alphabet) == set(pre_tokenizers.ByteLevel.alphabet())
    split = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False).pre_tokenize_str
    for text in ["a Z~!", " \t\n\r", "é", "猫", "😀", "\x00\x7f"]:
        assert split(text)[0][0] == "".join(alphabet[b] for b in text.encode("utf-8"))


def test_ranks_from_a_trained_bpe_equal_tiktoken(tmp_path, bpe_ranks):
    path = tmp_path / "trained.tiktoken"
    write_ranks(bpe_ranks, path)
    tok = load_tokenizer("tiktoken", path)
    assert isinstance(tok, Tokenizer)
    n = len(bpe_ranks)
    expected = reference(bpe_ranks, CL100K_PATTERN, {"<|endoftext|>": n}).encode_ordinary_batch(LINES, num_threads=4)
    for threads in (1, 4):
        assert per_line(*tok.encode_batch(LINES, num_threads=threads)) == expected
    many = LINES * 8  # enough lines for several threads' shares
    assert per_line(*tok.encode_batch(many, num_threads=4)) == expected * 8
    assert tok.vocab_size == n + 1 and tok.special_ids == {"eos": n, "eod": n}
    for line, ids in zip(LINES, expected, strict=True):
        assert tok.decode(ids) == line
    # the text of the special token is ordinary text here (encode_ordinary)
    assert n not in per_line(*tok.encode_batch(["a<|endoftext|>b"]))[0]
    # token strings: GPT-2's alphabet, whitespace-free, inverted by token_to_id
    for token_id in (0, 255, 300, n - 1, n):
        token = tok.id_to_token(token_id)
        assert token.split() == [token] and tok.token_to_id(token) == token_id
    assert tok.token_to_id("\u2603 not a token") is None


def test_settings_pattern_specials_and_eod(tmp_path, bpe_ranks):
    path = tmp_path / "model.tiktoken"
    write_ranks(bpe_ranks, path)
    n = len(bpe_ranks)
    specials = {"<|endoftext|>": n, "<|startoftext|>": n + 1, "<|pad|>": n + 5}
    settings = {"pattern": PRESETS["gpt2"][0], "special_tokens": specials, "eod_token": "<|endoftext|>"}
    tok = load_tokenizer("tiktoken", path, settings)
    expected = reference(bpe_ranks, PRESETS["gpt2"][0], specials).encode_ordinary_batch(LINES, num_threads=2)
    assert per_line(*tok.encode_batch(LINES, num_threads=2)) == expected
    assert tok.vocab_size == n + 6
    assert tok.special_ids == {"bos": n + 1, "eos": n, "pad": n + 5, "eod": n}
    default = load_tokenizer("tiktoken", path)
    assert tok.fingerprint() != default.fingerprint()
    # saved under its stable name, it comes back with the same (resolved) settings
    written = tok.save(tmp_path / "out")
    assert [p.name for p in written] == ["tokenizer.tiktoken", "tokenmill-tokenizer.json"]
    again = load_saved(tmp_path / "out")
    assert again.fingerprint() == tok.fingerprint() and again.special_ids == tok.special_ids
    with pytest.raises(ConfigError, match="eod_token '<\\|eot\\|>' is not one of"):
        load_tokenizer("tiktoken", path, {"eod_token": "<|eot|>"})
    with pytest.raises(ConfigError, match="gives to an ordinary token"):
        load_tokenizer("tiktoken", path, {"special_tokens": {"<|endoftext|>": 5}})
    with pytest.raises(ConfigError, match="unknown tiktoken preset"):
        load_tokenizer("tiktoken", path, {"preset": "cl200k"})
    with pytest.raises(ConfigError, match="cannot be trained"):
        train_tokenizer("tiktoken", LINES, None, tmp_path / "x.tiktoken")


def synthetic_ranks(size: int) -> dict[bytes, int]:
    """The first ``size`` of: all single bytes, all byte pairs, then three-letter words."""
    tokens = [bytes([b]) for b in range(256)]
    tokens += [bytes([a, b]) for a in range(256) for b in range(256)]
    words = ("".join(w).encode() for w in itertools.product(string.ascii_lowercase, repeat=3))
    tokens += list(itertools.islice(words, max(size - len(tokens), 0)))
    return {token: rank for rank, token in enumerate(tokens[:size])}


def test_vocabulary_over_65500_ids_come_out_right(tmp_path):
    ranks = synthetic_ranks(70_000)
    path = tmp_path / "big.tiktoken"
    write_ranks(ranks, path)
    tok = load_tokenizer("tiktoken", path)
    assert tok.vocab_size == 70_001 and token_dtype(tok.vocab_size) == np.int32
    lines = ["abc abd the fox", "xyz", "zzz aaa 12 é", "ab"]
    expected = reference(ranks, CL100K_PATTERN, {"<|endoftext|>": 70_000}).encode_ordinary_batch(lines)
    got = per_line(*tok.encode_batch(lines, num_threads=2))
    assert got == expected
    assert got[0][0] == ranks[b"abc"] == 65_820  # above 65535, as tiktoken says
    assert max(max(ids) for ids in got) > 65_535
    assert tok.decode(got[0]) == lines[0]


def test_file_named_after_a_known_encoding_gets_its_pattern_and_specials(tmp_path):
    path = tmp_path / "cl100k_base.tiktoken"
    write_ranks(synthetic_ranks(1000), path)
    tok = load_tokenizer("tiktoken", path)
    assert tok.special_ids == {"eos": 100_257, "eod": 100_257} and tok.vocab_size == 100_277
    assert tok.settings.preset == "cl100k_base" and tok.settings.pattern == CL100K_PATTERN
    o200k = load_tokenizer("tiktoken", path, {"preset": "o200k_base"})
    assert o200k.special_ids["eod"] == 199_999


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"!!!notbase64 0\n", "line 1"),
        (b"YQ== 0\nYg== zero\n", "line 2"),
        (b"YQ== 0\nYQ== 1\n", "given twice"),
        (b"YQ== 0\nYg== 1\n", "single bytes have no rank"),
        (b"", "no ranks"),
        (b"the 12\ncat 7\n", "look|line"),
    ],
)
def test_corrupt_ranks_files_are_config_errors(tmp_path, content, match):
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=match) as caught:
        load_tokenizer("tiktoken", path)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)
