"""``ScheduledPlan.stats``: a weights schedule's epoch has the statistics other plans give, and each figure
equals what is counted from the batches its steps serve (every rank), for token-budget batches and packed
rows, whole and after an elastic resume at another world size."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import tokenmill
from tokenmill.batching.config import BatchConfig
from tokenmill.data.sampling import SamplingConfig
from tokenmill.loader.multilingual import multilingual_batches

TUR, HIN, FRA = "eng_Latn-tur_Latn", "eng_Latn-hin_Deva", "fra_Latn-eng_Latn"
SAMPLING = SamplingConfig.from_dict(yaml.safe_load(f"""
weights_schedule:
  - {{step: 0, weights: {{{TUR}: 1, {HIN}: 0, {FRA}: 2}}}}
  - {{step: 8, weights: {{{TUR}: 1, {HIN}: 2, {FRA}: 0}}}}
schedule_every: 4
seed: 5
"""))


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def counted(dataset, batches: list[list[np.ndarray]], pad: int) -> dict:
    """Samples, tokens, padded slots and tokens per rank of ``batches`` (per step, each rank's ids)."""
    src, tgt = np.asarray(dataset.src_sizes, dtype=np.int64), np.asarray(dataset.tgt_sizes, dtype=np.int64)
    ids = [np.asarray(b, dtype=np.int64) for step in batches for b in step]
    slots = sum(len(b) * (round_up(int(src[b].max()), pad) + round_up(int(tgt[b].max()), pad)) for b in ids if len(b))
    world = len(batches[0])
    return {
        "num_samples": sum(len(b) for b in ids),
        "src_tokens": int(sum(src[b].sum() for b in ids)),
        "tgt_tokens": int(sum(tgt[b].sum() for b in ids)),
        "padded_tokens": int(slots),
        "num_batches": len(ids),
        "tokens_per_rank": [int(sum(src[s[r]].sum() + tgt[s[r]].sum() for s in batches)) for r in range(world)],
    }


def figures(stats) -> dict:
    return {k: getattr(stats, k) for k in ("num_samples", "src_tokens", "tgt_tokens", "padded_tokens", "num_batches",
                                           "tokens_per_rank")}


@pytest.mark.parametrize("pad", [1, 8])
def test_token_budget_stats_equal_the_served_batches(multi_dataset, pad):
    config = BatchConfig(max_tokens=240, required_batch_size_multiple=2, pad_to_multiple=pad, seed=2)
    its = [multilingual_batches(multi_dataset, config, SAMPLING, rank=r, world_size=2, collate=None, cache=False)
           for r in range(2)]
    plan = its[0].plan()
    assert len(plan.parts) >= 3, "the schedule should cut epoch 1 into several parts"
    batches = [[it.indices_at(1, t) for it in its] for t in range(plan.num_steps)]
    stats = plan.stats
    assert figures(stats) == counted(multi_dataset, batches, pad)
    assert stats.num_batches_per_rank == [plan.num_steps] * 2
    assert stats.extra["part_steps"] == [take for _, take in plan.parts]
    assert stats.padding_fraction == pytest.approx(1 - (stats.src_tokens + stats.tgt_tokens) / stats.padded_tokens)
    assert stats.dropped == plan.parts[-1][0].stats.dropped


def test_stats_after_an_elastic_resume_count_this_world_sizes_rest(multi_dataset):
    config = BatchConfig(max_tokens=240, required_batch_size_multiple=2, seed=2)
    before = multilingual_batches(multi_dataset, config, SAMPLING, world_size=2, collate=None, cache=False)
    before.seek(1, 5)
    after = [multilingual_batches(multi_dataset, config, SAMPLING, rank=r, world_size=3, collate=None, cache=False)
             for r in range(3)]
    for it in after:
        it.load_state_dict(before.state_dict())
    plan = after[0].plan()
    assert plan.earlier, "the part run at world size 2 is recorded"
    batches = [[it.indices_at(1, t) for it in after] for t in range(plan.num_steps)]
    assert figures(plan.stats) == counted(multi_dataset, batches, 1)


def test_packed_stats_equal_the_served_rows(multi_dataset):
    pack = tokenmill.PackConfig(max_length=64, rows_per_batch=2)
    its = [tokenmill.batches(multi_dataset, pack=pack, sampling=SAMPLING, rank=r, world_size=2, collate=None,
                             cache=False) for r in range(2)]
    plan = its[0].plan()
    assert len(plan.parts) >= 2
    served = [it.indices_at(1, t) for t in range(plan.num_steps) for it in its]
    src, tgt = np.asarray(multi_dataset.src_sizes, dtype=np.int64), np.asarray(multi_dataset.tgt_sizes, dtype=np.int64)
    pairs = np.concatenate([b.ids for b in served])
    stats = plan.stats
    assert stats.num_samples == len(pairs)
    assert (stats.src_tokens, stats.tgt_tokens) == (int(src[pairs].sum()), int(tgt[pairs].sum()))
    assert stats.extra["rows"] == sum(b.num_rows for b in served)
    assert stats.padded_tokens == sum(b.num_rows * (b.src_width + b.tgt_width) for b in served)
    assert stats.num_batches == len(served)
    assert stats.extra["pairs_per_row"] == pytest.approx(len(pairs) / stats.extra["rows"])
