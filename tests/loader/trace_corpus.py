"""Real text for the provenance and trace tests: the sample's en-zh pairs with duplicates, held-out leaks,
empty sources and pairs too long in pieces (so dedup, leakage and the filters drop lines), the settings that
prepare them, the run's encoder (text -> the ids a store holds), and a small two-direction data_bin."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import sentencepiece as spm

import tokenmill
from tokenmill.vocab import Dictionary

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"


def real_pairs(split: str) -> list[tuple[str, str]]:
    """The sample's (English, Chinese) pairs of ``split``."""
    en = (SAMPLE / f"{split}.en").read_text(encoding="utf-8").splitlines()
    zh = (SAMPLE / f"{split}.zh").read_text(encoding="utf-8").splitlines()
    return list(zip(en, zh, strict=True))


def write_corpus(folder: Path) -> Path:
    """The sample's real pairs in two training files ``a`` and ``b``, with exact duplicates (near and far),
    pairs leaked from the validation set, empty sources and pairs too long in pieces; ``valid`` beside."""
    rng = random.Random(5)
    train, valid = real_pairs("train"), real_pairs("valid")
    rows: list[tuple[str, str]] = []
    for pair in train:
        rows.append(pair)
        roll = rng.random()
        if roll < 0.2:
            rows.append(rows[rng.randrange(len(rows))])  # a duplicate
        elif roll < 0.25:
            rows.append(valid[rng.randrange(len(valid))])  # a held-out leak
        elif roll < 0.27:
            rows.append(("", pair[1]))  # an empty source
        elif roll < 0.29:
            rows.append((" ".join([pair[0]] * 12), pair[1] * 12))  # too many pieces
    half = len(rows) // 2
    for name, part in (("a", rows[:half]), ("b", rows[half:])):
        for side, lang in ((0, "en"), (1, "zh")):
            (folder / f"{name}.{lang}").write_text("".join(r[side] + "\n" for r in part), encoding="utf-8")
    for side, lang in ((0, "en"), (1, "zh")):
        (folder / f"valid.{lang}").write_text("".join(r[side] + "\n" for r in valid), encoding="utf-8")
    return folder


def settings(corpus: Path, destdir: Path, **more) -> dict:
    """prepare's settings for :func:`write_corpus`'s files: a 200-piece model, a 60-piece filter, dedup."""
    return {"source_lang": "en", "target_lang": "zh", "trainpref": [str(corpus / "a"), str(corpus / "b")],
            "validpref": str(corpus / "valid"), "vocab_size": 200, "filters": {"max_tokens": 60},
            "destdir": str(destdir), "workers": 1, **more}


def prepare_runs(corpus: Path, folder_for, shard_size: int) -> dict[int, Path]:
    """``corpus`` prepared with 1 and 3 tasks, train in shards of ``shard_size`` pairs, each into a folder of
    ``folder_for(name)`` (pytest's ``tmp_path_factory.mktemp``); checks that dedup, leakage and the piece
    filter dropped lines."""
    made = {}
    for tasks in (1, 3):
        destdir = folder_for(f"tasks{tasks}") / "bin"
        summary = tokenmill.prepare(settings(corpus, destdir, tasks=tasks, shard_size=shard_size), progress=False)
        clean = summary.splits["train"]["clean"]
        assert clean["dedup"]["duplicates"] > 20 and clean["leakage"]["leaked"] > 5 and clean["pieces"]
        made[tasks] = destdir
    return made


class Encoder:
    """The run's tokenizer and dictionaries: text -> the ids a store holds (pieces, then ``</s>``)."""

    def __init__(self, destdir: Path) -> None:
        self.spm = spm.SentencePieceProcessor(model_file=str(destdir / "spm.model"))
        self.dicts = {lang: Dictionary.load(destdir / f"dict.{lang}.txt") for lang in ("en", "zh")}

    def __call__(self, text: str, lang: str) -> list[int]:
        dictionary = self.dicts[lang]
        pieces = self.spm.encode(text, out_type=str)
        return [dictionary.indices.get(p, dictionary.unk_index) for p in pieces] + [dictionary.eos_index]


WORDS = {"eng_Latn": "the cat sees a red house near water every day".split(),
         "deu_Latn": "die Katze sieht ein rotes Haus nahe Wasser jeden Tag".split(),
         "rus_Cyrl": "кошка видит красный дом у воды каждый день".split()}


def write_data_bin(raw: Path) -> Path:
    """Two directions, eng-deu (300 pairs) and eng-rus (40), with duplicates, prepared into ``raw``'s sibling
    ``data_bin`` (a shared 80-piece model, two shards)."""
    rng = np.random.default_rng(0)
    for tgt, n in (("deu_Latn", 300), ("rus_Cyrl", 40)):
        for split, count in (("train", n), ("valid", 5)):
            rows = [rng.integers(0, 8, size=int(rng.integers(2, 7))) for _ in range(count)]
            rows += rows[:count // 10]  # duplicates, dropped by dedup
            for lang in ("eng_Latn", tgt):
                text = "".join(" ".join(WORDS[lang][i] for i in row) + f" {k}\n" for k, row in enumerate(rows))
                (raw / f"{split}.eng_Latn-{tgt}.{lang}").write_text(text, encoding="utf-8")
    destdir = raw.parent / "data_bin"
    tokenmill.prepare({"destdir": str(destdir), "directions": ["eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl"],
                       "trainpref": str(raw / "train"), "validpref": str(raw / "valid"), "vocab_size": 80,
                       "character_coverage": 1.0, "num_shards": 2, "workers": 1}, progress=False)
    return destdir
