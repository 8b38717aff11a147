"""Elastic resume: re-planning the rest of an epoch for a new world size, at scale.

A 20M-pair epoch is planned at world size 8; after a third of its steps the job resumes at world
size 4 (and, within the same epoch, at 6): the time to plan what is left (first call: computed;
second call: mapped from the plan cache) and the peak RSS of doing so.

    python benchmarks/bench_elastic.py [--pairs 20000000]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time

import numpy as np

from tokenmill.batching import BatchConfig
from tokenmill.batching.costs import Sizes
from tokenmill.batching.plan import Planner
from tokenmill.cache import ArrayCache


def lengths(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Log-normal sentence lengths like real MT corpora (median ~20 tokens), target correlated."""
    rng = np.random.default_rng(seed)
    src = np.clip(rng.lognormal(3.0, 0.6, n), 1, 250).astype(np.int32)
    tgt = np.clip(src * rng.lognormal(0.0, 0.25, n), 1, 250).astype(np.int32)
    return src, tgt


def timed(call):
    began = time.perf_counter()
    result = call()
    return result, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=20_000_000)
    args = parser.parse_args()
    src, tgt = lengths(args.pairs, 1)
    config = BatchConfig(max_tokens=4096, seed=1)
    with tempfile.TemporaryDirectory() as cache_dir:
        cache = ArrayCache(cache_dir)
        at8 = Planner(Sizes(src, tgt), config, world_size=8, data_fingerprint="bench", cache=cache)
        plan8, first = timed(lambda: at8.plan(1))
        done = plan8.num_steps // 3
        at4 = at8.for_world(4)
        rest4, cold = timed(lambda: at4.plan_after(1, [(8, done)]))
        at4b = Planner(Sizes(src, tgt), config, world_size=4, data_fingerprint="bench", cache=cache)
        _, warm = timed(lambda: at4b.plan_after(1, [(8, done)]))
        at6 = at8.for_world(6)
        rest6, chained = timed(lambda: at6.plan_after(1, [(8, done), (4, rest4.num_steps // 2)]))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"pairs {args.pairs:,}; epoch plan at 8 ranks: {first:.2f} s, {plan8.num_steps} steps; "
          f"resumed after {done} steps")
    print(f"rest for 4 ranks: {cold:.2f} s computed, {warm:.3f} s from the cache; {rest4.num_steps} steps, "
          f"padding {rest4.stats.padding_fraction:.2%} (whole epoch at 8: {plan8.stats.padding_fraction:.2%})")
    print(f"then 6 ranks within the same epoch: {chained:.2f} s; {rest6.num_steps} steps")
    print(f"peak RSS of this process: {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
