"""Documents for the near-dedup benchmarks (deterministic, seeded, cached under ``benchmarks/.data``).

Each document is fresh text (words drawn from the Zipf-ranked English lexicon of ``t2t_corpus``, sentences
of 8-30 words, log-normal length, median ~1.5 kB), so unrelated documents share almost no 5-gram; 10% of the
documents are *near-duplicates* of an earlier one: a few random character edits, a date changed, whitespace
changed, or a boilerplate line added. Written as JSONL (``{"text": ...}``) for tokenmill and datatrove alike.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import numpy as np
from t2t_corpus import CorpusGenerator

DATA = Path(__file__).resolve().parent / ".data"
BOILERPLATE = ["Share this article on social media.", "All rights reserved.", "Click here to subscribe.",
               "Posted in News | Leave a comment", "Cookies help us deliver our services."]


def _edit(rng: np.random.Generator, text: str) -> str:
    """A near-duplicate of ``text`` (one of the four kinds of change)."""
    kind = int(rng.integers(4))
    if kind == 0:  # random character edits
        chars = list(text)
        for _ in range(int(rng.integers(1, 4))):
            chars[int(rng.integers(len(chars)))] = chr(int(rng.integers(97, 123)))
        return "".join(chars)
    if kind == 1:  # a date
        return f"{text} Updated on {int(rng.integers(1, 29))} March {int(rng.integers(1990, 2030))}."
    if kind == 2:  # whitespace
        return text.replace(". ", ".  ", 3).replace(" ", "\t", 2)
    return f"{BOILERPLATE[int(rng.integers(len(BOILERPLATE)))]}\n{text}"


def _fresh(gen: CorpusGenerator, rng: np.random.Generator, count: int) -> list[str]:
    """``count`` fresh documents: Zipf-drawn words in one batch, sentences of 8-30 words closed by a period."""
    words = np.array(gen.en_words, dtype=object)
    cdf = np.cumsum(gen.en_p)
    lengths = np.clip(rng.lognormal(5.5, 0.8, count), 20, 4000).astype(np.int64)
    drawn = words[np.minimum(np.searchsorted(cdf, rng.random(int(lengths.sum())) * cdf[-1]), len(cdf) - 1)]
    ends = np.cumsum(rng.integers(8, 30, size=len(drawn) // 8 + 1))
    drawn[ends[ends < len(drawn)]] += "."
    cuts = np.concatenate([[0], np.cumsum(lengths)])
    return [" ".join(drawn[a:b]) + "." for a, b in pairwise(cuts.tolist())]


WINDOW = 100_000
"""A near-duplicate copies one of the last ``WINDOW`` documents (~230 MB): the generator holds no
corpus-sized list, so corpora of several GB are written in bounded memory."""


def iter_documents(megabytes: float, seed: int = 0) -> Iterator[str]:
    """About ``megabytes`` MB of documents, 10% of them near-duplicates of an earlier one (among the last
    :data:`WINDOW`), one at a time."""
    gen = CorpusGenerator(seed)
    rng = np.random.default_rng(seed)
    recent: deque[str] = deque(maxlen=WINDOW)
    size = 0
    while size < megabytes * 1e6:
        for doc in _fresh(gen, rng, 2000):
            if recent and rng.random() < 0.1:
                doc = _edit(rng, recent[int(rng.integers(len(recent)))])
            recent.append(doc)
            yield doc
            size += len(doc.encode()) + 1
            if size >= megabytes * 1e6:
                return


def documents(megabytes: float, seed: int = 0) -> list[str]:
    """The documents of :func:`iter_documents` as a list (small corpora)."""
    return list(iter_documents(megabytes, seed))


def jsonl_shards(megabytes: float, shards: int = 4, seed: int = 0) -> list[Path]:
    """The documents of :func:`iter_documents` as ``shards`` JSONL files (``{"text": ...}``) of about
    ``megabytes / shards`` MB each, written as they are made, once, then cached."""
    folder = DATA / f"near_dup_{megabytes:g}MB_{seed}"
    paths = [folder / f"part{i:02d}.jsonl" for i in range(shards)]
    if all(p.exists() for p in paths):
        return paths
    folder.mkdir(parents=True, exist_ok=True)
    budget, shard, written = megabytes * 1e6 / shards, 0, 0
    handles = [open(p.with_suffix(".tmp"), "w", encoding="utf-8") for p in paths]
    for doc in iter_documents(megabytes, seed):
        line = json.dumps({"text": doc}, ensure_ascii=False) + "\n"
        handles[shard].write(line)
        written += len(line.encode())
        if written >= budget and shard < shards - 1:
            shard, written = shard + 1, 0
    for handle, path in zip(handles, paths, strict=True):
        handle.close()
        path.with_suffix(".tmp").rename(path)
    return paths
