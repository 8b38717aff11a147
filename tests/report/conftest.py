"""Prepared directories of every kind the project writes, made once per test session for the report tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tokenmill.prepare import build_config, prepare
from tokenmill.text import (
    CleanConfig,
    Cleaner,
    FilterConfig,
    LeakageFilter,
    Normalizer,
    ParallelFiles,
    ReadOptions,
)

EN = "the a cat dog sees likes red big house garden near under water tree every day night small".split()
DE = "die eine Katze Hund sieht mag rot groß Haus Garten nahe unter Wasser Baum jeden Tag Nacht klein".split()
FILTERS = {"max_tokens": 12, "max_ratio": 3, "drop_identical": True, "max_nonletter": 0.5}


def _pairs_corpus(raw: Path) -> None:
    """An en-de corpus with something for every filter to drop, spread over the file."""
    rng = np.random.default_rng(3)
    src, tgt = [], []
    for i in range(500):
        kind = i % 25
        words = rng.integers(0, len(EN), size=int(rng.integers(3, 9)))
        s, t = " ".join(EN[w] for w in words), " ".join(DE[w] for w in words)
        if kind == 0:
            s = ""
        elif kind == 1:
            s, t = s + " " + " ".join(EN[w] for w in rng.integers(0, len(EN), size=10)), t + " und mehr"
        elif kind == 2:
            t = DE[int(words[0])]
            s = s + " " + s
        elif kind == 3:
            t = s
        elif kind == 4:
            s = f"{i} 12 34 56 -- {EN[int(words[0])]}"
        elif kind == 5:
            s, t = "the cat sees the house", "die Katze sieht das Haus"
        src.append(f"{s} {i}" if s and kind not in (4, 5) else s)
        tgt.append(f"{t} {i}" if kind != 5 else t)
    (raw / "train.en").write_text("\n".join(src) + "\n", encoding="utf-8")
    (raw / "train.de").write_text("\n".join(tgt) + "\n", encoding="utf-8")
    for split, n in (("valid", 20), ("test", 20)):
        rows = [rng.integers(0, len(EN), size=int(rng.integers(3, 9))) for _ in range(n)]
        held_src = [" ".join(EN[w] for w in r) for r in rows]
        held_tgt = [" ".join(DE[w] for w in r) for r in rows]
        if split == "valid":  # two train pairs leak into valid
            held_src[:2], held_tgt[:2] = [src[7], src[8]], [tgt[7], tgt[8]]
        (raw / f"{split}.en").write_text("\n".join(held_src) + "\n", encoding="utf-8")
        (raw / f"{split}.de").write_text("\n".join(held_tgt) + "\n", encoding="utf-8")


def expected_drop_samples(raw: Path, filters: dict) -> dict:
    """What prepare must keep in ``.work/dropped/train.json``: the drop sample of one Cleaner run over
    the split in small chunks (leakage checked against valid and test, as prepare does)."""
    leakage = LeakageFilter("pair")
    for split in ("valid", "test"):
        for chunk in ParallelFiles.from_prefixes(raw / split, "en", "de").chunks():
            leakage.add_reference(chunk.src, chunk.tgt)
    cleaner = Cleaner(CleanConfig(Normalizer(), FilterConfig(**filters)), leakage)
    for chunk in ParallelFiles.from_prefixes(raw / "train", "en", "de", ReadOptions(chunk_lines=64)).chunks():
        cleaner(chunk)
    return cleaner.dropped.to_dict()


@pytest.fixture(scope="session")
def pairs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One direction, whitespace tokens (so every filter runs in the text clean-up), filters that drop
    pairs, drop samples in the work dir."""
    root = tmp_path_factory.mktemp("pairs")
    raw = root / "raw"
    raw.mkdir()
    _pairs_corpus(raw)
    settings = {
        "source_lang": "en", "target_lang": "de", "trainpref": str(raw / "train"), "validpref": str(raw / "valid"),
        "testpref": str(raw / "test"), "destdir": str(root / "bin"), "tokenizer": "none", "joined_dictionary": True,
        "workers": 1, "filters": FILTERS,
    }
    prepare(build_config(settings), progress=False)
    return root / "bin"


@pytest.fixture(scope="session")
def sharded_dir(tmp_path_factory: pytest.TempPathFactory, pairs_dir: Path) -> Path:
    """The same corpus with SentencePiece in shard folders of 100 pairs; the token-count filter then
    counts tokenizer pieces, after encoding."""
    root = tmp_path_factory.mktemp("shards")
    raw = pairs_dir.parent / "raw"
    settings = {
        "source_lang": "en", "target_lang": "de", "trainpref": str(raw / "train"), "validpref": str(raw / "valid"),
        "destdir": str(root / "bin"), "vocab_size": 60, "character_coverage": 1.0, "joined_dictionary": True,
        "workers": 1, "shard_size": 100, "filters": {"max_tokens": 30},
    }
    prepare(build_config(settings), progress=False)
    return root / "bin"


@pytest.fixture(scope="session")
def multi_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three directions of very different sizes, two shards each."""
    root = tmp_path_factory.mktemp("multi")
    raw = root / "raw"
    raw.mkdir()
    rng = np.random.default_rng(5)
    words = {"eng_Latn": EN, "deu_Latn": DE, "fra_Latn": [w + "e" for w in EN], "spa_Latn": [w + "o" for w in EN]}
    directions = []
    for tgt, n in (("deu_Latn", 400), ("fra_Latn", 80), ("spa_Latn", 20)):
        name = f"eng_Latn-{tgt}"
        directions.append(name)
        for split, count in (("train", n), ("valid", 6)):
            rows = [rng.integers(0, len(EN), size=int(rng.integers(2, 8))) for _ in range(count)]
            for lang in ("eng_Latn", tgt):
                lines = [" ".join(words[lang][w] for w in row) + f" {k}" for k, row in enumerate(rows)]
                if split == "train":  # a duplicate pair and a pair with an empty side for cleaning to drop
                    lines += [lines[0], "" if lang == tgt else "alone"]
                (raw / f"{split}.{name}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = {
        "destdir": str(root / "bin"), "directions": directions, "trainpref": str(raw / "train"),
        "validpref": str(raw / "valid"), "vocab_size": 90, "character_coverage": 1.0, "num_shards": 2,
        "spm_temperature": 5, "workers": 1,
    }
    prepare(build_config(settings), progress=False)
    return root / "bin"


@pytest.fixture(scope="session")
def lm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Monolingual Megatron data: one document per line, an end-of-document token of its own."""
    root = tmp_path_factory.mktemp("lm")
    raw = root / "raw"
    raw.mkdir()
    rng = np.random.default_rng(9)
    lines = [" ".join(EN[w] for w in rng.integers(0, len(EN), size=int(rng.integers(2, 40)))) + f" {i}"
             for i in range(300)]
    (raw / "train.en").write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = {
        "source_lang": "en", "trainpref": str(raw / "train"), "destdir": str(root / "bin"), "layout": "megatron",
        "append_eod": True, "eod_symbol": "<eod>", "tokenizer": "none", "workers": 1,
    }
    prepare(build_config(settings), progress=False)
    return root / "bin"
