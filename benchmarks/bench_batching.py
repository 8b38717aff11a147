"""tokenmill's batching and loader against fairseq's, side by side in one run.

For each corpus size (real-looking lengths: lognormal, source and target correlated) and token
budget it measures, each in a fresh process (imports excluded from timings):

* time to first batch: tokenmill's first start (empty plan cache) and cached start, fairseq's
  ``TranslationTask.load_dataset`` + ``get_batch_iterator`` + ``next_epoch_itr`` + first batch;
* collated tokens per second on one core (process pinned to one CPU, one torch thread): tokenmill's
  ``BatchIterator`` (fairseq batch dicts, numpy) versus fairseq's ``EpochBatchIterator`` (its
  DataLoader with ``num_workers=0`` = ``__getitem__`` + ``collater``); real tokens, both sides;
* padding fraction (pad slots / all slots, both sides) of tokenmill's default ``lowpad`` mode,
  fairseq's own ``batch_by_size`` batches (computed in fairseq's process) and ``opennmt`` mode,
  plus batch counts;
* extra RSS per pair: resident memory after the first batch minus after imports, over the pair
  count (peak too).

Usage::

    python benchmarks/bench_batching.py --quick          # 100k pairs
    python benchmarks/bench_batching.py                  # 1M and 20M pairs (20M takes a while)
    python benchmarks/bench_batching.py --sizes 1000000 --repeats 3

fairseq's interpreter: ``$TOKENMILL_FAIRSEQ_PYTHON`` or the ``.peers/fairseq`` venv (``scripts/setup_peers.sh``);
without it only tokenmill's figures are printed. Generated corpora are kept in ``--workdir`` for reuse.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peer import peer_python

VOCAB = 32000
BUDGETS = (4096, 16384)
MULTIPLE = 8
SEED = 1


# ------------------------------------------------------------------------------------------- helpers
def memory() -> dict[str, int]:
    """This process's resident memory in bytes: ``rss`` (all), ``anon`` (private, what the process
    allocated), ``file`` (mapped file pages: page cache shared with every process mapping the same
    files, reclaimable) and ``peak`` (VmHWM, the high-water mark of ``rss``)."""
    keys = {"VmRSS:": "rss", "RssAnon:": "anon", "RssFile:": "file", "VmHWM:": "peak"}
    values = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            name = line.split(":", 1)[0] + ":"
            if name in keys:
                values[keys[name]] = int(line.split()[1]) * 1024
    return values


def one_core() -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    except (AttributeError, OSError):
        pass


def report(result: dict) -> None:
    print("RESULT:" + json.dumps(result), flush=True)


def batch_padding(src: np.ndarray, tgt: np.ndarray, order: np.ndarray, lengths: np.ndarray) -> tuple[float, int]:
    """Padding fraction of batches given as a flat order + batch lengths (both sides, per-side max)."""
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    s, t = src[order].astype(np.int64), tgt[order].astype(np.int64)
    slots = lengths * (np.maximum.reduceat(s, starts) + np.maximum.reduceat(t, starts))
    real = int(s.sum() + t.sum())
    return 1.0 - real / int(slots.sum()), len(lengths)


# ------------------------------------------------------------------------------------------- corpus
def lengths(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sentence lengths without </s>: lognormal around 20 tokens, target ~ source x lognormal ratio."""
    rng = np.random.default_rng(seed)
    src = np.clip(np.rint(rng.lognormal(3.0, 0.6, n)), 1, 250).astype(np.int32)
    ratio = rng.lognormal(0.05, 0.2, n)
    tgt = np.clip(np.rint(src * ratio + rng.normal(0, 1.0, n)), 1, 250).astype(np.int32)
    return src, tgt


def make_corpus(root: Path, n: int) -> Path:
    """A prepared directory (fairseq names, uint16, </s> appended) with ``n`` pairs; reused when present."""
    src, tgt = lengths(n, SEED)
    return write_store(root / f"pairs-{n}", src + 1, tgt + 1)


def write_store(folder: Path, src: np.ndarray, tgt: np.ndarray) -> Path:
    """A fairseq-readable data dir with these item lengths (</s> included), random ids; reused when present."""
    from tokenmill.store import IndexedWriter

    if (folder / "done").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED + 1)
    chunk = 1_000_000
    for lang, side in (("en", src), ("de", tgt)):
        with IndexedWriter(folder / f"train.en-de.{lang}", layout="fairseq", vocab_size=VOCAB) as writer:
            for begin in range(0, len(side), chunk):
                part = side[begin : begin + chunk].astype(np.int64)
                tokens = rng.integers(4, VOCAB, int(part.sum()), dtype=np.uint16)
                tokens[np.cumsum(part) - 1] = 2
                writer.add_items(tokens, part)
    words = "".join(f"w{i} 1\n" for i in range(4, VOCAB))
    for lang in ("en", "de"):
        (folder / f"dict.{lang}.txt").write_text(words)
    (folder / "manifest.json").write_text(json.dumps({"format": "tokenmill", "source_lang": "en", "target_lang": "de"}))
    (folder / "done").write_text("")
    return folder


# ------------------------------------------------------------------------------------------- children
def child_ours_start(args: dict) -> None:
    from tokenmill.batching.config import BatchConfig
    from tokenmill.data.pairs import PairDataset
    from tokenmill.loader import BatchIterator

    before = memory()
    began = time.perf_counter()
    dataset = PairDataset.from_dir(args["data"])
    config = BatchConfig(max_tokens=args["max_tokens"], required_batch_size_multiple=MULTIPLE, seed=SEED)
    iterator = BatchIterator(dataset, config, cache=args["cache"])
    batch = next(iter(iterator))
    elapsed = time.perf_counter() - began
    after = memory()
    stats = iterator.plan().stats
    report(
        {
            "seconds": elapsed,
            "before": before,
            "after": after,
            "cached": stats.cached,
            "plan_seconds": stats.seconds,
            "rows": int(batch["nsentences"]),
        }
    )


def child_ours_padding(args: dict) -> None:
    from tokenmill.batching.config import BatchConfig
    from tokenmill.data.pairs import PairDataset
    from tokenmill.loader import BatchIterator

    dataset = PairDataset.from_dir(args["data"])
    out = {}
    for mode in ("lowpad", "fairseq", "opennmt"):
        config = BatchConfig(mode=mode, max_tokens=args["max_tokens"], required_batch_size_multiple=MULTIPLE, seed=SEED)
        stats = BatchIterator(dataset, config, cache=False, collate=None).plan().stats
        out[mode] = {
            "padding": stats.padding_fraction,
            "batches": stats.num_batches,
            "tokens": stats.src_tokens + stats.tgt_tokens,
        }
    report(out)


def child_ours_throughput(args: dict) -> None:
    one_core()
    from tokenmill.batching.config import BatchConfig
    from tokenmill.data.pairs import PairDataset
    from tokenmill.loader import BatchIterator

    dataset = PairDataset.from_dir(args["data"])
    config = BatchConfig(max_tokens=args["max_tokens"], required_batch_size_multiple=MULTIPLE, seed=SEED)
    iterator = BatchIterator(dataset, config, cache=args["cache"], infinite=True)
    iterator.plan()
    tokens = batches = 0
    began = time.perf_counter()
    for batch in iterator:
        tokens += int(batch["net_input"]["src_lengths"].sum()) + batch["ntokens"]
        batches += 1
        if batches >= args["max_batches"] or time.perf_counter() - began > args["seconds"]:
            break
    elapsed = time.perf_counter() - began
    report({"tokens_per_s": tokens / elapsed, "batches_per_s": batches / elapsed, "batches": batches})


def _fairseq_task(data: str):
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from fairseq.tasks.translation import TranslationConfig, TranslationTask

    cfg = TranslationConfig(
        data=data,
        source_lang="en",
        target_lang="de",
        train_subset="train",
        required_seq_len_multiple=1,
        dataset_impl="mmap",
    )
    return TranslationTask, cfg


def child_fairseq_start(args: dict) -> None:
    TranslationTask, cfg = _fairseq_task(args["data"])  # imports done here
    before = memory()
    began = time.perf_counter()
    task = TranslationTask.setup_task(cfg)
    task.load_dataset("train")
    dataset = task.dataset("train")
    epoch_iter = task.get_batch_iterator(
        dataset, max_tokens=args["max_tokens"], required_batch_size_multiple=MULTIPLE, seed=SEED, epoch=1, num_workers=0
    )
    itr = epoch_iter.next_epoch_itr(shuffle=True)
    batch = next(itr)
    elapsed = time.perf_counter() - began
    after = memory()
    frozen = epoch_iter.frozen_batches
    order = np.concatenate(frozen)
    sizes = np.array([len(b) for b in frozen])
    padding, count = batch_padding(dataset.src_sizes, dataset.tgt_sizes, order, sizes)
    report(
        {
            "seconds": elapsed,
            "before": before,
            "after": after,
            "rows": int(batch["nsentences"]),
            "padding": padding,
            "batches": count,
            "samples_in_batches": len(order),
        }
    )


def child_fairseq_throughput(args: dict) -> None:
    one_core()
    TranslationTask, cfg = _fairseq_task(args["data"])
    import torch

    torch.set_num_threads(1)
    task = TranslationTask.setup_task(cfg)
    task.load_dataset("train")
    dataset = task.dataset("train")
    epoch_iter = task.get_batch_iterator(
        dataset, max_tokens=args["max_tokens"], required_batch_size_multiple=MULTIPLE, seed=SEED, epoch=1, num_workers=0
    )
    itr = epoch_iter.next_epoch_itr(shuffle=True)
    tokens = batches = 0
    began = time.perf_counter()
    for batch in itr:
        tokens += int(batch["net_input"]["src_lengths"].sum()) + int(batch["ntokens"])
        batches += 1
        if batches >= args["max_batches"] or time.perf_counter() - began > args["seconds"]:
            break
    elapsed = time.perf_counter() - began
    report({"tokens_per_s": tokens / elapsed, "batches_per_s": batches / elapsed, "batches": batches})


CHILDREN = {
    "ours-start": child_ours_start,
    "ours-padding": child_ours_padding,
    "ours-throughput": child_ours_throughput,
    "fairseq-start": child_fairseq_start,
    "fairseq-throughput": child_fairseq_throughput,
}


# ------------------------------------------------------------------------------------------- parent
def fairseq_python() -> str | None:
    return peer_python("fairseq")


def run_child(python: str, kind: str, args: dict, timeout: float = 3600) -> dict:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(Path(__file__).resolve().parents[1] / "src"), env.get("PYTHONPATH")])
    )
    proc = subprocess.run(
        [python, __file__, "--child", kind, "--args", json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT:"):
            return json.loads(line[len("RESULT:") :])
    raise RuntimeError(f"{kind} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def median(values: list[float]) -> float:
    return statistics.median(values)


def per_pair(results: list[dict], n: int) -> dict[str, float]:
    """Median growth of each memory figure from after imports to after the first batch, per pair."""
    return {
        key: median([(r["after"][key] - r["before"][key]) / n for r in results])
        for key in ("rss", "anon", "file", "peak")
    }


def bench(n: int, budget: int, workdir: Path, repeats: int, seconds: float, fairseq: str | None) -> dict:
    data = str(make_corpus(workdir, n))
    cache = workdir / f"cache-{n}-{budget}"
    ours = sys.executable
    first, cached = [], []
    for _ in range(repeats):
        subprocess.run(["rm", "-rf", str(cache)], check=True)
        first.append(run_child(ours, "ours-start", {"data": data, "cache": str(cache), "max_tokens": budget}))
        cached.append(run_child(ours, "ours-start", {"data": data, "cache": str(cache), "max_tokens": budget}))
    assert not first[0]["cached"] and cached[0]["cached"]
    padding = run_child(ours, "ours-padding", {"data": data, "max_tokens": budget})
    through = [
        run_child(
            ours,
            "ours-throughput",
            {"data": data, "cache": str(cache), "max_tokens": budget, "seconds": seconds, "max_batches": 20000},
        )
        for _ in range(repeats)
    ]
    row = {
        "pairs": n,
        "max_tokens": budget,
        "ours_first_s": median([r["seconds"] for r in first]),
        "ours_cached_s": median([r["seconds"] for r in cached]),
        "ours_plan_s": median([r["plan_seconds"] for r in first]),
        "ours_tokens_per_s": median([r["tokens_per_s"] for r in through]),
        "ours_memory_per_pair": per_pair(first, n),
        "ours_cached_memory_per_pair": per_pair(cached, n),
        "padding": padding,
    }
    if fairseq:
        starts = [run_child(fairseq, "fairseq-start", {"data": data, "max_tokens": budget}) for _ in range(repeats)]
        fs_through = [
            run_child(
                fairseq,
                "fairseq-throughput",
                {"data": data, "max_tokens": budget, "seconds": seconds, "max_batches": 5000},
            )
            for _ in range(repeats)
        ]
        row.update(
            {
                "fairseq_start_s": median([r["seconds"] for r in starts]),
                "fairseq_tokens_per_s": median([r["tokens_per_s"] for r in fs_through]),
                "fairseq_memory_per_pair": per_pair(starts, n),
                "fairseq_padding": starts[0]["padding"],
                "fairseq_batches": starts[0]["batches"],
                "fairseq_samples_in_batches": starts[0]["samples_in_batches"],
            }
        )
    return row


def print_table(rows: list[dict]) -> None:
    def fmt(value, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    print()
    print(
        "| pairs | max_tokens | first batch (s): ours first / ours cached / fairseq "
        "| collated tokens/s, 1 core: ours / fairseq (ratio) "
        "| padding: lowpad / fairseq batch_by_size / opennmt (lowpad / fairseq) | batches: lowpad / fairseq |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        fs_tps = r.get("fairseq_tokens_per_s")
        pad, fs_pad = r["padding"], r.get("fairseq_padding")
        print(
            f"| {r['pairs']:,} | {r['max_tokens']} "
            f"| {r['ours_first_s']:.2f} / {r['ours_cached_s']:.2f} / {fmt(r.get('fairseq_start_s'), '.2f')} "
            f"| {r['ours_tokens_per_s'] / 1e6:.2f}M / {fmt(fs_tps / 1e6 if fs_tps else None, '.2f')}M "
            f"({fmt(r['ours_tokens_per_s'] / fs_tps if fs_tps else None, '.0f')}x) "
            f"| {pad['lowpad']['padding']:.2%} / {fmt(fs_pad, '.2%')} / {pad['opennmt']['padding']:.2%} "
            f"({fmt(pad['lowpad']['padding'] / fs_pad if fs_pad else None, '.2f')}) "
            f"| {pad['lowpad']['batches']:,} / {fmt(r.get('fairseq_batches'), ',')} |"
        )
    print()
    print(
        "| pairs | max_tokens | extra memory per pair after the first batch (bytes): "
        "ours first start RSS (anon + file) / ours cached start RSS (anon + file) / fairseq RSS (anon + file) "
        "| peak RSS per pair: ours / fairseq |"
    )
    print("|---|---|---|---|")
    for r in rows:

        def mem(m: dict | None) -> str:
            return "-" if m is None else f"{m['rss']:.1f} ({m['anon']:.1f} + {m['file']:.1f})"

        ours, cached, theirs = (
            r["ours_memory_per_pair"],
            r["ours_cached_memory_per_pair"],
            r.get("fairseq_memory_per_pair"),
        )
        print(
            f"| {r['pairs']:,} | {r['max_tokens']} | {mem(ours)} / {mem(cached)} / {mem(theirs)} "
            f"| {ours['peak']:.1f} / {fmt(theirs['peak'] if theirs else None, '.1f')} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", choices=sorted(CHILDREN))
    parser.add_argument("--args", default="{}")
    parser.add_argument("--quick", action="store_true", help="100k pairs only")
    parser.add_argument("--sizes", default="1000000,20000000")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (medians are printed)")
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each throughput run")
    parser.add_argument("--workdir", default="/tmp/tokenmill-bench")
    parser.add_argument("--json", dest="json_out", default=None, help="also write the rows to this file")
    options = parser.parse_args()
    if options.child:
        CHILDREN[options.child](json.loads(options.args))
        return
    sizes = [100_000] if options.quick else [int(s) for s in options.sizes.split(",")]
    budgets = [int(b) for b in options.budgets.split(",")]
    fairseq = fairseq_python()
    if fairseq is None:
        print("fairseq interpreter not found: printing tokenmill's figures only", file=sys.stderr)
    workdir = Path(options.workdir)
    rows = []
    for n in sizes:
        repeats = 1 if n >= 10_000_000 else options.repeats
        for budget in budgets:
            began = time.perf_counter()
            rows.append(bench(n, budget, workdir, repeats, options.seconds, fairseq))
            print(
                f"# {n:,} pairs, max_tokens {budget}: {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True
            )
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print_table(rows)
    if options.json_out:
        Path(options.json_out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
