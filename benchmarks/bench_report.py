"""``report.html`` as ``tokenmill prepare`` writes it at its end: wall and CPU seconds of
``write_report`` in a process that already imported what prepare imports, this tree against another.

Each measurement is a fresh ``python`` process (``PYTHONPATH=SRC`` for each tree) that imports
``tokenmill.commands.prepare`` (prepare has it loaded when its report starts), then times
``tokenmill.report.write_report(DIR, OUT)``: wall seconds, and CPU seconds of the process and of the
forked children it waited for (``getrusage``). The trees alternate in every round, the order flipping
between rounds; medians are printed with the machine's load. The pages of the two trees are compared
in size only (their charts may differ in layout; the numbers are the tests' business).

    python benchmarks/bench_report.py DIR --baseline /tmp/base/src --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
import tokenmill.commands.prepare  # what prepare has loaded when its report starts
from tokenmill.report import write_report

def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

c0, w0 = cpu(), time.perf_counter()
path, report = write_report(sys.argv[1], sys.argv[2])
print(json.dumps({"wall": time.perf_counter() - w0, "cpu": cpu() - c0, "bytes": path.stat().st_size,
                  "timings": report["timings"]}))
"""


def measure(src: str, directory: str, out: Path) -> dict:
    """One ``write_report`` in a fresh process with ``PYTHONPATH=src``."""
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run([sys.executable, "-c", CHILD, directory, str(out)], env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", help="a directory tokenmill prepare wrote")
    parser.add_argument("--baseline", required=True, help="the src folder of the tree to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    trees = {"baseline": args.baseline, "this tree": here}
    rows: dict[str, list[dict]] = {name: [] for name in trees}
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(trees)[::-1]
            loads.append(load())
            for name in order:
                result = measure(trees[name], args.directory, Path(tmp) / f"{r}-{len(rows[name])}.html")
                rows[name].append(result)
                print(f"round {r + 1} {name}: wall {result['wall']:.2f} s, CPU {result['cpu']:.2f} s, "
                      f"{result['bytes'] / 1024:.0f} KiB, load {load()}", flush=True)
    print(f"\nload at the rounds' starts: {', '.join(loads)}")
    print("\n| tree | wall s (median) | CPU s (median) | wall per round | CPU per round |")
    print("|---|---:|---:|---|---|")
    for name, results in rows.items():
        walls, cpus = [x["wall"] for x in results], [x["cpu"] for x in results]
        print(f"| {name} | {statistics.median(walls):.2f} | {statistics.median(cpus):.2f} | "
              f"{', '.join(f'{w:.2f}' for w in walls)} | {', '.join(f'{c:.2f}' for c in cpus)} |")


if __name__ == "__main__":
    main()
