"""tokenmill's multilingual sampling plan against fairseq's SampledMultiDataset, side by side in one run.

The workload of issue 5: D language directions whose sizes follow a long-tailed (lognormal, seeded)
distribution, temperature T = 5, fairseq's default virtual size (capped at 1.5 x the total). For
each scale (by default 20, 50, 100 and 200 directions at 0.5M pairs per direction on average, so
200 directions hold 100M pairs) it measures, in one worker process per library (imports excluded):

* build time of one epoch's plan: tokenmill's ``SamplingPlan.build`` + ``sample(epoch)`` (global
  ids of every sampled item); fairseq's ``temperature_sampling`` + ``SampledMultiDataset(...)``
  construction, which draws epoch 1's indices, and ``set_epoch(e)`` for the following epochs. The
  fake fairseq datasets only have ``__len__`` (and a zero-memory ``sizes``), so only the sampling
  plan is measured. Median over ``--repeats`` epochs.
* peak memory during one epoch's build, traced by ``tracemalloc`` (numpy reports its buffers to it),
  over the number of sampled items: bytes per sampled item.

Usage::

    python benchmarks/bench_sampling.py                       # 20/50/100/200 directions, ~3 minutes
    python benchmarks/bench_sampling.py --directions 200 --repeats 5
    python benchmarks/bench_sampling.py --quick               # 20 and 50 directions

fairseq's interpreter: ``$TOKENMILL_FAIRSEQ_PYTHON`` or the ``.peers/fairseq`` venv; without it only
tokenmill's figures are printed. A fairseq scale that runs past ``--timeout`` seconds is reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peer import REPO, how_to_get, peer_python

TEMPERATURE = 5.0
SEED = 1
PER_DIRECTION = 500_000


def direction_sizes(directions: int, total: int, seed: int = SEED) -> np.ndarray:
    """Long-tailed sizes (lognormal, sigma 2) scaled to ``total``, at least 1,000 pairs each."""
    raw = np.random.default_rng(seed).lognormal(0.0, 2.0, directions)
    sizes = np.maximum((raw / raw.sum() * total).astype(np.int64), 1_000)
    sizes[np.argmax(sizes)] += total - int(sizes.sum())  # exact total
    return sizes


# ------------------------------------------------------------------------------------ workers


def tokenmill_epoch(sizes: np.ndarray, epoch: int) -> int:
    from tokenmill.data.sampling import SamplingConfig, SamplingPlan

    names = [f"d{i:03d}" for i in range(len(sizes))]
    plan = SamplingPlan.build(names, sizes, SamplingConfig(temperature=TEMPERATURE, seed=SEED))
    return len(plan.sample(epoch))


class FairseqSide:
    """fairseq's SampledMultiDataset over fake datasets: one object, a new epoch per call."""

    def __init__(self, sizes: np.ndarray) -> None:
        import logging

        logging.disable(logging.WARNING)
        from fairseq.data.multilingual.sampled_multi_dataset import SampledMultiDataset
        from fairseq.data.multilingual.sampling_method import temperature_sampling

        class Fake:
            def __init__(self, n: int) -> None:
                self.n = n
                self.sizes = np.broadcast_to(np.array([[20, 22]], dtype=np.int32), (n, 2))

            def __len__(self) -> int:
                return self.n

        self.make = SampledMultiDataset
        self.ratios = temperature_sampling
        self.datasets = [Fake(int(n)) for n in sizes]
        self.sizes = [int(n) for n in sizes]
        self.dataset = None

    def epoch(self, epoch: int) -> int:
        if self.dataset is None or epoch == 1:
            self.dataset = None
            ratios = self.ratios(self.sizes, TEMPERATURE)
            self.dataset = self.make(self.datasets, sampling_ratios=ratios, seed=SEED, epoch=epoch)
        else:
            self.dataset.set_epoch(epoch)
        return len(self.dataset)


def worker(side: str, sizes_file: str, repeats: int) -> None:
    sizes = np.load(sizes_file)
    if side == "fairseq":
        run = FairseqSide(sizes).epoch
    else:
        run = lambda epoch: tokenmill_epoch(sizes, epoch)  # noqa: E731
    times = []
    items = 0
    for epoch in range(1, repeats + 1):
        start = time.perf_counter()
        items = run(epoch)
        times.append(time.perf_counter() - start)
    if side == "fairseq":
        run = FairseqSide(sizes).epoch  # a fresh object: its previous epoch's arrays are not counted
    tracemalloc.start()
    items = run(1)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print("RESULT:" + json.dumps({"times": times, "items": items, "peak": peak}), flush=True)


# ------------------------------------------------------------------------------------ driver


def run_worker(python: str, side: str, sizes_file: str, repeats: int, timeout: float) -> dict | None:
    env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    command = [python, str(Path(__file__).resolve()), "--worker", side, "--sizes-file", sizes_file]
    try:
        proc = subprocess.run(
            [*command, "--repeats", str(repeats)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=REPO,
        )
    except subprocess.TimeoutExpired:
        return None
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT:"):
            return json.loads(line[len("RESULT:") :])
    raise RuntimeError(f"{side} worker failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--directions", type=int, action="append", help="scales to run (repeatable)")
    parser.add_argument("--per-direction", type=int, default=PER_DIRECTION, help="mean pairs per direction")
    parser.add_argument("--repeats", type=int, default=3, help="epochs timed per library and scale")
    parser.add_argument("--timeout", type=float, default=240, help="seconds before a worker is given up")
    parser.add_argument("--quick", action="store_true", help="20 and 50 directions only")
    parser.add_argument("--json", help="write all raw figures here")
    parser.add_argument("--worker", choices=["tokenmill", "fairseq"], help=argparse.SUPPRESS)
    parser.add_argument("--sizes-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.sizes_file, args.repeats)
        return

    scales = args.directions or ([20, 50] if args.quick else [20, 50, 100, 200])
    fairseq = peer_python("fairseq")
    if fairseq is None:
        print(f"fairseq not found ({how_to_get('fairseq')}): tokenmill only", file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for directions in scales:
            sizes = direction_sizes(directions, directions * args.per_direction)
            sizes_file = os.path.join(tmp, f"sizes{directions}.npy")
            np.save(sizes_file, sizes)
            row = {"directions": directions, "pairs": int(sizes.sum()), "largest": int(sizes.max())}
            row["smallest"] = int(sizes.min())
            row["tokenmill"] = run_worker(sys.executable, "tokenmill", sizes_file, args.repeats, args.timeout)
            if fairseq is not None:
                row["fairseq"] = run_worker(fairseq, "fairseq", sizes_file, args.repeats, args.timeout)
            rows.append(row)
            print(f"{directions} directions done", file=sys.stderr, flush=True)

    print(f"\nT = {TEMPERATURE:g}, default virtual size (cap 1.5 x pairs), seed {SEED}; lognormal sizes (sigma 2)\n")
    print(
        "| directions | pairs | largest / smallest | sampled items | tokenmill s (median) | fairseq s (median) "
        "| speed-up | tokenmill B/item | fairseq B/item |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        ours, theirs = row["tokenmill"], row.get("fairseq")
        ours_s = statistics.median(ours["times"])
        cells = [
            f"{row['directions']}",
            f"{row['pairs']:,}",
            f"{row['largest']:,} / {row['smallest']:,}",
            f"{ours['items']:,}",
            f"{ours_s:.2f}",
        ]
        if theirs is None:
            cells += ["timeout" if fairseq else "-", "-", f"{ours['peak'] / ours['items']:.1f}", "-"]
        else:
            theirs_s = statistics.median(theirs["times"])
            assert theirs["items"] == ours["items"], "both sides must sample the same virtual size"
            cells += [
                f"{theirs_s:.2f}",
                f"{theirs_s / ours_s:.1f}x",
                f"{ours['peak'] / ours['items']:.1f}",
                f"{theirs['peak'] / theirs['items']:.1f}",
            ]
        print("| " + " | ".join(cells) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
