"""Models of every kind the fast encoder supports, trained on the multilingual sample lines, and held-out
documents to prove its ids on: generated multilingual lines (another seed than the training lines) joined
into documents, with the edge cases a real corpus holds (special-token text, NFC/NFKC-sensitive characters,
empty and blank documents, one very long document)."""

from __future__ import annotations

import random
from pathlib import Path

from tests.vocab.multilingual import generated_lines, sample_lines
from tokenmill.vocab.sentencepiece import SentencePieceOptions
from tokenmill.vocab.tiktoken_ranks import ranks_from_byte_level_bpe, write_ranks
from tokenmill.vocab.tokenizer import Tokenizer, load_tokenizer, train_tokenizer

SPECIAL_TEXT = ["<|endoftext|>", "</s>", "<s>", "<unk>", "<pad>", "<|endoftext|><|endoftext|>", "a<|endoftext|>b",
                "<|endof", "</s></s>"]
NORMALIZATION = ["ﬁnance ﬂow", "Ⅻ ① ² ½ ㎏", "ＡＢＣ　全角", "café café", "Å Å Å", "한국어 한국어", "ǅ ǆ",
                 "\u200b\u200d\ufeff", "e\u0301\u0301", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🙂🚀"]
EOT_1300 = {"<|endoftext|>": 1300}
"""Characters NFC/NFKC change (ligatures, compatibility forms, full-width, combining sequences, Hangul jamo)."""


def held_out_documents(count: int, seed: int = 71, long_chars: int = 0) -> list[str]:
    """``count`` documents of 1-3 generated lines, edge cases spread through them, and (``long_chars`` > 0) one
    document of about that many characters in the middle."""
    lines = generated_lines(count + 3, seed=seed)
    rng = random.Random(seed)
    docs = []
    for i in range(count):
        k = rng.choice((1, 1, 1, 2, 3))
        doc = rng.choice(("\n", " ", "  ")).join(lines[i : i + k])
        if i % 97 == 0:
            doc += " " + rng.choice(SPECIAL_TEXT) + " " + lines[i + 1]
        if i % 89 == 0:
            doc = rng.choice(NORMALIZATION) + " " + doc
        if i % 211 == 0:
            doc = rng.choice(("", " ", "\n", "\t"))
        docs.append(doc)
    if long_chars:
        piece = "\n".join(generated_lines(2000, seed=seed + 1)) + " <|endoftext|> ﬁ\n"
        docs[count // 2] = (piece * (long_chars // len(piece) + 1))[:long_chars]
    return docs


def train_models(folder: Path) -> dict[str, Tokenizer]:
    """One model of each supported kind: byte-level BPE ``tokenizer.json``, its tiktoken ranks under three
    split patterns, and a SentencePiece BPE with byte fallback laid out as Llama 2's (identity normalization,
    extra whitespace kept)."""
    lines = sample_lines()
    hf = train_tokenizer("hf", lines, {"kind": "byte-level-bpe", "vocab_size": 1200}, folder / "tokenizer.json")
    ranks = write_ranks(ranks_from_byte_level_bpe(hf.path), folder / "trained.tiktoken")
    spm = train_tokenizer("sentencepiece", lines, SentencePieceOptions(
        vocab_size=700, model_type="bpe", byte_fallback=True, hard_vocab_limit=False, num_threads=1,
        normalization_rule_name="identity", extra_options={"remove_extra_whitespaces": False}), folder / "bpe.model")
    return {
        "hf-byte-level-bpe": hf,
        "tiktoken-cl100k": load_tokenizer("tiktoken", ranks),
        "tiktoken-r50k": load_tokenizer("tiktoken", ranks, {"preset": "gpt2", "special_tokens": EOT_1300}),
        "tiktoken-o200k": load_tokenizer("tiktoken", ranks, {"preset": "o200k_base", "special_tokens": EOT_1300}),
        "sentencepiece-bpe-byte-fallback": spm,
    }
