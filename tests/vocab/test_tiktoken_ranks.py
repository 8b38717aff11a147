"""tiktoken ranks from a byte-level BPE tokenizer.json: tiktoken then splits text into the BPE's own tokens."""

from __future__ import annotations

import json

import pytest
import tiktoken
import tokenizers

from tests.vocab.multilingual import generated_lines, sample_lines
from tokenmill.errors import ConfigError
from tokenmill.vocab.tiktoken_backend import PRESETS, byte_alphabet, read_ranks
from tokenmill.vocab.tiktoken_ranks import ranks_from_byte_level_bpe, write_ranks
from tokenmill.vocab.tokenizer import load_tokenizer, train_tokenizer

LINES = sample_lines() + generated_lines(300)


@pytest.fixture(scope="module")
def bpe(tmp_path_factory):
    path = tmp_path_factory.mktemp("bpe") / "tokenizer.json"
    train_tokenizer("hf", LINES, {"kind": "byte-level-bpe", "vocab_size": 1500}, path)
    return path


def test_tiktoken_with_the_ranks_splits_text_into_the_bpes_own_tokens(bpe, tmp_path):
    ranks = ranks_from_byte_level_bpe(bpe)
    hf = tokenizers.Tokenizer.from_file(str(bpe))
    assert len(ranks) == hf.get_vocab_size() - 1 and sorted(ranks.values()) == list(range(len(ranks)))
    encoding = tiktoken.Encoding("converted", pat_str=PRESETS["gpt2"][0], mergeable_ranks=ranks,
                                 special_tokens={"<|endoftext|>": len(ranks)})
    ours = [[encoding.decode_single_token_bytes(i) for i in ids] for ids in encoding.encode_ordinary_batch(LINES)]
    byte_of = {char: value for value, char in enumerate(byte_alphabet())}  # GPT-2's alphabet (checked elsewhere)
    expected = [[bytes(byte_of[char] for char in token) for token in e.tokens]
                for e in hf.encode_batch(LINES, add_special_tokens=False)]
    assert ours == expected
    # and through the file: read back, it is the same map, and the tiktoken backend encodes with it
    written = write_ranks(ranks, tmp_path / "bpe.tiktoken")
    assert read_ranks(written) == ranks
    tok = load_tokenizer("tiktoken", written, {"pattern": PRESETS["gpt2"][0]})
    flat, lengths = tok.encode_batch(LINES[:50])
    expected_ids = encoding.encode_ordinary_batch(LINES[:50])
    assert flat.tolist() == [i for ids in expected_ids for i in ids]
    assert lengths.tolist() == list(map(len, expected_ids))


def test_what_has_no_tiktoken_ranks_is_one_clear_error(bpe, tmp_path):
    spec = json.loads(bpe.read_text(encoding="utf-8"))
    vocab = spec["model"]["vocab"]
    first, second = (spec["model"]["merges"][k] for k in (0, 1))
    made = ["".join(m.split(" ", 1)) if isinstance(m, str) else "".join(m) for m in (first, second)]
    vocab[made[0]], vocab[made[1]] = vocab[made[1]], vocab[made[0]]  # numbered against the merge order
    swapped = tmp_path / "swapped.json"
    swapped.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"swapped\.json: merge 2 .* another order than this BPE"):
        ranks_from_byte_level_bpe(swapped)

    unigram = tmp_path / "unigram.json"
    train_tokenizer("hf", LINES, {"kind": "unigram", "vocab_size": 2000}, unigram)
    with pytest.raises(ConfigError, match=r"unigram\.json: not a BPE tokenizer\.json"):
        ranks_from_byte_level_bpe(unigram)
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken\.json: not a tokenizer\.json"):
        ranks_from_byte_level_bpe(tmp_path / "broken.json")
    with pytest.raises(ConfigError, match="cannot read"):
        ranks_from_byte_level_bpe(tmp_path / "missing.json")


@pytest.mark.parametrize("change", ["unspelt merge", "one token", "three tokens", "model text", "vocab ids"])
def test_a_malformed_tokenizer_json_is_one_clear_error(bpe, tmp_path, change):
    """Broken merges or model entries are one ConfigError naming the file, never a KeyError or TypeError."""
    spec = json.loads(bpe.read_text(encoding="utf-8"))
    merges = spec["model"]["merges"]
    if change == "unspelt merge":  # '€' is no character of GPT-2's byte alphabet
        merges[0] = "x \u20ac" if isinstance(merges[0], str) else ["x", "\u20ac"]
    elif change == "one token":
        merges[0] = "xyz" if isinstance(merges[0], str) else ["xyz"]
    elif change == "three tokens":
        merges[0] = ["a", "b", "c"]
    elif change == "model text":
        spec["model"] = "BPE"
    else:
        spec["model"]["vocab"] = {token: str(i) for token, i in spec["model"]["vocab"].items()}
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken\.json: (merge 1 |not a BPE)"):
        ranks_from_byte_level_bpe(broken)
