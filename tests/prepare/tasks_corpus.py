"""A corpus that makes tasks earn their keep: duplicates across task boundaries, held-out leaks, empty
and over-long lines, characters the tokenizer calls unknown."""

from __future__ import annotations

import json
import random
from pathlib import Path

WORDS = ("river stone light market winter garden letter window morning doctor island music paper "
         "bridge summer forest teacher coffee station mountain").split()
ZH = "河石光市冬园信窗早医岛乐纸桥夏林师咖站山"
RARE = "©á”’ñøß"


def pair(rng: random.Random, i: int) -> tuple[str, str]:
    n = rng.randint(3, 12)
    words = [rng.choice(WORDS) for _ in range(n)]
    if i % 37 == 0:
        words.append(rng.choice(RARE) + rng.choice(WORDS))  # a rare character: an unknown piece
    src = " ".join(words) + f" {i % 101}."
    tgt = "".join(ZH[WORDS.index(w)] if w in WORDS else "©" for w in words) + f"{i % 101}。"
    return src, tgt


def write_corpus(folder: Path, pairs: int = 3000, seed: int = 7) -> Path:
    """``train/valid/test.{en,zh}`` under ``folder``; returns ``folder``."""
    rng = random.Random(seed)
    made = [pair(rng, i) for i in range(pairs)]
    valid = [pair(rng, 10_000 + i) for i in range(40)]
    test = [pair(rng, 20_000 + i) for i in range(40)]
    train = []
    for item in made:
        roll = rng.random()
        if roll < 0.25 and train:
            train.append(train[rng.randrange(len(train))])  # an exact duplicate, often far back
        elif roll < 0.27:
            train.append(valid[rng.randrange(len(valid))])  # leaks a held-out pair
        elif roll < 0.28:
            train.append(("", item[1]))  # empty source
        elif roll < 0.29:
            train.append((" ".join([item[0]] * 30), item[1] * 30))  # too many pieces
        else:
            train.append(item)
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("valid", valid), ("test", test)):
        for side, lang in ((0, "en"), (1, "zh")):
            (folder / f"{name}.{lang}").write_text("".join(r[side] + "\n" for r in rows), encoding="utf-8")
    return folder


def write_jsonl(path: Path, lines: int = 2000, seed: int = 3) -> Path:
    """Monolingual JSONL documents with newlines and repeated documents."""
    rng = random.Random(seed)
    docs = []
    for i in range(lines):
        if docs and rng.random() < 0.2:
            docs.append(docs[rng.randrange(len(docs))])
            continue
        paragraphs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 20))) for _ in range(rng.randint(1, 3))]
        docs.append("\n\n".join(paragraphs) + ("  ©" if i % 29 == 0 else ""))
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    return path
