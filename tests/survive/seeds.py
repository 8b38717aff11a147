"""Valid seed files of every kind tokenmill reads, made small and fast from tiny corpora.

The readers-survive tests mutate copies of these: a fairseq-layout pair directory (stores, dictionaries,
manifest), a Megatron-layout LM directory (store, SentencePiece model, tokenizer manifest), a small
SentencePiece model, a byte-level BPE ``tokenizer.json`` and the ``.tiktoken`` ranks made from it, a
T2T ``vocab.subwords``, a YAML config and a batch iterator's resume state.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import tokenmill
from tokenmill.loader.iterator import BatchIterator
from tokenmill.vocab.hf import HFTokenizer
from tokenmill.vocab.sentencepiece import SentencePieceOptions, train_sentencepiece
from tokenmill.vocab.t2t_subword import SubwordTextEncoder
from tokenmill.vocab.tiktoken_ranks import ranks_from_byte_level_bpe, write_ranks

SAMPLE_TEXT = "the cat sat on the mat, 42 times; Über naïve café!"
"""A line every tokenizer seed encodes (Latin letters, digits, punctuation, accents)."""


@dataclass(frozen=True)
class Seeds:
    """Where each valid seed lies (read-only: tests mutate copies)."""

    raw: Path
    pair: Path
    """``prepare --tokenizer none``: ``train.en-de.{en,de}.{bin,idx}``, ``dict.{en,de}.txt``, manifest."""
    lm: Path
    """``prepare --layout megatron``: ``train.{bin,idx}``, ``spm.model``, ``tokenmill-tokenizer.json``."""
    spm: Path
    tokenizer_json: Path
    tiktoken: Path
    subwords: Path
    config: Path
    state: Path
    """A :class:`BatchIterator`'s ``state_dict()`` after one batch of ``pair``, as JSON."""


def _lines(count: int, pattern: str) -> str:
    return "".join(pattern.format(i=i, a=i % 5, b=i % 3, c=i % 7) + "\n" for i in range(count))


def state_iterator(pair: Path) -> BatchIterator:
    """The iterator the resume-state seed belongs to (rebuilt the same way to load mutated states)."""
    dataset = tokenmill.open(pair)
    return BatchIterator(dataset, tokenmill.BatchConfig(max_tokens=64, seed=3), cache=False)


def build_seeds(root: Path) -> Seeds:
    """Write every seed under ``root`` (about two seconds)."""
    raw = root / "raw"
    raw.mkdir(parents=True)
    (raw / "train.en").write_text(_lines(60, "s{i} w{a} w{b} x the cat"), encoding="utf-8")
    (raw / "train.de").write_text(_lines(60, "t{i} v{c} y die katze"), encoding="utf-8")
    (raw / "train.txt").write_text(_lines(60, "doc {i} word{c} café more text here"), encoding="utf-8")
    pair, lm = root / "pair", root / "lm"
    tokenmill.prepare(source_lang="en", target_lang="de", trainpref=str(raw / "train"), destdir=str(pair),
                      tokenizer="none", workers=1, progress=False)
    tokenmill.prepare(source_lang="txt", trainpref=str(raw / "train"), destdir=str(lm), tokenizer="sentencepiece",
                      vocab_size=40, layout="megatron", workers=1, progress=False)
    for leftover in (".state", ".work", ".lock"):
        target = pair / leftover
        shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
    texts = (raw / "train.en").read_text().splitlines() + [SAMPLE_TEXT] * 3
    spm = root / "small" / "spm.model"
    spm.parent.mkdir()
    train_sentencepiece(texts, spm, SentencePieceOptions(vocab_size=40, character_coverage=1.0,
                                                         normalization_rule_name="identity"))
    tokenizer_json = root / "small" / "tokenizer.json"
    HFTokenizer.train(texts, {"kind": "byte-level-bpe", "vocab_size": 300, "min_frequency": 2}, tokenizer_json)
    tiktoken = write_ranks(ranks_from_byte_level_bpe(tokenizer_json), root / "small" / "small.tiktoken")
    subwords = root / "small" / "vocab.subwords"
    SubwordTextEncoder(["<pad>_", "<EOS>_", *sorted(set(SAMPLE_TEXT + "_\\u0123456789;")), "the_", "cat_", "at"]
                       ).save(subwords)
    config = root / "config.yaml"
    examples = Path(__file__).resolve().parents[2] / "examples"
    text = (examples / "config.yaml").read_text(encoding="utf-8")
    config.write_text(text.replace("examples/sample/", f"{examples / 'sample'}/"), encoding="utf-8")
    iterator = state_iterator(pair)
    next(iter(iterator))
    state = root / "state.json"
    state.write_text(json.dumps(iterator.state_dict()), encoding="utf-8")
    return Seeds(raw, pair, lm, spm, tokenizer_json, tiktoken, subwords, config, state)
