"""Start-up cost of the package and the command line: median wall time of fresh processes.

    python benchmarks/bench_startup.py [--rounds 5] [--src src]

Prints, for ``tokenmill --version``, ``tokenmill --help``, ``import tokenmill``,
``import tokenmill.store.reader`` and a bare ``python -c pass`` (the interpreter's own floor), the median
of ``--rounds`` runs, and how many tokenmill modules ``import tokenmill.store.reader`` loads
(``python -X importtime``). Run it from a checkout; ``--src`` puts that source tree first on the path.
"""

from __future__ import annotations

import argparse
import os
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


def median_seconds(args: list[str], rounds: int, env: dict[str, str]) -> float:
    """The median wall time of ``rounds`` fresh ``python args`` processes (output discarded)."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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
    print(f"tokenmill modules loaded by import tokenmill.store.reader: {tokenmill_modules('tokenmill.store.reader', env)}")
    for name, args in CASES.items():
        print(f"{name:32s} {median_seconds(args, options.rounds, env):.3f} s (median of {options.rounds})")


if __name__ == "__main__":
    main()
