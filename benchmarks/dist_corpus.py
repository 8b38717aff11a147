"""Millions of real-looking English-Chinese pairs, fast, for bench_distributed.py (seeded, deterministic).

A pair is two clauses joined: a first clause (capitalized English without its final punctuation, a
Chinese clause without its end mark) from one pool and a second clause (English starting lower-case
with its end punctuation, Chinese closed by 。？！) from another, with an aligned joiner (", " / "，",
" and " / "，而且", "; " / "；", ", but " / "，但是"). The clauses come from ``tok_corpus.SentenceMaker``
(real English function words and a Zipf syllable lexicon, capitals, numbers, years, percentages,
quotes; Chinese words of common characters with years, percentages and acronyms), 400k of each kind, so
pairs are unique unless made duplicates on purpose (two random draws collide with odds ~1e-12). The
English side has a median of ~17 words, the Chinese follows its length.

On top, the dirt of crawled data: ~20% exact duplicates of an earlier pair (uniform over everything
before it, so most are far back, in another task), 0.1% pairs copied from valid/test (leaks), ~1%
whitespace runs and tabs, 0.2% control characters, 0.5% empty sides. ``valid`` and ``test`` have
3,000 fresh pairs each. Pairs are drawn in blocks of 500,000 from each block's own seed, so a corpus
whose size is a multiple of 500,000 is the first pairs of any larger one (``prefix_corpus`` cuts one).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from tok_corpus import SentenceMaker

POOL = 400_000
BLOCK = 500_000
HELD_OUT = 3_000
JOIN_EN = np.array([", ", " and ", "; ", ", but "], dtype=object)
JOIN_ZH = np.array(["，", "，而且", "；", "，但是"], dtype=object)


def _clauses(maker: SentenceMaker, rng: np.random.Generator, n: int, first: bool) -> tuple[np.ndarray, np.ndarray]:
    en_len = np.clip(rng.lognormal(np.log(8), 0.55, size=n).astype(int), 2, 60)
    zh_len = np.clip((en_len * rng.normal(0.8, 0.12, size=n)).astype(int), 1, 60)
    en, zh = [], []
    for k, j in zip(en_len.tolist(), zh_len.tolist(), strict=True):
        words, chinese = maker.english(k), maker.chinese(j)
        if first:
            en.append(maker.en_text(words[:-1]))
            zh.append("".join(chinese[:-1]))
        else:
            text = maker.en_text(words)
            en.append(text[:1].lower() + text[1:] if not text[1:2].isupper() else text)
            zh.append("".join(chinese))
    return np.array(en, dtype=object), np.array(zh, dtype=object)


def _dirt(rng: np.random.Generator, src: list[str], tgt: list[str]) -> None:
    n = len(src)
    for i in np.flatnonzero(rng.random(n) < 0.01).tolist():
        src[i] = "  " + src[i].replace(" ", "   ", 2) + " \t"
    for i in np.flatnonzero(rng.random(n) < 0.002).tolist():
        tgt[i] = tgt[i][:3] + "\x07" + tgt[i][3:]
    for i in np.flatnonzero(rng.random(n) < 0.003).tolist():
        tgt[i] = ""
    for i in np.flatnonzero(rng.random(n) < 0.002).tolist():
        src[i] = " "


def _write(path: Path, lines: list[str], mode: str = "w") -> None:
    with open(path, mode, encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))


def write_corpus(folder: Path, pairs: int, seed: int = 0) -> Path:
    """``train/valid/test.{en,zh}`` in ``folder`` (kept when already complete); returns ``folder``."""
    if (folder / "DONE").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    maker = SentenceMaker(seed)
    rng = np.random.default_rng(seed + 10)
    first_en, first_zh = _clauses(maker, rng, POOL, first=True)
    second_en, second_zh = _clauses(maker, rng, POOL, first=False)
    held = {}
    for name in ("valid", "test"):
        ha, hb = rng.integers(0, POOL, size=HELD_OUT), rng.integers(0, POOL, size=HELD_OUT)
        hj = rng.integers(0, len(JOIN_EN), size=HELD_OUT)
        held[name] = ((first_en[ha] + JOIN_EN[hj] + second_en[hb]).tolist(),
                      (first_zh[ha] + JOIN_ZH[hj] + second_zh[hb]).tolist())
        _write(folder / f"{name}.en", held[name][0])
        _write(folder / f"{name}.zh", held[name][1])
    # every pair as (first clause, second clause, joiner), drawn block by block from the block's own seed
    # (so a smaller corpus is a prefix of a larger one); a duplicate copies an earlier pair's triple
    a = np.zeros(pairs, np.int32)
    b = np.zeros(pairs, np.int32)
    j = np.zeros(pairs, np.int8)
    for name in ("en", "zh"):
        (folder / f"train.{name}").unlink(missing_ok=True)
    for start in range(0, pairs, BLOCK):
        stop = min(pairs, start + BLOCK)
        n = stop - start
        block_rng = np.random.default_rng([seed, start])
        a[start:stop] = block_rng.integers(0, POOL, size=n)
        b[start:stop] = block_rng.integers(0, POOL, size=n)
        j[start:stop] = block_rng.integers(0, len(JOIN_EN), size=n)
        duplicate = np.flatnonzero(block_rng.random(n) < 0.2) + start
        duplicate = duplicate[duplicate > 0]
        earlier = (block_rng.random(len(duplicate)) * duplicate).astype(np.int64)
        for i, e in zip(duplicate.tolist(), earlier.tolist(), strict=True):  # in order: chains resolve
            a[i], b[i], j[i] = a[e], b[e], j[e]
        sa, sb, sj = a[start:stop], b[start:stop], j[start:stop]
        src = (first_en[sa] + JOIN_EN[sj] + second_en[sb]).tolist()
        tgt = (first_zh[sa] + JOIN_ZH[sj] + second_zh[sb]).tolist()
        leaks = np.flatnonzero(block_rng.random(n) < 0.001)
        for i in leaks.tolist():
            k = int(block_rng.integers(0, HELD_OUT))
            pair = held["valid" if block_rng.random() < 0.5 else "test"]
            src[i], tgt[i] = pair[0][k], pair[1][k]
        _dirt(block_rng, src, tgt)
        _write(folder / "train.en", src, "a")
        _write(folder / "train.zh", tgt, "a")
    (folder / "DONE").write_text(f"{pairs}\n")
    return folder


def prefix_corpus(source: Path, folder: Path, pairs: int) -> Path:
    """The first ``pairs`` training pairs of ``source`` (and its valid/test) in ``folder``."""
    if (folder / "DONE").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for lang in ("en", "zh"):
        with open(source / f"train.{lang}", "rb") as src, open(folder / f"train.{lang}", "wb") as out:
            for n, line in enumerate(src):
                if n == pairs:
                    break
                out.write(line)
        for name in ("valid", "test"):
            if not (folder / f"{name}.{lang}").exists():
                os.link(source / f"{name}.{lang}", folder / f"{name}.{lang}")
    (folder / "DONE").write_text(f"{pairs}\n")
    return folder


if __name__ == "__main__":
    import sys
    import time

    t = time.perf_counter()
    print(write_corpus(Path(sys.argv[1]), int(sys.argv[2])), f"{time.perf_counter() - t:.1f} s")
