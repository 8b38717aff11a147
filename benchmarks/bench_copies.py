"""Copies of upsampled pairs side by side (before) or spread over batches (after): padding and repeats.

Issue 32 item 4. A 6-direction mix with long-tailed sizes (20000, 6000, 2000, 600, 200, 100 pairs; lengths
lognormal, correlated like translations) is sampled at temperature T = 5, fairseq's default virtual size:
the small directions are drawn up to ~40 times over. Epoch 1 is cut in each mode twice, in one run:

* before: copies not marked (``Sizes.copies`` None), which is exactly the cut tokenmill made until now;
* after: copies marked, as ``SampledMix`` now does (:mod:`tokenmill.batching.copies`).

Printed per mode: batches, padded slots (and the change relative to today's lowpad), batches holding a
repeated pair, extra copies over all batches, the most extra copies in one batch, and "avoidable": copies
sharing a batch although the batches of their length class (row cost and longer side) could have kept
every such pair apart.

Usage::

    python benchmarks/bench_copies.py                 # ~10 s
    python benchmarks/bench_copies.py --max-tokens 8192 --scale 4
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tokenmill.batching.config import BatchConfig
from tokenmill.batching.copies import length_classes, repeats_per_batch
from tokenmill.batching.costs import Sizes, row_costs
from tokenmill.batching.plan import compute_sampled_batches
from tokenmill.batching.ranks import BatchTable, padded_tokens
from tokenmill.batching.select import EpochSample
from tokenmill.data.sampling import SamplingConfig, SamplingPlan

SIZES = (20000, 6000, 2000, 600, 200, 100)


def lengths(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Source and target lengths of ``n`` pairs (mean ~20 tokens, up to 250)."""
    rng = np.random.default_rng(seed)
    src = np.clip(np.rint(rng.lognormal(3.0, 0.5, n)), 1, 250)
    tgt = np.clip(np.rint(src * rng.lognormal(0.05, 0.2, n) + rng.normal(0, 1.0, n)), 1, 250)
    return src.astype(np.int32), tgt.astype(np.int32)


def avoidable(order: np.ndarray, stops: np.ndarray, cost: np.ndarray) -> int:
    """Shared copies (of pairs with no more copies than batches of their cost) in costs whose batches
    could have kept all such pairs apart (the flow condition of tests/batching/test_copies.py)."""
    batch = np.repeat(np.arange(len(stops)), np.diff(np.concatenate([[0], stops])))
    ids, copies = np.unique(order, return_counts=True)
    total = 0
    for c in np.unique(cost):
        where = cost == c
        batches, slots = np.unique(batch[where], return_counts=True)
        pairs, counts = np.unique(np.stack([batch[where], order[where]]), axis=1, return_counts=True)
        k = copies[np.searchsorted(ids, pairs[1])]
        shared = int(np.sum((counts > 1) & (k <= len(batches))))
        if not shared:
            continue
        members = np.unique(order[where])
        must = copies[np.searchsorted(ids, members)]
        must = must[must <= len(batches)]
        smallest = np.sort(slots)
        fits = all(int(np.maximum(must - t, 0).sum()) <= int(smallest[: len(slots) - t].sum())
                   for t in range(len(slots) + 1))
        total += shared if fits else 0
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--scale", type=int, default=1, help="multiply every direction's size")
    parser.add_argument("--temperature", type=float, default=5.0)
    args = parser.parse_args()
    sizes = [n * args.scale for n in SIZES]
    parts = [lengths(n, 10 + i) for i, n in enumerate(sizes)]
    src = np.concatenate([p[0] for p in parts])
    tgt = np.concatenate([p[1] for p in parts])
    plan = SamplingPlan.build([f"d{i}" for i in range(len(sizes))], sizes,
                              SamplingConfig(temperature=args.temperature, seed=1))
    ids = plan.sample(1)
    print(f"{len(sizes)} directions {sizes}, T={args.temperature}: {len(ids)} items, {len(np.unique(ids))} "
          f"distinct pairs, up to {int(np.bincount(ids).max())} copies of one; max_tokens={args.max_tokens}")
    print(f"{'mode':8} {'copies':8} {'batches':>7} {'padded':>9} {'vs lowpad':>9} {'pad %':>6} "
          f"{'b. w/ rep':>9} {'repeats':>7} {'max/b':>5} {'avoidable':>9} {'seconds':>7}")
    reference = None
    for mode in ("lowpad", "fairseq", "opennmt"):
        config = BatchConfig(mode=mode, max_tokens=args.max_tokens)
        for label, marked in (("together", None), ("spread", ids)):
            sample = EpochSample(ids, Sizes(src=src[ids], tgt=tgt[ids], copies=marked), {})
            began = time.perf_counter()
            arrays, _ = compute_sampled_batches(sample, config, 1, 1)
            seconds = time.perf_counter() - began
            table = BatchTable(*(np.asarray(arrays[n]) for n in ("starts", "stops", "max_src", "max_tgt", "sum_src",
                                                                 "sum_tgt")))
            padded = int(padded_tokens(table, 1).sum())
            reference = reference or padded
            real = int(table.sum_src.sum() + table.sum_tgt.sum())
            order = np.asarray(arrays["order"])
            repeats = repeats_per_batch(order, table.stops)
            cost = length_classes(row_costs(src[order], tgt[order], 1), src[order], tgt[order])
            print(f"{mode:8} {label:8} {len(table):7d} {padded:9d} {padded / reference - 1:+9.2%} "
                  f"{1 - real / padded:6.2%} {int((repeats > 0).sum()):9d} {int(repeats.sum()):7d} "
                  f"{int(repeats.max()):5d} {avoidable(order, table.stops, cost):9d} {seconds:7.2f}")


if __name__ == "__main__":
    main()
