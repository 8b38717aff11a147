"""Packed translation pairs: packing time and padding against unpacked token batching, same data, one run.

On a prepared corpus with real-looking lengths (lognormal around 20 tokens, target correlated with
source; the corpus of ``bench_batching.py``) it prints, for each row length:

* packed plans (``PackedPairPlanner``, both strategies): median seconds to compute an epoch's plan
  (pack + batch + deal to ranks; no cache), rows, pairs per row, padding fraction of the collated
  batches (pad slots / all slots, both sides) at fixed width and at the batch's longest row;
* unpacked token batching on the same pairs and budget (``Planner``, ``lowpad`` and ``fairseq``
  modes): median plan seconds and ``PlanStats.padding_fraction``;
* Tensor2Tensor's own packer (``generator_utils.pack_examples``, its default queue of 10 open rows
  and spacing 2, and queue 1 / spacing 0 = our ``greedy``) on a prefix of the corpus, run in the
  T2T venv: seconds (scaled per million pairs) and padding.

Usage::

    python benchmarks/bench_packing.py                   # 1M pairs, rows of 128 and 256, 3 repeats
    python benchmarks/bench_packing.py --pairs 200000 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peer import how_to_get, peer_python
from bench_batching import make_corpus

T2T_CODE = """
import json, sys, time, types
import numpy as np
import tensorflow.compat.v1 as v1
if not hasattr(v1, "estimator"):
    v1.estimator = types.SimpleNamespace(ModeKeys=types.SimpleNamespace(TRAIN="train", EVAL="eval", PREDICT="infer"))
from tensor2tensor.data_generators import generator_utils
src, tgt = np.load(sys.argv[1]), np.load(sys.argv[2])
length, queue, spacing = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
pairs = [([5] * int(s), [5] * int(t)) for s, t in zip(src, tgt)]
began = time.perf_counter()
rows = list(generator_utils.pack_examples(({"inputs": s, "targets": t} for s, t in pairs), True,
                                          packed_length=length, spacing=spacing, queue_size=queue))
seconds = time.perf_counter() - began
print("RESULT:" + json.dumps({"seconds": seconds, "rows": len(rows)}))
"""


def median_time(fn, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        began = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times), result


def t2t_padding(python: str, src: np.ndarray, tgt: np.ndarray, length: int, queue: int, spacing: int) -> dict:
    """T2T's pack_examples on these lengths: seconds and padding of its rows (at the full row width)."""
    keep = (src <= length) & (tgt <= length)
    src, tgt = src[keep], tgt[keep]
    with tempfile.TemporaryDirectory() as tmp:
        np.save(f"{tmp}/src.npy", src)
        np.save(f"{tmp}/tgt.npy", tgt)
        proc = subprocess.run(
            [python, "-c", T2T_CODE, f"{tmp}/src.npy", f"{tmp}/tgt.npy", str(length), str(queue), str(spacing)],
            capture_output=True,
            text=True,
            env={"TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONWARNINGS": "ignore", "PATH": "/usr/bin:/bin"},
        )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT:")), None)
    if line is None:
        raise RuntimeError(f"T2T packer failed:\n{proc.stderr[-3000:]}")
    result = json.loads(line[len("RESULT:") :])
    real = int(src.sum() + tgt.sum())
    result["padding"] = 1 - real / (result["rows"] * 2 * length)
    result["pairs"] = len(src)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256], help="row lengths (per side)")
    parser.add_argument("--rows-per-batch", type=int, default=32, help="rows per packed batch (budget = rows x length)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--t2t-pairs", type=int, default=100_000, help="corpus prefix given to T2T's packer (0: skip)")
    parser.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parent / ".data" / "batching")
    args = parser.parse_args()

    from tokenmill.batching import BatchConfig, Planner
    from tokenmill.batching.packed_pairs import PackConfig, PackedPairPlanner
    from tokenmill.data.pairs import PairDataset
    from tokenmill.loader import plan_sizes

    data = make_corpus(args.workdir, args.pairs)
    dataset = PairDataset.from_dir(data)
    src, tgt = dataset.src_sizes, dataset.tgt_sizes
    print(
        f"{args.pairs:,} pairs, {int(src.sum()):,} source + {int(tgt.sum()):,} target tokens "
        f"(mean {src.mean():.1f} / {tgt.mean():.1f}); median of {args.repeats} runs; 1 rank"
    )
    t2t = peer_python("t2t")
    rows_out = []
    for length in args.lengths:
        budget = length * args.rows_per_batch
        print(f"\nrows of {length} tokens per side, max_tokens {budget} ({args.rows_per_batch} rows per packed batch)")
        print(f"  {'batching':<34} {'plan s':>8} {'rows/batches':>13} {'pairs/row':>9} {'padding':>8} {'(trimmed)':>9}")
        for strategy in ("ffd", "greedy"):
            config = PackConfig(max_length=length, max_tokens=budget, strategy=strategy)
            seconds, plan = median_time(lambda c=config: PackedPairPlanner(dataset, c).plan(1), args.repeats)
            trimmed = PackedPairPlanner(
                dataset,
                PackConfig(
                    max_length=length, max_tokens=budget, strategy=strategy, fixed_width=False, pad_to_multiple=8
                ),
            ).plan(1)
            s = plan.stats
            print(
                f"  {'packed ' + strategy:<34} {seconds:>8.2f} {s.extra['rows']:>13,} {s.extra['pairs_per_row']:>9.2f} "
                f"{s.padding_fraction:>8.2%} {trimmed.stats.padding_fraction:>9.2%}"
            )
            rows_out.append(
                {
                    "length": length,
                    "batching": f"packed-{strategy}",
                    "seconds": seconds,
                    "padding": s.padding_fraction,
                    "padding_trimmed": trimmed.stats.padding_fraction,
                    "rows": s.extra["rows"],
                    "dropped": s.num_dropped,
                }
            )
        ratio_width = round(length * float(tgt.sum()) / float(src.sum()))
        config = PackConfig(
            max_src_length=length, max_tgt_length=ratio_width, max_tokens=budget * ratio_width // length
        )
        seconds, plan = median_time(lambda c=config: PackedPairPlanner(dataset, c).plan(1), args.repeats)
        s = plan.stats
        label = f"packed ffd, rows {length}/{ratio_width}"
        print(
            f"  {label:<34} {seconds:>8.2f} {s.extra['rows']:>13,} {s.extra['pairs_per_row']:>9.2f} "
            f"{s.padding_fraction:>8.2%}   (target width x corpus ratio)"
        )
        rows_out.append(
            {"length": length, "batching": "packed-ffd-ratio", "seconds": seconds, "padding": s.padding_fraction}
        )
        for mode in ("lowpad", "fairseq"):
            options = dict(mode=mode, max_tokens=budget)

            def unpacked(options=options):
                return Planner(
                    plan_sizes(dataset),
                    BatchConfig(**options),
                    data_fingerprint=dataset.fingerprint(),
                    pre_dropped=dataset.filter_report.dropped,
                ).plan(1)

            seconds, plan = median_time(unpacked, args.repeats)
            s = plan.stats
            print(f"  {'unpacked ' + mode:<34} {seconds:>8.2f} {s.num_batches:>13,} {'':>9} {s.padding_fraction:>8.2%}")
            rows_out.append(
                {
                    "length": length,
                    "batching": f"unpacked-{mode}",
                    "seconds": seconds,
                    "padding": s.padding_fraction,
                    "batches": s.num_batches,
                }
            )
        if t2t is None or not args.t2t_pairs:
            print(f"  T2T pack_examples: skipped (peer not installed: {how_to_get('t2t')})" if t2t is None else "")
            continue
        n = min(args.t2t_pairs, args.pairs)
        for queue, spacing in ((10, 2), (1, 0)):
            r = t2t_padding(t2t, src[:n].astype(np.int64), tgt[:n].astype(np.int64), length, queue, spacing)
            label = f"T2T pack_examples q={queue} s={spacing} ({n // 1000}k)"
            print(
                f"  {label:<34} {r['seconds'] * 1e6 / r['pairs']:>8.2f} {r['rows']:>13,} "
                f"{r['pairs'] / r['rows']:>9.2f} {r['padding']:>8.2%}   (s per 1M pairs)"
            )
            rows_out.append(
                {
                    "length": length,
                    "batching": f"t2t-q{queue}-s{spacing}",
                    "pairs": r["pairs"],
                    "seconds_per_million": r["seconds"] * 1e6 / r["pairs"],
                    "padding": r["padding"],
                }
            )
    print("RESULT:" + json.dumps(rows_out))


if __name__ == "__main__":
    main()
