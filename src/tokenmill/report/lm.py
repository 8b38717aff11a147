"""Section 6 of the report: language-model data — documents, GPT samples, blends.

Documents are the store's document index (Megatron layout) or its items (fairseq layout: one
document per line). GPT samples per epoch and how many of them span a document boundary come
from the same index training builds (:func:`tokenmill.data.gpt_index.build_gpt_index`, equal to
megatron-core's GPTDataset), over the concatenation of the split's shards. A blend (``--blend
WEIGHT PREFIX`` ...) is previewed with megatron-core's greedy blending
(:func:`tokenmill.data.blending.build_blending_indices`): requested weight, the share each dataset
really gets, and how many epochs of it that takes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.data.blending import build_blending_indices, normalize_weights
from tokenmill.data.gpt_index import GPTIndexConfig, build_gpt_index, count_samples
from tokenmill.errors import ConfigError
from tokenmill.report.corpus import length_histogram, length_summary
from tokenmill.store.reader import IndexedDataset


def document_lengths(store: IndexedDataset) -> np.ndarray:
    """Tokens per document: sums of item sizes between document boundaries (items when there are none)."""
    sizes = np.asarray(store.sizes, dtype=np.int64)
    bounds = store.document_indices
    if bounds is None or len(bounds) - 1 == len(sizes):
        return sizes
    bounds = np.asarray(bounds, dtype=np.int64)
    sums = np.concatenate([[0], np.cumsum(sizes)])
    return sums[bounds[1:]] - sums[bounds[:-1]]


def gpt_samples(sizes: np.ndarray, seq_length: int, seed: int = 1234) -> dict[str, Any]:
    """GPT samples in one epoch over documents of ``sizes`` and the share that spans a boundary.

    Sample k reads ``seq_length + 1`` tokens (Megatron's extra label token) from document position
    ``sample_index[k, 0]`` to ``sample_index[k + 1, 0]`` (both included: with the extra token the
    last piece is never empty); it crosses a boundary when those are different documents."""
    tokens = int(np.asarray(sizes, dtype=np.int64).sum())
    count = count_samples(tokens, seq_length, True, True)
    out: dict[str, Any] = {"seq_length": seq_length, "tokens": tokens, "samples": count,
                           "crossing": 0, "crossing_share": 0.0, "documents_per_sample": 0.0}
    if count == 0:
        return out
    index = build_gpt_index(sizes, GPTIndexConfig(seq_length=seq_length, seed=seed, num_epochs=1))
    starts = np.asarray(index.sample_index, dtype=np.int64)
    begin, end = starts[:-1], starts[1:]
    pieces = end[:, 0] - begin[:, 0] + 1  # documents each sample reads from (its extra token included)
    crossing = int(np.count_nonzero(pieces > 1))
    out.update(
        samples=len(begin),
        crossing=crossing,
        crossing_share=crossing / len(begin),
        documents_per_sample=float(pieces.mean()),
    )
    return out


def lm_numbers(stores: list[IndexedDataset], seq_length: int) -> dict[str, Any]:
    """Documents, their length distribution and GPT samples of one split (all its shards)."""
    lengths = np.concatenate([document_lengths(s) for s in stores]) if stores else np.zeros(0, np.int64)
    layouts = sorted({s.layout.value for s in stores})
    return {
        "documents": len(lengths),
        "items": int(sum(len(s) for s in stores)),
        "tokens": int(lengths.sum()),
        "layouts": layouts,
        "has_document_index": all(s.document_indices is not None for s in stores),
        "lengths": length_summary(lengths),
        "histogram": length_histogram(lengths),
        "longer_than_sample": int(np.count_nonzero(lengths > seq_length)),
        # over the documents that hold tokens, as training's index (a document without ids has no sequence)
        "gpt": gpt_samples(lengths[lengths > 0], seq_length),
    }


def blend_numbers(
    blend: tuple[tuple[float, str], ...], seq_length: int, samples: int | None, base: Path | None = None
) -> dict[str, Any]:
    """Megatron blend preview: per dataset weight, samples per epoch, realised share and epochs needed."""
    weights = normalize_weights([w for w, _ in blend])
    per_epoch = []
    names = []
    for _, prefix in blend:
        path = Path(prefix)
        if not Path(f"{path}.idx").exists() and base is not None and Path(f"{base / prefix}.idx").exists():
            path = base / prefix
        if not Path(f"{path}.idx").exists():
            raise ConfigError(f"--blend: no token store {prefix}.bin/.idx (give the prefix, without .bin/.idx)")
        store = IndexedDataset(path, check_pointers=False)
        per_epoch.append(count_samples(int(store.num_tokens), seq_length, True, True))
        names.append(str(prefix))
    size = int(samples) if samples else int(sum(per_epoch))
    if size < 1:
        raise ConfigError("the blend holds no full sample: lower --seq-length or give --blend-samples")
    dataset_index, _ = build_blending_indices(weights, size)
    drawn = np.bincount(np.asarray(dataset_index, dtype=np.int64), minlength=len(weights))
    return {
        "samples": size,
        "seq_length": seq_length,
        "datasets": [
            {"prefix": name, "weight": float(w), "samples_per_epoch": int(n), "drawn": int(d),
             "share": float(d / size), "epochs": float(d / n) if n else None}
            for name, w, n, d in zip(names, weights, per_epoch, drawn, strict=True)
        ],
    }


__all__ = ["blend_numbers", "document_lengths", "gpt_samples", "lm_numbers"]
