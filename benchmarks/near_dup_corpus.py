"""Documents for the near-dedup benchmarks (deterministic, seeded, cached under ``benchmarks/.data``).

Each document is fresh text (words drawn from the Zipf-ranked English lexicon of ``t2t_corpus``, sentences
of 8-30 words, log-normal length, median ~1.5 kB), so unrelated documents share almost no 5-gram; 10% of the
documents are *near-duplicates* of an earlier one: a few random character edits, a date changed, whitespace
changed, or a boilerplate line added. Written as JSONL (``{"text": ...}``) for tokenmill and datatrove alike.
"""

from __future__ import annotations

import json
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


def documents(megabytes: float, seed: int = 0) -> list[str]:
    """About ``megabytes`` MB of documents, 10% of them near-duplicates of earlier ones."""
    gen = CorpusGenerator(seed)
    words = np.array(gen.en_words, dtype=object)
    cdf = np.cumsum(gen.en_p)
    rng = np.random.default_rng(seed)
    docs: list[str] = []
    size = 0
    while size < megabytes * 1e6:
        if docs and rng.random() < 0.1:
            doc = _edit(rng, docs[int(rng.integers(len(docs)))])
        else:
            n = int(min(4000, max(20, rng.lognormal(5.5, 0.8))))
            drawn = words[np.minimum(np.searchsorted(cdf, rng.random(n) * cdf[-1]), len(cdf) - 1)]
            cuts = np.cumsum(rng.integers(8, 30, size=n // 8 + 1))
            sentences = [" ".join(drawn[a:b]) for a, b in zip(np.r_[0, cuts], cuts, strict=False) if a < n]
            doc = ". ".join(s[:1].upper() + s[1:] for s in sentences) + "."
        docs.append(doc)
        size += len(doc.encode()) + 1
    return docs


def jsonl_file(megabytes: float, seed: int = 0) -> Path:
    """The documents of :func:`documents` as one JSONL file (made once, then cached)."""
    path = DATA / f"near_dup_{megabytes:g}MB_{seed}.jsonl"
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as out:
            for doc in documents(megabytes, seed):
                out.write(json.dumps({"text": doc}, ensure_ascii=False) + "\n")
        tmp.rename(path)
    return path
