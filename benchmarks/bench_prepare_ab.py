"""`tokenmill prepare` of this tree against another commit's, same run: fresh processes, alternating trees in
every round (the order flips between rounds), medians of wall seconds and of CPU seconds (the prepare process
and its workers: steadier than wall time on a loaded machine).

The corpus and the SentencePiece model are bench_prepare.py's (synthetic en-de, a 32k unigram model given
with --spm-model, cleaning on, --workers 2); each timed run writes a fresh --destdir.

    python benchmarks/bench_prepare_ab.py --base a8dace1 --pairs 200000 --rounds 3

``--base-src DIR`` compares with a source tree on disk instead of a commit (e.g. this tree with a local,
uncommitted patch that turns one feature off, to price that feature alone).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ab import alternate, medians
from bench_prepare import DATA, make_corpus, spm_model

ROOT = Path(__file__).resolve().parents[1]


def base_tree(commit: str, into: Path) -> Path:
    """``src`` of ``commit`` (git archive of this checkout's history) under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


def child_cpu() -> float:
    """User + system CPU seconds of every finished child process (and theirs) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="a8dace1", help="the commit to compare with (default: %(default)s)")
    parser.add_argument("--base-src", default=None, help="a source tree (its src/ folder) to compare with instead")
    parser.add_argument("--pairs", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--vocab", type=int, default=32000)
    args = parser.parse_args()
    corpus = make_corpus(args.pairs)
    model = spm_model(make_corpus(min(args.pairs, 1_000_000)), args.vocab)
    with tempfile.TemporaryDirectory() as folder:
        base = args.base_src or args.base
        trees = {base: args.base_src or str(base_tree(args.base, Path(folder))), "this tree": str(ROOT / "src")}

        def run(name: str, src: str, round_: int) -> dict:
            out = DATA / "runs" / "ab" / f"{name.replace(' ', '-')}-{round_}"
            shutil.rmtree(out, ignore_errors=True)
            cmd = [sys.executable, "-m", "tokenmill", "prepare", "-q", "--source-lang", "en", "--target-lang",
                   "de", "--trainpref", str(corpus / "train"), "--destdir", str(out), "--spm-model", str(model),
                   "--joined-dictionary", "--workers", "2"]
            start, cpu = time.perf_counter(), child_cpu()
            done = subprocess.run(cmd, capture_output=True, text=True, env={"PYTHONPATH": src, "PATH": "/usr/bin"})
            seconds, cpu = time.perf_counter() - start, child_cpu() - cpu
            if done.returncode != 0:
                raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
            shutil.rmtree(out, ignore_errors=True)
            return {"seconds": seconds, "cpu": cpu}

        rows, loads = alternate(trees, args.rounds, run, lambda r: f"{r['seconds']:.2f}s wall, {r['cpu']:.2f}s CPU")
    result = {name: medians(found, ("seconds", "cpu")) for name, found in rows.items()}
    ours, this = result[base], result["this tree"]
    print(f"{args.pairs:,} pairs, median of {args.rounds} rounds (loads {', '.join(loads)}): "
          f"{base} {ours['seconds']:.2f}s wall / {ours['cpu']:.2f}s CPU, this tree {this['seconds']:.2f}s wall / "
          f"{this['cpu']:.2f}s CPU (this tree / base: wall {this['seconds'] / ours['seconds']:.3f}, "
          f"CPU {this['cpu'] / ours['cpu']:.3f})")


if __name__ == "__main__":
    main()
