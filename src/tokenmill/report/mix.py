"""Section 4 of the report: many directions — their sizes, shards, and how temperature sampling mixes them.

The shares and drawn counts are what training's sampler computes for epoch 1
(:class:`~tokenmill.batching.sampled.SampledPlanner` over
:class:`~tokenmill.data.multi_pairs.MultiPairDataset`, i.e. :class:`~tokenmill.data.sampling.SamplingPlan`
over the pairs of the shard each direction reads in epoch 1, after the length filter), once per
temperature. Sizes and shard counts per direction and split come from the manifest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tokenmill.batching.config import BatchConfig
from tokenmill.batching.sampled import SampledPlanner
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.sampling import SamplingConfig
from tokenmill.report.layout import DataDir


def direction_table(data: DataDir) -> list[dict[str, Any]]:
    """Per direction: pairs per split, tokens per side (train) and the shard folders holding its train split."""
    summary = data.manifest.summary.get("directions") or {}
    rows = []
    for name in data.directions:
        record = summary.get(name) or {}
        splits = record.get("splits") or {}
        pairs: dict[str, int] = {}
        tokens: dict[str, int] = {}
        for split, info in splits.items():
            langs = info.get("langs") or {}
            if langs:
                first = next(iter(langs.values()))
                pairs[split] = int(first.get("sentences", 0))
            if split == "train":
                tokens = {lang: int(v.get("tokens", 0)) for lang, v in langs.items()}
        train = data.part("train", name)
        rows.append({
            "direction": name,
            "pairs": pairs,
            "train_tokens": tokens,
            "shards": [s or "." for s in train.shards] if train else [],
        })
    return rows


def sampling(dataset: MultiPairDataset, temperatures: tuple[float, ...], seed: int) -> list[dict[str, Any]]:
    """For each temperature: per direction the epoch-1 pairs it can draw from, its share and drawn count."""
    out = []
    for temperature in temperatures:
        planner = SampledPlanner(dataset, BatchConfig(), SamplingConfig(temperature=float(temperature), seed=seed))
        mix = planner.mix(1)
        plan = mix.plan
        assert plan is not None
        drawn = planner.counts(1)
        out.append({
            "temperature": float(temperature),
            "virtual_size": int(plan.virtual_size),
            "directions": [
                {
                    "direction": name,
                    "kept": int(mix.kept[d]),
                    "share": float(plan.probabilities[d]),
                    "drawn": int(drawn[d]),
                    "epochs_over_data": float(drawn[d] / mix.kept[d]) if mix.kept[d] else 0.0,
                }
                for d, name in enumerate(dataset.directions)
            ],
            "natural_share": (np.asarray(mix.kept) / max(int(np.sum(mix.kept)), 1)).tolist(),
        })
    return out


def directions_section(
    data: DataDir, dataset: MultiPairDataset | None, temperatures: tuple[float, ...], seed: int
) -> dict[str, Any]:
    """Everything section 4 shows; ``dataset`` is the opened train split (None: sampling not shown)."""
    return {
        "directions": direction_table(data),
        "shard_folders": data.shard_folders,
        "sampling": sampling(dataset, temperatures, seed) if dataset is not None else [],
    }


__all__ = ["direction_table", "directions_section", "sampling"]
