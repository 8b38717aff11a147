"""Start-up cost of the package and the command line: median wall and CPU time of fresh processes.

    python benchmarks/bench_startup.py [--rounds 5] [--src src]

Prints, for ``tokenmill --version``, ``tokenmill --help``, ``import tokenmill``,
``import tokenmill.store.reader`` and a bare ``python -c pass`` (the interpreter's own floor), the median
wall and CPU (user + system) time of ``--rounds`` runs (on a shared, loaded machine compare the CPU
times), and how many tokenmill modules ``import tokenmill.store.reader`` loads
(``python -X importtime``). Run it from a checkout; ``--src`` puts that source tree first on the path.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass (floor)": ["-c", "pass"],
    "import tokenmill": ["-c", "import tokenmill"],
    "import tokenmill.store.reader": ["-c", "import tokenmill.store.reader"],
    "tokenmill --version": ["-c", "from tokenmill.cli import main; main(['--version'])"],
    "tokenmill --help": ["-c", "from tokenmill.cli import main; main(['--help'])"],
}


def median_seconds(args: list[str], rounds: int, env: dict[str, str]) -> tuple[float, float]:
    """(median wall time, median CPU time: user + system) of ``rounds`` fresh ``python args`` processes (output
    discarded). The CPU time hardly moves with the machine's load; the wall time does."""
    walls, cpus = [], []
    for _ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def tokenmill_modules(module: str, env: dict[str, str]) -> int:
    """How many ``tokenmill`` modules importing ``module`` loads (from ``-X importtime``)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], env=env,
                          capture_output=True, text=True, check=True)
    names = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    return sum(1 for name in names if name == "tokenmill" or name.startswith("tokenmill."))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--src", default="src", help="source tree put first on PYTHONPATH")
    options = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.path.abspath(options.src)}
    count = tokenmill_modules("tokenmill.store.reader", env)
    print(f"tokenmill modules loaded by import tokenmill.store.reader: {count}")
    print(f"{'':32s} {'wall':>8s} {'cpu':>8s}   (medians of {options.rounds})")
    for name, args in CASES.items():
        wall, cpu = median_seconds(args, options.rounds, env)
        print(f"{name:32s} {wall:7.3f}s {cpu:7.3f}s")


if __name__ == "__main__":
    main()
