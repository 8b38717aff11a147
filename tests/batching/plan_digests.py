"""Digests of whole plans, so a change to how plans are computed (speed work) is checked to change no byte.

Regenerate (only when a plan is *meant* to change, with ``PLAN_VERSION`` bumped)::

    python -m tests.batching.plan_digests

Each case is an epoch plan, an elastic re-plan (another world size) or a re-plan under a new mix (new
weights and another world size) of an in-memory sampled mix (six directions, long-tailed sizes,
temperature 5: small directions are drawn several times over, so copies are spread) or of every kept
pair once; in lowpad (plain, with row multiples and padded widths, block by block), fairseq, opennmt
and packed modes, for several seeds and world sizes. A digest is the SHA-256 of every array of the plan
(sample order, batch table, step schedule, packed rows) with its dtype and shape, and of its counts.
``golden/plan_digests.json`` holds the digests the code made when it was written (main at d9f71a7).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from tests.batching.array_mix import ArrayMix, lengths, new_mix
from tokenmill.batching import BatchConfig
from tokenmill.batching.packed_pairs import PackConfig, PackedPairPlanner
from tokenmill.batching.plan import Planner
from tokenmill.data.sampling import SamplingConfig

GOLDEN = Path(__file__).with_name("golden") / "plan_digests.json"


class Described:
    """What a packed planner reads of its dataset besides the selection: a name for messages."""

    def describe(self) -> str:
        return "the synthetic mix"


MODES: dict[str, Any] = {
    "lowpad": lambda seed: BatchConfig(max_tokens=2048, seed=seed),
    "lowpad-multiple": lambda seed: BatchConfig(max_tokens=2048, seed=seed, required_batch_size_multiple=8,
                                                pad_to_multiple=8, max_sentences=96),
    "lowpad-blocks": lambda seed: BatchConfig(max_tokens=2048, seed=seed, block_size=1 << 15),
    "fairseq": lambda seed: BatchConfig(mode="fairseq", max_tokens=2048, seed=seed),
    "opennmt": lambda seed: BatchConfig(mode="opennmt", max_tokens=2048, seed=seed),
    "packed": lambda seed: PackConfig(max_length=128, max_tokens=1024, seed=seed),
    "packed-greedy": lambda seed: PackConfig(max_length=160, max_tokens=960, seed=seed, strategy="greedy"),
}
# (pairs, seed, world size of the epoch's plan, world size after the resume)
RUNS = [(3000, 1, 1, 3), (60_000, 2, 8, 3), (60_000, 3, 3, 8)]


def planner(mode: str, selection: Any, seed: int, world: int) -> Any:
    config = MODES[mode](seed)
    if isinstance(config, PackConfig):
        return PackedPairPlanner(Described(), config, selection=selection, world_size=world, cache=False)  # type: ignore[arg-type]
    return Planner(selection, config, world_size=world, cache=False)


def digest(plan: Any) -> str:
    """SHA-256 of every array of ``plan`` (dtype, shape, bytes) and of its counts."""
    h = hashlib.sha256()
    arrays = [plan.order, plan.table.starts, plan.table.stops, plan.table.max_src, plan.table.max_tgt,
              plan.table.sum_src, plan.table.sum_tgt, plan.schedule]
    if hasattr(plan, "row_ends"):
        arrays.append(plan.row_ends)
    for array in arrays:
        array = np.ascontiguousarray(array)
        h.update(f"{array.dtype.str}{array.shape}".encode())
        h.update(array.tobytes())
    h.update(json.dumps([plan.stats.num_samples, plan.stats.dropped], sort_keys=True).encode())
    return h.hexdigest()


def case_digests(mode: str, pairs: int, seed: int, world: int, after: int) -> dict[str, str]:
    """Digests of one mode and run: epochs 1 and 2, the elastic re-plan of epoch 1 after a third of its
    steps, the re-plan under the new mix, and the plan of every kept pair once (no copies)."""
    src, tgt, sizes = lengths(pairs, seed)
    old = SamplingConfig(temperature=5.0, seed=seed)
    mix = ArrayMix(src, tgt, sizes, old)
    before = planner(mode, mix, seed, world)
    first = before.plan(1)
    steps = first.num_steps // 3
    out = {"epoch1": digest(first), "epoch2": digest(before.plan(2))}
    out["elastic"] = digest(planner(mode, ArrayMix(src, tgt, sizes, old), seed, after).plan_after(1, [(world, steps)]))
    changed = planner(mode, ArrayMix(src, tgt, sizes, new_mix(pairs, seed)), seed, after)
    out["mix"] = digest(changed.plan_after(1, [(world, steps, mix.settings())]))
    once = SamplingConfig(temperature=1.0, virtual_size=pairs // 2, seed=seed)  # a subset: no copies
    out["subset"] = digest(planner(mode, ArrayMix(src, tgt, sizes, once), seed, after).plan(1))
    return out


def all_digests() -> dict[str, dict[str, str]]:
    """Every case's digests, by ``mode/pairs/seed/world->after``."""
    return {f"{mode}/{pairs}/{seed}/{world}->{after}": case_digests(mode, pairs, seed, world, after)
            for mode in MODES for pairs, seed, world, after in RUNS}


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(all_digests(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
