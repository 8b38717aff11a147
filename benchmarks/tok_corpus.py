"""Real-looking English-Chinese text for the tokenizer benchmarks (deterministic, seeded, cached).

Words come from ``t2t_corpus.CorpusGenerator``'s lexicons: ~170 real English function words then a
synthetic syllable lexicon (Zipf ranked), and Chinese words of 1-4 common characters (Zipf ranked).
Sentences are built here: English with capitals, commas, numbers, years, percentages, possessives,
quotes and hyphenated compounds; Chinese clauses of 2-9 words split by ，/、 and closed by 。？！,
with years, percentages and Latin acronyms, no spaces.

* :func:`parallel_corpus` -- ``train.en`` / ``train.zh`` pairs (target length follows the source),
  with the dirt real crawled pairs have: ~5% exact duplicate pairs, a few empty sides, runs of
  spaces and tabs, stray control characters.  ``seg/train.{en,zh}`` holds the same pairs
  word-segmented (punctuation split off, Chinese words separated by spaces), the input of
  ``--tokenizer none``.
* :func:`jsonl_corpus` -- JSONL documents (``{"text": ...}``), ~85% English and ~15% Chinese, of
  log-normal length (median ~1.7 kB), paragraphs split by newlines, in a few shard files.  Sentences
  are drawn from a seeded pool (so 1 GB is generated in about a minute); word statistics are those
  of the lexicons.  A corpus of any size starts with the same documents.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
from t2t_corpus import CorpusGenerator

DATA = Path(__file__).resolve().parent / ".data"
ACRONYMS = ["GDP", "WTO", "CEO", "APEC", "NBA", "iPhone", "AI", "5G"]
EN_END = np.array([".", ".", ".", ".", ".", "?", "!", ";"])
ZH_END = np.array(["。", "。", "。", "。", "？", "！"])


class SentenceMaker:
    """Sentences as token lists (``words``) that join to text (``text``)."""

    def __init__(self, seed: int = 0) -> None:
        gen = CorpusGenerator(seed)
        self.en_words = np.array(gen.en_words, dtype=object)
        self.en_cdf = np.cumsum(gen.en_p)
        self.zh_words = np.array(gen.zh_words, dtype=object)
        self.zh_cdf = np.cumsum(gen.zh_p)
        self.rng = np.random.default_rng(seed + 1)

    def _draw(self, cdf: np.ndarray, n: int) -> np.ndarray:
        return np.minimum(np.searchsorted(cdf, self.rng.random(n) * cdf[-1]), len(cdf) - 1)

    def english(self, n_words: int) -> list[str]:
        rng = self.rng
        words = self.en_words[self._draw(self.en_cdf, n_words)].tolist()
        u = rng.random(n_words)
        out: list[str] = []
        for i, w in enumerate(words):
            r = u[i]
            if r < 0.012:
                w = str(1900 + int(r * 10_000) % 130)
            elif r < 0.018:
                w = f"{int(r * 1e6) % 99 + 1}.{int(r * 1e7) % 10}%"
            elif r < 0.024 and i + 1 < n_words:
                w = f"{w}-{words[i + 1]}"
            elif r < 0.03:
                w = w + "'s"
            elif r < 0.034:
                out += ['"', w, '"']
                continue
            elif r < 0.036:
                out += ["(", w, ")"]
                continue
            out.append(w)
            if i + 1 < n_words and (r * 1000) % 1 < 0.08:
                out.append(",")
        first = 1 if out[0] in ('"', "(") else 0
        out[first] = out[first][:1].upper() + out[first][1:]
        out.append(str(EN_END[int(u[0] * 1e4) % len(EN_END)]))
        return out

    def chinese(self, n_words: int) -> list[str]:
        rng = self.rng
        words = self.zh_words[self._draw(self.zh_cdf, n_words)].tolist()
        u = rng.random(n_words)
        out: list[str] = []
        clause = 2 + int(u[0] * 1e3) % 8
        for i, w in enumerate(words):
            r = u[i]
            if r < 0.01:
                out += [str(1949 + int(r * 1e5) % 80), "年"]
            elif r < 0.015:
                out.append(f"{int(r * 1e6) % 99 + 1}.{int(r * 1e7) % 10}%")
            elif r < 0.018:
                out.append(ACRONYMS[int(r * 1e6) % len(ACRONYMS)])
            elif r < 0.021:
                out += ["“", w, "”"]
            else:
                out.append(w)
            clause -= 1
            if clause == 0 and i + 1 < n_words:
                out.append("、" if (r * 1e4) % 1 < 0.15 else "，")
                clause = 2 + int(r * 1e5) % 8
        out.append(str(ZH_END[int(u[-1] * 1e4) % len(ZH_END)]))
        return out

    @staticmethod
    def en_text(tokens: list[str]) -> str:
        text = " ".join(tokens)
        for a, b in ((" ,", ","), (" .", "."), (" ?", "?"), (" !", "!"), (" ;", ";"), ("( ", "("), (" )", ")")):
            text = text.replace(a, b)
        return text.replace('" ', '"', 1).replace(' "', '"', 1) if text.count('"') == 2 else text


def _dirty(rng: np.random.Generator, n: int, *sides: tuple[list[str], list[str]]) -> None:
    """Whitespace runs, tabs, control characters and empty sides, in place, at the same pairs of every
    (source, target) version given (what cleaning has to remove)."""
    spaces, control, empty_tgt, empty_src = (np.flatnonzero(rng.random(n) < p).tolist()
                                             for p in (0.01, 0.002, 0.003, 0.002))
    for src, tgt in sides:
        for i in spaces:
            src[i] = "  " + src[i].replace(" ", "   ", 2) + " \t"
        for i in control:
            tgt[i] = tgt[i][:3] + "\x07" + tgt[i][3:]
        for i in empty_tgt:
            tgt[i] = ""
        for i in empty_src:
            src[i] = " "


def parallel_corpus(pairs: int, seed: int = 0) -> Path:
    """``DATA/tokenizers/<pairs>/train.{en,zh}`` and ``seg/train.{en,zh}`` (cached)."""
    out = DATA / "tokenizers" / str(pairs)
    if (out / "seg" / "train.zh").exists():
        return out
    (out / "seg").mkdir(parents=True, exist_ok=True)
    maker = SentenceMaker(seed)
    rng = np.random.default_rng(seed + 2)
    en_len = np.clip(rng.lognormal(np.log(17), 0.55, size=pairs).astype(int), 3, 120)
    zh_len = np.clip((en_len * rng.normal(0.8, 0.12, size=pairs)).astype(int), 2, 120)
    dup_of = np.where(rng.random(pairs) < 0.05, (rng.random(pairs) * np.arange(pairs)).astype(int), -1)
    dup_of[0] = -1  # the first pair has no earlier pair to repeat
    src, tgt, src_seg, tgt_seg = [], [], [], []
    for i in range(pairs):
        j = int(dup_of[i])
        if j >= 0:
            src.append(src[j]), tgt.append(tgt[j]), src_seg.append(src_seg[j]), tgt_seg.append(tgt_seg[j])
            continue
        e, z = maker.english(int(en_len[i])), maker.chinese(int(zh_len[i]))
        src.append(maker.en_text(e)), tgt.append("".join(z))
        src_seg.append(" ".join(e)), tgt_seg.append(" ".join(z))
    _dirty(rng, pairs, (src, tgt), (src_seg, tgt_seg))
    for name, lines in (("train.en", src), ("train.zh", tgt), ("seg/train.en", src_seg), ("seg/train.zh", tgt_seg)):
        tmp = out / f"{name}.tmp"
        tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        os.replace(tmp, out / name)
    return out


def _pool(maker: SentenceMaker, rng: np.random.Generator, n: int, chinese: bool) -> list[str]:
    lengths = np.clip(rng.lognormal(np.log(16 if chinese else 19), 0.5, size=n).astype(int), 3, 90)
    if chinese:
        return ["".join(maker.chinese(int(k))) for k in lengths]
    return [maker.en_text(maker.english(int(k))) for k in lengths]


def jsonl_corpus(megabytes: float, shards: int = 4, seed: int = 0) -> list[Path]:
    """About ``megabytes`` MB of JSONL documents in ``shards`` files under ``DATA/lm/<size>mb/`` (cached)."""
    out = DATA / "lm" / f"{megabytes:g}mb"
    files = [out / f"part-{k:05d}.jsonl" for k in range(shards)]
    if all(f.exists() for f in files):
        return files
    out.mkdir(parents=True, exist_ok=True)
    cache = DATA / "lm" / f"pool-{seed}.json"
    if cache.exists():
        en_pool, zh_pool = json.loads(cache.read_text(encoding="utf-8"))
    else:
        maker = SentenceMaker(seed)
        prng = np.random.default_rng(seed + 3)
        en_pool, zh_pool = _pool(maker, prng, 240_000, False), _pool(maker, prng, 80_000, True)
        cache.write_text(json.dumps([en_pool, zh_pool], ensure_ascii=False), encoding="utf-8")
    en, zh = np.array(en_pool, dtype=object), np.array(zh_pool, dtype=object)
    rng = np.random.default_rng(seed + 4)
    budget = int(megabytes * 1e6)
    per_shard = budget // shards
    handles = [open(f.with_suffix(".tmp"), "w", encoding="utf-8") for f in files]
    written = [0] * shards
    shard = 0
    block = 4096
    while shard < shards:
        n_sent = np.clip(rng.lognormal(np.log(12), 0.9, size=block).astype(int), 1, 400)
        chinese = rng.random(block) < 0.15
        breaks = rng.random(int(n_sent.sum())) < 0.2  # a paragraph ends after ~1 sentence in 5
        blank = rng.random(block) < 0.3  # some documents separate paragraphs by a blank line
        pos = 0
        for d in range(block):
            k = int(n_sent[d])
            pool = zh if chinese[d] else en
            picks = pool[rng.integers(0, len(pool), size=k)].tolist()
            glue, para = ("", "\n\n" if blank[d] else "\n") if chinese[d] else (" ", "\n\n" if blank[d] else "\n")
            parts = []
            for s, br in zip(picks, breaks[pos : pos + k].tolist(), strict=True):
                parts.append(s)
                parts.append(para if br else glue)
            pos += k
            line = json.dumps({"text": "".join(parts[:-1])}, ensure_ascii=False) + "\n"
            handles[shard].write(line)
            written[shard] += len(line.encode("utf-8"))
            if written[shard] >= per_shard:
                shard += 1
                if shard == shards:
                    break
    for handle, f in zip(handles, files, strict=True):
        handle.close()
        os.replace(f.with_suffix(".tmp"), f)
    return files


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["pairs"]:
        print(parallel_corpus(int(sys.argv[2])))
    else:
        print(jsonl_corpus(float(sys.argv[2])))
