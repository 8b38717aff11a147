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
import subprocess
import sys
import tempfile
from pathlib import Path

from _ab import alternate, medians

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


def show(result: dict) -> str:
    return f"wall {result['wall']:.2f} s, CPU {result['cpu']:.2f} s, {result['bytes'] / 1024:.0f} KiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", help="a directory tokenmill prepare wrote")
    parser.add_argument("--baseline", required=True, help="the src folder of the tree to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    trees = {"baseline": args.baseline, "this tree": here}
    with tempfile.TemporaryDirectory() as tmp:
        def run(name: str, src: str, r: int) -> dict:
            return measure(src, args.directory, Path(tmp) / f"{r}-{list(trees).index(name)}.html")

        rows, loads = alternate(trees, args.rounds, run, show)
    print(f"\nload at the rounds' starts: {', '.join(loads)}")
    print("\n| tree | wall s (median) | CPU s (median) | wall per round | CPU per round |")
    print("|---|---:|---:|---|---|")
    for name, results in rows.items():
        med = medians(results, ("wall", "cpu"))
        walls = ", ".join(format(x["wall"], ".2f") for x in results)
        cpus = ", ".join(format(x["cpu"], ".2f") for x in results)
        print(f"| {name} | {med['wall']:.2f} | {med['cpu']:.2f} | {walls} | {cpus} |")


if __name__ == "__main__":
    main()
