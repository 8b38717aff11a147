"""Language ID: lines/s on one core for heliport and py3langid on the same lines, and their accuracy.

Two sets of lines, each cycled to ``--lines``: the UDHR sentences gflanguages ships (tests/text/lid/udhr.py:
one script per language, lines of 20+ characters, 134 characters on average) and the short sentences of
examples/sample (train.en and train.zh, 25 characters on average). Each backend runs as the ``langid``
filter step runs it: one call per chunk of ``--chunk`` lines (:mod:`tokenmill.text.lid`). py3langid's own
per-line ``classify`` is timed on the first ``--peer-lines`` lines, as the peer of our vectorized py3langid
backend. Accuracy: the mean over languages of the share of a language's UDHR lines given an accepted label,
over the languages each backend knows and over those both know. BLAS and OpenMP are held to one thread, and
the speed is lines per CPU second of this process (the per-core figure on a shared machine).

    python benchmarks/bench_lid.py --lines 60000
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from itertools import cycle, islice  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.text.lid.udhr import accuracy, udhr_samples  # noqa: E402
from tokenmill.text.lid import make_backend  # noqa: E402


def timed(function, lines: list[str], chunk: int, reps: int) -> tuple[float, float]:
    """(lines per CPU second, lines per wall second) of the best of ``reps`` passes over ``lines`` in chunks of
    ``chunk``. CPU seconds of this process (one thread) are the per-core figure on a shared machine, where
    wall time also counts the other jobs' turns."""
    cpu = wall = float("inf")
    for _ in range(reps):
        started, started_cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(lines), chunk):
            function(lines[start : start + chunk])
        cpu = min(cpu, time.process_time() - started_cpu)
        wall = min(wall, time.perf_counter() - started)
    return len(lines) / cpu, len(lines) / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=60_000, help="lines per backend (the sample, cycled)")
    parser.add_argument("--chunk", type=int, default=10_000, help="lines per call, as a filter chunk")
    parser.add_argument("--peer-lines", type=int, default=5_000, help="lines for py3langid's per-line classify")
    parser.add_argument("--reps", type=int, default=3, help="passes per backend; the best is shown")
    args = parser.parse_args()

    samples = udhr_samples()
    sample = [line for s in samples for line in s.lines]
    short = [line for lang in ("en", "zh") for line in
             (REPO / "examples" / "sample" / f"train.{lang}").read_text(encoding="utf-8").splitlines()]
    workloads = {"UDHR": list(islice(cycle(sample), args.lines)), "sample": list(islice(cycle(short), args.lines))}
    for what, lines in workloads.items():
        chars = np.mean([len(line) for line in lines])
        print(f"{what}: {len(lines)} lines timed, {chars:.0f} chars/line")
    print(f"UDHR: {len(samples)} languages, {len(sample)} distinct lines; sample: examples/sample/train.en + .zh")
    rows, scores = [], {}
    for name in ("heliport", "py3langid"):
        started = time.process_time()
        backend = make_backend(name)
        backend.identify(sample[:10])
        load = time.process_time() - started
        speeds = [timed(backend.identify, lines, args.chunk, args.reps) for lines in workloads.values()]
        scores[name] = accuracy(backend, samples)
        rows.append((f"tokenmill `{name}` backend", speeds, load))
    import py3langid  # the peer of our vectorized py3langid backend: its own per-line classify

    py3langid.classify("warm up")
    per_line = [timed(lambda c: [py3langid.classify(x) for x in c], lines[: args.peer_lines], args.chunk, 1)
                for lines in workloads.values()]
    rows.append(("py3langid's own `classify`, per line", per_line, float("nan")))
    print("\n| backend | UDHR lines per CPU s (one core) | sample lines per CPU s | the same per wall s | "
          "model load, CPU s |")
    print("|---|---|---|---|---|")
    for what, ((udhr_cpu, udhr_wall), (short_cpu, short_wall)), load in rows:
        print(f"| {what} | {udhr_cpu:,.0f} | {short_cpu:,.0f} | {udhr_wall:,.0f} / {short_wall:,.0f} | {load:.2f} |")
    both = sorted(set(scores["heliport"]) & set(scores["py3langid"]))
    print(f"\n| backend | languages known (of the sample) | mean accuracy | on the {len(both)} both know |")
    print("|---|---|---|---|")
    for name, score in scores.items():
        mean = np.mean([share for share, _ in score.values()])
        common = np.mean([score[label][0] for label in both])
        print(f"| {name} | {len(score)} | {mean:.1%} | {common:.1%} |")


if __name__ == "__main__":
    main()
