"""Provenance maps and ``tokenmill.trace``: bytes per item on disk, and the latency of tracing one step and
one source line on a large plan (the plan cached, as a user re-running trace has it).

The directory is made directly (stores of ``--pairs`` pairs with drawn lengths, as tests/batching/corpus.py
writes them) with maps for a split of ``--pairs`` kept items out of ``pairs / keep`` input lines (drops drawn at
random, the worst case for the run encoding). Nothing is replayed: a step is looked up in the plan, a line is
found by inverting the plan's order.

    python benchmarks/bench_provenance.py --pairs 2000000
    python benchmarks/bench_provenance.py --pairs 2000000 --pack-length 128   # pairs packed into rows

prepare's speed with and without the maps (the same run, alternating trees): bench_prepare_ab.py against the
commit before the maps, e.g. ``python benchmarks/bench_prepare_ab.py --base b2a7cf7 --pairs 200000``, or against
this tree with a local patch that skips them (``--base-src``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.batching.corpus import make_pair_dir  # noqa: E402
from tokenmill.batching.config import BatchConfig  # noqa: E402
from tokenmill.batching.packed_pairs import PackConfig  # noqa: E402
from tokenmill.loader.trace import TraceSettings, served_at, step_rows, trace_iterator  # noqa: E402
from tokenmill.store.provenance import InputTable, encode_numbers, write_provenance  # noqa: E402


def sizes(n: int, rng: np.random.Generator) -> list[str]:
    """Bytes per stored item of each encoding for a few drop rates."""
    rows = []
    for kept in (1.0, 0.99, 0.9, 0.7):
        lines = int(n / kept)
        numbers = np.sort(rng.choice(lines, size=n, replace=False)) if kept < 1 else np.arange(n)
        fields, body = encode_numbers(numbers)
        rows.append(f"| {kept:.0%} of {lines:,} lines kept | {fields['encoding']} | {len(body) / n:.4f} B |")
    return rows


def timed(function, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=2_000_000)
    parser.add_argument("--keep", type=float, default=0.9, help="share of input lines kept (drops at random)")
    parser.add_argument("--world-size", type=int, default=8)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--pack-length", type=int, default=None, help="trace pairs packed into rows of this length")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| items kept | encoding | bytes per item |\n|---|---|---|")
    print("\n".join(sizes(min(args.pairs, 2_000_000), rng)))
    with tempfile.TemporaryDirectory() as folder:
        root = make_pair_dir(Path(folder) / "data", args.pairs, seed=1)
        lines = int(args.pairs / args.keep)
        numbers = np.sort(rng.choice(lines, size=args.pairs, replace=False))
        table = InputTable([["train.en", "train.de"]], [lines])
        for lang in ("en", "de"):
            path = write_provenance(root / f"train.en-de.{lang}.prov", numbers, table)
        print(f"\nmap of {args.pairs:,} pairs: {path.stat().st_size:,} bytes ({path.stat().st_size / args.pairs:.3f} "
              "B per item)")
        pack = None if args.pack_length is None else PackConfig(max_length=args.pack_length, max_tokens=4096)
        settings = TraceSettings(config=BatchConfig(max_tokens=4096), world_size=args.world_size,
                                 cache=Path(folder) / "cache", pack=pack)
        start = time.perf_counter()
        iterator = trace_iterator(str(root), settings)
        steps = iterator.num_steps(1)
        print(f"plan of epoch 1 computed in {time.perf_counter() - start:.2f} s: {steps:,} steps x {args.world_size} "
              "ranks")
        step = steps // 2
        row = step_rows(iterator, 1, step, 3, text=False)[0]

        def fresh():  # what a new `tokenmill trace` process does: open the dataset, map the cached plan
            return trace_iterator(str(root), settings)

        one_step = timed(lambda: step_rows(fresh(), 1, step, 3, text=False), args.reps)
        one_line = timed(lambda: served_at(fresh(), "train.en", row.line, [1]), args.reps)
        found = served_at(fresh(), "train.en", row.line, [1])
        assert [(s.step, s.rank, s.row, s.position) for s in found] == [(step, 3, row.row, row.position)]
        unit = "rows" if pack is None else "pairs in packed rows"
        print(f"trace of one step (rank 3, {len(step_rows(iterator, 1, step, 3, text=False))} {unit}), plan cached: "
              f"{one_step:.3f} s; of one source line: {one_line:.3f} s (median of {args.reps}; dataset opened "
              "each time)")


if __name__ == "__main__":
    main()
