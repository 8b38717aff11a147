"""prepare with the tokenizers users already have, through fairseq-preprocess's flags: tiktoken ranks,
a Hugging Face tokenizer trained for translation pairs, and the token and ratio filters counted in the
tokenizer's pieces. The stored ids are the tokenizer's own, checked against the library's own encoders.
Megatron's preprocess_data flags are tested in ``test_megatron_flags.py``."""

from __future__ import annotations

import itertools
import string
from pathlib import Path

import numpy as np
import tiktoken
import tokenizers

from tests.prepare.conftest import SAMPLE
from tokenmill.prepare import build_config, prepare
from tokenmill.store import IndexedDataset
from tokenmill.store.manifest import verify_directory
from tokenmill.vocab.tiktoken_ranks import write_ranks


def test_tiktoken_ranks_give_tiktokens_own_ids_in_int32_stores(tmp_path):
    tokens = [bytes([b]) for b in range(256)] + [bytes([a, b]) for a in range(256) for b in range(256)]
    words = ("".join(w).encode() for w in itertools.product(string.ascii_lowercase, repeat=3))
    tokens += list(itertools.islice(words, 70_000 - len(tokens)))
    ranks = {token: rank for rank, token in enumerate(tokens)}
    model = tmp_path / "big.tiktoken"
    write_ranks(ranks, model)
    docs = ["the quick brown fox", "abc abd xyz 12 é", "Grüße aus Köln — 東京", "zzz aaa"] * 5
    (tmp_path / "train.en").write_text("".join(d + "\n" for d in docs), encoding="utf-8")
    settings = {"source_lang": "en", "trainpref": str(tmp_path / "train"), "destdir": str(tmp_path / "lm"),
                "tokenizer": "tiktoken", "tokenizer_model": str(model), "layout": "megatron", "dedup": False,
                "append_eod": True}
    summary = prepare(build_config(settings), progress=False)
    store = IndexedDataset(summary.destdir / "train")
    assert store.dtype == np.int32, "70,001 ids do not fit uint16"
    pattern = (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"
               r"|\s*[\r\n]|\s+(?!\S)|\s+")
    reference = tiktoken.Encoding("ref", pat_str=pattern, mergeable_ranks=ranks,
                                  special_tokens={"<|endoftext|>": 70_000})
    expected = [[*ids, 70_000] for ids in reference.encode_ordinary_batch(docs)]
    assert [store[i].tolist() for i in range(len(store))] == expected
    assert int(store.tokens.max()) >= 65_536, "ids above uint16 survive"
    assert verify_directory(summary.destdir) == []


def test_hf_tokenizer_trained_by_prepare_for_translation_pairs(tmp_path):
    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": str(SAMPLE / "train"),
                "validpref": str(SAMPLE / "valid"), "destdir": str(tmp_path / "bin"), "tokenizer": "hf",
                "hf_model_type": "bpe", "vocab_size": 500, "min_frequency": 1}
    summary = prepare(build_config(settings), progress=False)
    out = summary.destdir
    model = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    cleaned = (out / ".work" / "clean" / "valid.zh").read_text(encoding="utf-8").split("\n")[:-1]
    store = IndexedDataset(out / "valid.en-zh.zh")
    eos = model.token_to_id("</s>")
    assert store[2].tolist() == [*model.encode(cleaned[2], add_special_tokens=False).ids, eos]
    assert not list(out.glob("dict*.txt")), "the tokenizer's own ids: no fairseq dictionary"
    assert verify_directory(out) == []


def long_pairs(folder: Path) -> tuple[list[str], list[str]]:
    """Pairs of 2-4 consecutive sample sentences, one starting at every line: English joined by spaces,
    Chinese as written (no spaces). Written as ``folder/train.{en,zh}``."""
    en = (SAMPLE / "train.en").read_text(encoding="utf-8").splitlines()
    zh = (SAMPLE / "train.zh").read_text(encoding="utf-8").splitlines()
    spans = [(i, i + 2 + i % 3) for i in range(len(en) - 4)]
    sides = [" ".join(en[a:b]) for a, b in spans], ["".join(zh[a:b]) for a, b in spans]
    for lang, lines in zip(("en", "zh"), sides, strict=True):
        (folder / f"train.{lang}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return sides


def whitespace_word_drops(src: list[str], tgt: list[str], max_tokens: int, max_ratio: float) -> float:
    """The share of pairs the old filters dropped: whitespace words of the raw text above ``max_tokens`` on
    either side, or the longer side above ``max_ratio`` times the shorter."""
    a = np.array([len(line.split()) for line in src])
    b = np.array([len(line.split()) for line in tgt])
    hi, lo = np.maximum(a, b), np.maximum(np.minimum(a, b), 1)
    return float(np.mean((hi > max_tokens) | (hi > max_ratio * lo)))


def test_token_and_ratio_filters_count_the_tokenizers_pieces(tmp_path):
    """Whitespace words of raw text say nothing about Chinese (no spaces): the README's filters dropped 18%
    of real English-Chinese pairs that way. Counted in pieces after encoding, as fairseq's max positions do,
    the README's command keeps >= 99% of pairs whose English side has several times 9 words."""
    src, tgt = long_pairs(tmp_path)
    assert whitespace_word_drops(src, tgt, 250, 9) > 0.3, "counting words would drop many of these pairs"
    readme = {"source_lang": "en", "target_lang": "zh", "trainpref": str(tmp_path / "train"),
              "validpref": str(SAMPLE / "valid"), "destdir": str(tmp_path / "bin"), "vocab_size": 400,
              "character_coverage": 0.9995, "joined_dictionary": True, "workers": 2,
              "normalize": {"nfkc": True, "fullwidth": True}, "filters": {"max_tokens": 250, "max_ratio": 9}}
    summary = prepare(build_config(readme), progress=False)
    steps = summary.splits["train"]["clean"]
    before = steps["kept"]["pairs"]
    assert before >= 0.95 * len(src), "the long pairs reach the piece filters"
    assert steps["pieces"]["pairs"] == before and "dropped_tokens" in steps["pieces"]
    assert steps["pieces"]["kept"] >= 0.99 * before, steps
    assert summary.splits["train"]["langs"]["zh"]["sentences"] == steps["pieces"]["kept"]
    assert verify_directory(summary.destdir) == []

    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": str(SAMPLE / "train"),
                "validpref": str(SAMPLE / "valid"), "destdir": str(tmp_path / "tight"), "vocab_size": 300,
                "character_coverage": 1.0, "joined_dictionary": True, "filters": {"max_tokens": 22}}
    summary = prepare(build_config(settings), progress=False)
    pieces = summary.splits["train"]["clean"]["pieces"]
    store = IndexedDataset(summary.destdir / "train.en-zh.en")
    assert pieces["dropped_tokens"] > 0 and len(store) == pieces["kept"]
    assert 0 < len(store) and int(store.sizes.max()) <= 22 + 1, "at most 22 pieces (+ </s>) survive"
    assert "train pieces:" in summary.table() and verify_directory(summary.destdir) == []
