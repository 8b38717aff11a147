"""An Open-NLLB-style ``data_bin`` written the way ``tokenmill prepare`` lays it out (for tests).

``shard000/``..``shard002/`` with ``train.{src}-{tgt}.{lang}.bin/.idx`` (a big direction in three
shards, a middle one in two, a small one in shard000 only), ``valid.*`` in shard000, and one shared
``dict.txt`` (+ ``dict.{lang}.txt`` copies) holding the ``__lang__`` tags.
"""

from __future__ import annotations

from pathlib import Path

from tests.batching.corpus import VOCAB, pair_lengths, write_side

LANGS = ["eng_Latn", "tur_Latn", "hin_Deva", "fra_Latn"]
SHARDS = {  # direction -> pairs in each shard it is in (shard000 first)
    "eng_Latn-tur_Latn": [160, 140, 150],
    "eng_Latn-hin_Deva": [60, 50],
    "fra_Latn-eng_Latn": [12],
}
VALID = {"eng_Latn-tur_Latn": 20, "eng_Latn-hin_Deva": 10, "fra_Latn-eng_Latn": 5}
TAG = {lang: VOCAB + i for i, lang in enumerate(LANGS)}  # ids of __lang__ in the dictionary below


def write_dictionary(folder: Path, langs: list[str]) -> None:
    """fairseq dict.txt: words w4..w199 (ids 4..199), then the language tags (ids 200..)."""
    text = "".join(f"w{i} {1000 - i}\n" for i in range(4, VOCAB)) + "".join(f"__{lang}__ 1\n" for lang in langs)
    for name in ["dict.txt"] + [f"dict.{lang}.txt" for lang in langs]:
        (folder / name).write_text(text, encoding="utf-8")


def write_direction(folder: Path, split: str, direction: str, n: int, seed: int, sides: str = "both") -> None:
    src, tgt = direction.split("-")
    src_len, tgt_len = pair_lengths(n, seed)
    base = folder / f"{split}.{direction}"
    if sides in ("both", "src"):
        write_side(Path(f"{base}.{src}"), src_len, seed + 1)
    if sides in ("both", "tgt"):
        write_side(Path(f"{base}.{tgt}"), tgt_len, seed + 2)


def make_data_bin(root: Path, shards: dict[str, list[int]] = SHARDS, langs: list[str] = LANGS) -> Path:
    """``root/shardNNN/`` folders in the Open-NLLB layout; returns ``root``."""
    root.mkdir(parents=True)
    write_dictionary(root, langs)
    for k in range(max(len(s) for s in shards.values())):
        folder = root / f"shard{k:03d}"
        folder.mkdir()
        write_dictionary(folder, langs)
        for d, (direction, sizes) in enumerate(shards.items()):
            if k < len(sizes):
                write_direction(folder, "train", direction, sizes[k], seed=100 * d + 10 * k)
    for d, (direction, n) in enumerate(VALID.items()):
        write_direction(root / "shard000", "valid", direction, n, seed=7000 + d)
    return root
