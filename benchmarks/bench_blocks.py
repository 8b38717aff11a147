"""Block-wise epoch plans at scale: time, peak memory and padding, blocked versus one whole-epoch plan.

The pair lengths (log-normal, target correlated, like real MT corpora) are written once to ``.npy``
files and memory-mapped, as a dataset's sizes are mapped from its ``.idx``. Each setting runs in a
fresh process that plans epoch 1 for 8 ranks into an empty plan cache (the order goes to disk, as
in training) and reports wall seconds, the process's peak RSS (VmHWM) and its RSS once the sizes
are mapped and touched (the part of the peak that is the corpus's lengths, not the plan), and the
padding of the plan.

    python benchmarks/bench_blocks.py [--pairs 100000000] [--block-sizes none,16777216,4194304] [--plan-threads 1,2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_elastic import lengths

CHILD = r"""
import json, sys, tempfile, time
import numpy as np
from tokenmill.batching import BatchConfig
from tokenmill.batching.costs import Sizes
from tokenmill.batching.plan import Planner

def status(key):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith(key))

folder, block, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
src = np.load(f"{folder}/src.npy", mmap_mode="r")
tgt = np.load(f"{folder}/tgt.npy", mmap_mode="r")
touched = int(src.sum(dtype=np.int64) + tgt.sum(dtype=np.int64))  # the lengths resident, as a loader has them
base = status("VmRSS:")
size = None if block == "none" else int(block)
config = BatchConfig(max_tokens=4096, required_batch_size_multiple=8, block_size=size, plan_threads=threads)
with tempfile.TemporaryDirectory(dir=folder) as cache:
    began = time.perf_counter()
    plan = Planner(Sizes(src, tgt), config, world_size=8, data_fingerprint="bench", cache=cache).plan(1)
    seconds = time.perf_counter() - began
    print(json.dumps({"block_size": block, "threads": threads, "seconds": seconds, "peak": status("VmHWM:"),
                      "base": base,
                      "padding": plan.stats.padding_fraction, "batches": plan.stats.num_batches,
                      "blocks": plan.stats.extra.get("blocks", 1), "samples": plan.stats.num_samples,
                      "touched": touched > 0}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=100_000_000)
    parser.add_argument("--block-sizes", default="none,16777216,4194304")
    parser.add_argument("--plan-threads", default="1", help="BatchConfig.plan_threads values for each block size")
    parser.add_argument("--workdir", type=Path, default=None, help="where the lengths are kept (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.workdir or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / f"pairs-{args.pairs}").exists():
            src, tgt = lengths(args.pairs, 1)
            np.save(folder / "src.npy", src)
            np.save(folder / "tgt.npy", tgt)
            del src, tgt
            (folder / f"pairs-{args.pairs}").touch()
        print(f"{args.pairs:,} pairs, max_tokens 4096, 8 ranks, plan cache on disk")
        print(f"{'block_size':>12} {'threads':>7} {'blocks':>6} {'seconds':>8} {'peak RSS':>10} "
              f"{'peak - lengths':>15} {'padding':>8}")
        settings = [(b, t) for b in args.block_sizes.split(",") for t in args.plan_threads.split(",")]
        for block, threads in settings:
            began = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", CHILD, str(folder), block, threads], capture_output=True,
                                 text=True)
            if out.returncode != 0:
                print(out.stderr[-2000:])
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{block:>12} {threads:>7} {r['blocks']:>6} {r['seconds']:>8.1f} {r['peak'] / 2**30:>8.2f} GB "
                  f"{(r['peak'] - r['base']) / 2**30:>12.2f} GB {100 * r['padding']:>7.2f}%"
                  f"   ({time.perf_counter() - began:.0f} s with start-up; {r['batches']:,} batches)")


if __name__ == "__main__":
    main()
