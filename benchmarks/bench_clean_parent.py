"""The clean stage of ``tokenmill prepare`` alone: wall seconds, the parent's user and system CPU, the workers'
CPU, this tree against another, with the outputs of both compared.

Each measurement is a fresh ``python`` process (``PYTHONPATH=SRC`` for each tree) that runs only
``Pipeline.clean()`` on the pairs ``bench_tokenizers.py --pairs N`` wrote (``train.en``/``train.zh``, its
SentencePiece model, ``--workers`` processes, joined dictionary), as prepare runs it. The parent's CPU
(``getrusage``, user + system, all its threads) is shown without the CPU its thread spends inside the
cleaned files' ``write`` calls (timed with ``thread_time`` around each call: copying into the page cache, a
cost of the machine's memory rather than of the code); the user and system shares are shown too. The trees
alternate in every round, the order flipping between rounds (``_ab.py``); medians are printed with the
machine's load. Every run's cleaned files, drop sample and clean counters are hashed: they must be
equal across trees and rounds, and, with ``--one-worker``, equal to one ``--workers 1`` run of this tree.

    python benchmarks/bench_clean_parent.py --pairs 1780000 --baseline /tmp/base/src --rounds 3
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
import contextlib, hashlib, json, resource, sys, time
from pathlib import Path
from tokenmill.prepare import build_config
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.run.runner import exclusive
from tokenmill.prepare.stages import clean as module
from tokenmill.prepare.stages import clean_stages

writing = [0.0]  # CPU seconds of this thread inside the cleaned files' write calls


class Timed:
    def __init__(self, handle):
        self.handle = handle

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def write(self, data):
        start = time.thread_time()
        try:
            return self.handle.write(data)
        finally:
            writing[0] += time.thread_time() - start


real_atomic_write = module.atomic_write


@contextlib.contextmanager
def timed_atomic_write(*args, **kwargs):
    with real_atomic_write(*args, **kwargs) as handle:
        yield Timed(handle)


module.atomic_write = timed_atomic_write

data, dest, workers = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
pairs = Path(data).name
config = build_config({"source_lang": "en", "target_lang": "zh", "destdir": str(dest), "workers": workers,
                       "trainpref": f"{data}/train", "tokenizer": "sentencepiece", "joined_dictionary": True,
                       "tokenizer_model": f"{Path(data).parent}/models-{pairs}-32000/spm.model"})
ctx = RunContext(config, progress=False)
own0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
with exclusive(ctx):
    for stage in clean_stages(config):
        stage.execute(ctx)
wall = time.perf_counter() - wall0
own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
def digest(folders, extra=b""):
    total = hashlib.sha256(extra)
    for path in sorted((dest / ".work").rglob("*")):
        if path.is_file() and path.parts[-2] in folders:
            total.update(path.name.encode() + hashlib.sha256(path.read_bytes()).digest())
    return total.hexdigest()


stats = json.loads((dest / ".state" / "clean.train.json").read_text())["info"]
outputs = digest(("clean", "dropped"), json.dumps(stats).encode())
user, system = own.ru_utime - own0.ru_utime, own.ru_stime - own0.ru_stime
print(json.dumps({"wall": wall, "user": user, "sys": system, "parent": user + system - writing[0], "writes": writing[0],
                  "workers": kids.ru_utime + kids.ru_stime, "outputs": outputs, "kept": stats["kept"]}))
"""


def measure(src: str, data: str, dest: Path, workers: int) -> dict:
    """One clean stage in a fresh process with ``PYTHONPATH=src``."""
    env = {**os.environ, "PYTHONPATH": src}
    args = [data, str(dest), str(workers)]
    done = subprocess.run([sys.executable, "-c", CHILD, *args], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"error: the clean stage failed with PYTHONPATH={src}:\n{done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def show(result: dict) -> str:
    return (f"wall {result['wall']:.2f} s, parent {result['parent']:.2f} s + writes {result['writes']:.2f} s (user "
            f"{result['user']:.2f}, sys {result['sys']:.2f}), workers {result['workers']:.2f} s, kept "
            f"{result['kept']:,}, outputs {result['outputs'][:12]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1_780_000, help="the folder bench_tokenizers.py --pairs made")
    parser.add_argument("--baseline", required=True, help="the src folder of the tree to compare with")
    parser.add_argument("--tree", default=str(Path(__file__).resolve().parents[1] / "src"),
                        help="the src folder of the tree to measure (default: this checkout's)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--one-worker", action="store_true", help="also check the outputs against --workers 1")
    args = parser.parse_args()
    data = str(Path(__file__).resolve().parent / ".data" / "tokenizers" / str(args.pairs))
    if not Path(data, "train.en").is_file():
        sys.exit(f"error: {data}/train.en is missing: run benchmarks/bench_tokenizers.py --pairs {args.pairs} first")
    trees = {"baseline": args.baseline, "this tree": args.tree}
    with tempfile.TemporaryDirectory() as tmp:
        def run(name: str, src: str, r: int) -> dict:
            return measure(src, data, Path(tmp) / f"{r}-{list(trees).index(name)}", args.workers)

        rows, loads = alternate(trees, args.rounds, run, show)
        single = None
        if args.one_worker:
            single = measure(args.tree, data, Path(tmp) / "one", 1)
            print(f"--workers 1 (this tree): wall {single['wall']:.2f} s, outputs {single['outputs'][:12]}")
    runs = [x for results in rows.values() for x in results] + ([single] if single else [])
    print(f"\nload at the rounds' starts: {', '.join(loads)}")
    same = "identical" if len({x["outputs"] for x in runs}) == 1 else "DIFFERENT"
    print(f"cleaned files, drop sample and counters: {same} in all {len(runs)} runs")
    print("\n| tree | wall s | parent CPU s, writes excluded | writes' CPU s | parent user s | parent sys s "
          "| workers' CPU s | parent CPU per round |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    keys = ("wall", "parent", "writes", "user", "sys", "workers")
    for name, results in rows.items():
        med = medians(results, keys)
        print("| " + " | ".join([name, *(f"{med[key]:.2f}" for key in keys)]) + " | "
              + ", ".join(format(x["parent"], ".2f") for x in results) + " |")


if __name__ == "__main__":
    main()
