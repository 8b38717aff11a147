"""Small prepared data directories for the batching, loader and command tests.

Written the way ``tokenmill prepare`` lays them out: fairseq names, uint16 tokens with ``</s>`` = 2
appended to every sentence, ``dict.{lang}.txt`` and a ``manifest.json`` naming the languages.
Lengths are lognormal-ish and correlated between the sides, like real parallel text.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tokenmill.store import IndexedWriter

EOS = 2
VOCAB = 200  # ids 4..199 are words


def pair_lengths(
    n: int, seed: int, *, mean: float = 2.3, spread: float = 0.6, top: int = 120
) -> tuple[np.ndarray, np.ndarray]:
    """Source and target lengths (without ``</s>``), correlated like translations."""
    rng = np.random.default_rng(seed)
    src = np.clip(np.rint(rng.lognormal(mean, spread, n)), 1, top).astype(np.int64)
    ratio = rng.lognormal(0.05, 0.2, n)
    tgt = np.clip(np.rint(src * ratio + rng.normal(0, 1.0, n)), 1, top).astype(np.int64)
    return src, tgt


def write_side(prefix: Path, lengths: np.ndarray, seed: int) -> None:
    """Random word ids with ``</s>`` appended to each sentence."""
    rng = np.random.default_rng(seed)
    with IndexedWriter(prefix, layout="fairseq", vocab_size=VOCAB) as writer:
        total = int(lengths.sum())
        words = rng.integers(4, VOCAB, total).astype(np.uint16)
        with_eos = np.empty(total + len(lengths), dtype=np.uint16)
        ends = np.cumsum(lengths + 1) - 1
        mask = np.ones(len(with_eos), dtype=bool)
        mask[ends] = False
        with_eos[mask] = words
        with_eos[ends] = EOS
        writer.add_items(with_eos, lengths + 1)


def write_dict(path: Path) -> None:
    path.write_text("".join(f"w{i} {1000 - i}\n" for i in range(4, VOCAB)), encoding="utf-8")


def make_pair_dir(
    root: Path,
    n: int = 500,
    *,
    seed: int = 0,
    src: str = "en",
    tgt: str = "de",
    split: str = "train",
    lengths: tuple[np.ndarray, np.ndarray] | None = None,
    manifest: bool = True,
    alignments: list[str] | None = None,
) -> Path:
    """A prepared directory with one split of ``n`` pairs (lengths given or drawn); returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    src_len, tgt_len = lengths if lengths is not None else pair_lengths(n, seed)
    base = root / f"{split}.{src}-{tgt}"
    write_side(Path(f"{base}.{src}"), np.asarray(src_len), seed + 1)
    write_side(Path(f"{base}.{tgt}"), np.asarray(tgt_len), seed + 2)
    for lang in (src, tgt):
        write_dict(root / f"dict.{lang}.txt")
    if alignments is not None:
        from tokenmill.batching.align import parse_pharaoh

        flat = [parse_pharaoh(line) for line in alignments]
        with IndexedWriter(root / f"{split}.align.{src}-{tgt}", layout="fairseq", dtype=np.int32) as writer:
            writer.add_items(np.concatenate(flat).astype(np.int32), np.array([len(f) for f in flat]))
    if manifest:
        (root / "manifest.json").write_text(json.dumps({"format": "tokenmill", "source_lang": src, "target_lang": tgt}))
    return root
