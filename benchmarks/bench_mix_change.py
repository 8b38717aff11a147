"""Re-planning the rest of a large epoch under a new mix and a new world size (issue 32).

Six directions with long-tailed sizes (``--pairs`` in all) are mixed at T = 5 and planned at world
size 8 (lowpad, 4096 tokens). After a third of the epoch's steps the job resumes under new weights
(one direction retired, the largest halved) at world size 12. Timed: the epoch's own plan (computed,
then cached), the re-plan of what is left (first call: computed — the served items, the new draw less
them, the cut; second call: mapped from the plan cache), and a plain elastic re-plan (world size only)
for comparison. The selection is an in-memory array mix (no corpus on disk), so only planning is timed.

Then the same for a Megatron blend of ``--pairs`` GPT samples (six members; the new blend retires one,
adds one and re-weights the rest; world size 8 -> 12): the two blends' index arrays (megatron-core's
greedy, cached like any blend), and the rest of the pass under the new blend (what each member has left,
interleaved), first computed, then from the cache. Blends are made from their settings alone
(:class:`~tokenmill.data.blend_mix.BlendDraw`), so no token store is needed.

    python benchmarks/bench_mix_change.py                    # 2M pairs, about a minute here
    python benchmarks/bench_mix_change.py --pairs 20000000   # the issue's scale (memory: ~8 GB)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the checkout's tests: the in-memory mix the plan digests use

from tests.batching.array_mix import NAMES, SHARES, ArrayMix, lengths, new_mix  # noqa: E402
from tokenmill.batching import BatchConfig  # noqa: E402
from tokenmill.batching.gpt_mix import BlendPlanner  # noqa: E402
from tokenmill.batching.gpt_plan import GPTBatchConfig  # noqa: E402
from tokenmill.batching.plan import Planner  # noqa: E402
from tokenmill.cache import ArrayCache  # noqa: E402
from tokenmill.data.blend_mix import BlendDraw  # noqa: E402
from tokenmill.data.blending import normalize_weights  # noqa: E402
from tokenmill.data.sampling import SamplingConfig  # noqa: E402


def timed(what: str, call: Any) -> Any:
    """Run ``call``, print its wall and CPU seconds (the CPU time is what a machine to itself would take)."""
    began, cpu = time.perf_counter(), time.process_time()
    result = call()
    print(f"  {what:<58} {time.perf_counter() - began:7.2f} s wall {time.process_time() - cpu:7.2f} s CPU")
    return result


def blend_change(samples: int, folder: str) -> None:
    """Time the re-plan of a blend's pass under another blend (module docstring, second part)."""
    config = GPTBatchConfig(global_batch_size=1536, micro_batch_size=2)
    old = {"blend": {"weights": normalize_weights(SHARES).tolist(), "size": samples},
           "datasets": [f"member{i}" for i in range(6)]}
    new_weights = normalize_weights([0.3, 0.25, 0.12, 0.05, 0.02, 0.1])  # member0 halved, member5 retired, 6 added
    new = {"blend": {"weights": new_weights.tolist(), "size": samples},
           "datasets": [f"member{i}" for i in (0, 1, 2, 3, 4, 6)]}
    print(f"{samples:,} GPT samples blended from 6 members; the new blend retires one, adds one")
    draw_old = timed("old blend's index (megatron-core's greedy, computed)", lambda: BlendDraw(old, folder))
    draw_new = timed("new blend's index (computed)", lambda: BlendDraw(new, folder))
    before = BlendPlanner(draw_old, config, world_size=8)
    steps = before.plan(1).num_steps // 3
    print(f"  {before.plan(1).num_steps:,} micro batches per rank; the change comes after {steps:,}")
    segments = [(8, steps, old)]
    rest = timed("rest under the new blend, world 12 (computed)",
                 lambda: BlendPlanner(draw_new, config, world_size=12).plan_after(1, segments))
    timed("rest under the new blend, world 12 (from the cache)",
          lambda: BlendPlanner(BlendDraw(new, folder), config, world_size=12).plan_after(1, segments))
    print(f"  {rest.num_steps:,} micro batches per rank left under the new blend")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=2_000_000)
    parser.add_argument("--only", choices=["mix", "blend"], default=None, help="time one of the two parts")
    args = parser.parse_args()
    if args.only != "blend":
        sampled_change(args.pairs)
    if args.only != "mix":
        with tempfile.TemporaryDirectory() as folder:
            blend_change(args.pairs, folder)


def sampled_change(pairs: int) -> None:
    """Time the re-plan of a sampled mix's epoch under another mix (module docstring, first part)."""
    src, tgt, sizes = lengths(pairs, seed=1)
    old = SamplingConfig(temperature=5.0, seed=1)
    new = new_mix(pairs, seed=1)
    config = BatchConfig(max_tokens=4096, seed=1)
    with tempfile.TemporaryDirectory() as folder:
        cache = ArrayCache(folder)
        mix = ArrayMix(src, tgt, sizes, old)
        print(f"{pairs:,} pairs in {len(NAMES)} directions, T=5: {mix.plan.virtual_size:,} items per epoch")
        before = Planner(mix, config, world_size=8, cache=cache)
        plan = timed("epoch plan, world 8 (computed)", lambda: before.plan(1))
        steps = plan.num_steps // 3
        print(f"  {plan.num_steps:,} steps per rank; the change comes after {steps:,}")
        after = Planner(ArrayMix(src, tgt, sizes, new), config, world_size=12, cache=cache)
        segments = [(8, steps, mix.settings())]
        rest = timed("rest under the new mix, world 12 (computed)", lambda: after.plan_after(1, segments))
        fresh = Planner(ArrayMix(src, tgt, sizes, new), config, world_size=12, cache=cache)
        timed("rest under the new mix, world 12 (from the plan cache)", lambda: fresh.plan_after(1, segments))
        print(f"  {rest.num_steps:,} steps per rank left under the new mix")
        elastic = Planner(ArrayMix(src, tgt, sizes, old), config, world_size=12, cache=cache)
        timed("rest under the same mix, world 12 (elastic, computed)", lambda: elastic.plan_after(1, [(8, steps)]))


if __name__ == "__main__":
    main()
