"""Memory and CPU of near-dedup's cluster resolution (``resolve_clusters``) alone, at the edge counts that
``bench_near_dedup.py``'s corpora give at 0.2 / 1 / 4 / 8 GB of text.

The edges are synthetic but counted as ``find_edges`` writes them: each near-duplicate pair (drops from the
runs in benchmarks/README.md; 8 GB: twice 4 GB's) is written once per key partition its 14 shared band keys
fall in (``partitions`` = items x 14 / 2^20), so ~2 at 0.2 GB and ~11 at 4 GB. Each size runs in a fresh
process: during the call alone, the peak of numpy's traced allocations, the process's peak RSS (its
high-water mark reset just before, Linux's ``/proc/self/clear_refs``) and CPU seconds.

    python benchmarks/bench_near_components.py
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

SIZES = {"0.2 GB": (8_739, 87_000), "1 GB": (42_676, 425_000), "4 GB": (170_007, 1_740_000),
         "8 GB": (340_014, 3_480_000)}
"""Corpus -> (near-duplicates dropped, items): measured drops (8 GB: twice 4 GB's), ~2.3 kB per item."""


def edges(drops: int, items: int, seed: int = 0) -> np.ndarray:
    """(first item, near-duplicate) pairs, each repeated once per key partition its 14 band keys fall in."""
    rng = np.random.default_rng(seed)
    partitions = max(1, -(-items * 14 // (1 << 20)))
    pairs = np.sort(rng.integers(0, items, size=(drops, 2)), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    repeats = np.array([len(np.unique(rng.integers(0, partitions, 14))) for _ in range(len(pairs))])
    return np.repeat(pairs, repeats, axis=0)


def one(drops: int, items: int) -> dict:
    """Resolve the clusters of one size's edges in this process; its figures."""
    components = importlib.import_module("tokenmill.prepare.near_dedup")  # resolve_clusters, EDGES
    found = edges(drops, items)
    with tempfile.TemporaryDirectory(prefix="near-cc-") as scratch:
        found.tofile(Path(scratch) / components.EDGES)
        count = len(found)
        del found
        Path("/proc/self/clear_refs").write_text("5")  # the peak RSS starts again from the current RSS
        start_mb = _status_mb("VmRSS")
        before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        tracemalloc.start()
        dropped = components.resolve_clusters(Path(scratch))
        traced = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        after = resource.getrusage(resource.RUSAGE_SELF)
    return {"edges": count, "dropped": dropped, "traced_mb": traced / 1e6, "rss_mb": _status_mb("VmHWM"),
            "start_mb": start_mb,
            "cpu_s": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
            "wall_s": time.perf_counter() - started}


def _status_mb(field: str) -> float:
    """A memory field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``: peak) in MB."""
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(f"{field}:"))
    return int(line.split()[1]) / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--one", nargs=2, type=int, metavar=("DROPS", "ITEMS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*args.one)))
        return
    print("| corpus | edges written | items dropped | traced peak | process RSS at the call / its peak during it | "
          "CPU s |\n"
          "|---|---|---|---|---|---|")
    for name, (drops, items) in SIZES.items():
        out = subprocess.run([sys.executable, __file__, "--one", str(drops), str(items)], check=True,
                             capture_output=True, text=True).stdout
        r = json.loads(out.splitlines()[-1])
        print(f"| {name} | {r['edges']:,} | {r['dropped']:,} | {r['traced_mb']:.0f} MB | {r['start_mb']:.0f} / "
              f"{r['rss_mb']:.0f} MB | "
              f"{r['cpu_s']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
