"""Batches/s and tokens/s of the tf.data and Grain adapters against the numpy iterator, on one plan.

The data: ``--pairs`` synthetic en-de pairs (lognormal lengths, uint16 ids), written as a prepared
directory. One rank, ``max_tokens`` per batch, the plans of every epoch cached beforehand, so that
only collating and the framework's own machinery are timed. Each way of loading runs in its own
process (TensorFlow and Grain never share one), takes one warm-up epoch (imports excluded; graph
building, worker start-up and the first batches fall in it), then ``--repeats`` timed epochs of
the same stream; the figure is the median epoch. Every way yields the same batches (the tests check
that); the batch counts printed let you see it here too.

Ways: the numpy ``BatchIterator`` (fairseq dicts, and OpenNMT-tf's features); ``TFBatches.dataset()``
with ``from_generator`` (fairseq, opennmt) and with a parallel ``map`` (``num_parallel_calls=AUTOTUNE``);
``for batch in TFBatches`` (eager, tracking the position for exact resume); ``grain.DataLoader``
over ``GrainBatches`` in the main process (our 2 reader threads, and Grain's default 16) and with 2
worker processes.

    python benchmarks/bench_tf_grain.py                    # 1M pairs, a few minutes on 2 cores
    python benchmarks/bench_tf_grain.py --pairs 100000 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import tokenmill
from tokenmill.store import IndexedWriter
from tokenmill.store.manifest import write_manifest

VOCAB = 32000
WAYS = {
    "numpy BatchIterator, fairseq": "numpy-fairseq",
    "numpy BatchIterator, opennmt": "numpy-opennmt",
    "tf.data from_generator, fairseq": "tf-fairseq",
    "tf.data from_generator, opennmt": "tf-opennmt",
    "tf.data parallel map (AUTOTUNE), fairseq": "tf-map",
    "tf eager `for batch in TFBatches` (tracked)": "tf-eager",
    "grain.DataLoader, 0 workers (2 reader threads: our default)": "grain-0",
    "grain.DataLoader, 0 workers (Grain's default 16 reader threads)": "grain-0-16",
    "grain.DataLoader, 2 workers": "grain-2",
}


def make_directory(path: Path, pairs: int, seed: int = 1) -> None:
    """A prepared en-de directory of ``pairs`` random pairs."""
    rng = np.random.default_rng(seed)
    src_len = np.clip(rng.lognormal(3.0, 0.6, pairs).astype(np.int64), 1, 250)
    tgt_len = np.clip((src_len * rng.lognormal(0.1, 0.2, pairs)).astype(np.int64), 1, 250)
    path.mkdir(parents=True)
    for lang, lengths in (("en", src_len), ("de", tgt_len)):
        tokens = rng.integers(4, VOCAB, int(lengths.sum()), dtype=np.uint16)
        tokens[np.cumsum(lengths) - 1] = 2  # </s> ends every item
        with IndexedWriter(path / f"train.en-de.{lang}", vocab_size=VOCAB) as writer:
            writer.add_items(tokens, lengths)
        (path / f"dict.{lang}.txt").write_text("".join(f"w{i} 1\n" for i in range(4, VOCAB)), encoding="utf-8")
    write_manifest(path, settings={"source_lang": "en", "target_lang": "de"})


def stream(way: str, data: Path, config: tokenmill.BatchConfig, plans: Path, epochs: int):
    """The batches of ``epochs`` epochs, the way ``way`` serves them."""
    collate = "opennmt" if way.endswith("opennmt") else "fairseq"
    batches = tokenmill.batches(tokenmill.open(data), config, collate=collate, cache=plans, infinite=True)
    if way.startswith("numpy"):
        return batches
    if way.startswith("tf"):
        from tokenmill.loader.tf import TFBatches

        tf_batches = TFBatches(batches, collate, num_parallel_calls=-1 if way == "tf-map" else None)
        return tf_batches if way == "tf-eager" else tf_batches.dataset()
    import grain.python as grain

    from tokenmill.loader.grain import GrainBatches

    batches.infinite = False
    read = grain.ReadOptions() if way == "grain-0-16" else None
    return GrainBatches(batches, epochs=epochs).loader(worker_count=int(way.split("-")[1]), read_options=read)


def child(way: str, data: Path, config: tokenmill.BatchConfig, plans: Path, repeats: int) -> None:
    steps = tokenmill.batches(tokenmill.open(data), config, cache=plans).num_steps(1)
    batches = stream(way, data, config, plans, repeats + 1)
    times, count = [], 0
    started = time.perf_counter()
    for _ in batches:
        count += 1
        if count % steps == 0:
            now = time.perf_counter()
            times.append(now - started)
            started = now
            if len(times) == repeats + 1:
                break
    print("RESULT:" + json.dumps({"epochs": times[1:], "steps": steps, "batches": count}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", default=None, help="where the data and caches go (default: a temp dir)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    config = tokenmill.BatchConfig(max_tokens=args.max_tokens, seed=1)
    if args.child:
        work = Path(args.workdir)
        child(args.child, work / "data-bin", config, work / "plans", args.repeats)
        return

    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-tf-grain-"))
    data, plans = work / "data-bin", work / "plans"
    if data.exists():
        shutil.rmtree(data)
    make_directory(data, args.pairs)
    dataset = tokenmill.open(data)
    warm = tokenmill.batches(dataset, config, cache=plans)
    tokens = []
    for epoch in range(1, args.repeats + 3):  # every epoch a child reads, planned and cached now
        plan = warm.plan(epoch)
        ids = np.concatenate([np.asarray(plan.indices(s, 0)) for s in range(plan.num_steps)])
        tokens.append(int(dataset.src_sizes[ids].sum() + dataset.tgt_sizes[ids].sum()))
    epoch_tokens = statistics.median(tokens)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONWARNINGS="ignore")
    rows = []
    for label, way in WAYS.items():
        command = [sys.executable, __file__, "--child", way, "--workdir", str(work), "--repeats", str(args.repeats),
                   "--max-tokens", str(args.max_tokens)]
        out = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT:")), None)
        if line is None:
            print(f"{label}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
            continue
        result = json.loads(line[len("RESULT:"):])
        seconds = statistics.median(result["epochs"])
        rows.append((label, result["steps"], seconds))
    base = rows[0][2] if rows else 1.0
    print(f"{args.pairs:,} pairs, {epoch_tokens / 1e6:.1f}M tokens per epoch (both sides), max_tokens "
          f"{args.max_tokens}, 1 rank; median of {args.repeats} epochs after a warm-up epoch\n")
    print("| way | batches/epoch | s/epoch | batches/s | tokens/s | vs numpy fairseq |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, steps, seconds in rows:
        print(f"| {label} | {steps:,} | {seconds:.2f} | {steps / seconds:,.0f} | {epoch_tokens / seconds / 1e6:.2f}M "
              f"| {base / seconds:.2f}x |")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
