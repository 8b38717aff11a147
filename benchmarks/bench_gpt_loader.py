"""GPT samples through a loader: tokenmill vs megatron-core, side by side in one run.

Both read the same Megatron-layout store with the same settings (seq_length, seed, num_samples,
micro batch, data-parallel rank 0 of ``--world``) and serve the same micro batches:

* tokenmill: ``tokenmill.loader(GPTDataset(...), GPTBatchConfig(...))`` (torch DataLoader over our
  iterator; one vectorized read per micro batch), and ``tokenmill.batches(...)`` (numpy, no torch);
* megatron-core: its ``GPTDataset`` with Megatron-LM's ``MegatronPretrainingSampler`` (restated in
  tests/data/megatron_oracle.py: the megatron-core wheel does not ship it) as the ``batch_sampler``
  of a torch ``DataLoader`` with the default collate, as Megatron's ``build_pretraining_data_loader``
  does.

Each round runs each side in a fresh process (megatron-core in its peer interpreter), alternating,
so a busy machine slows both alike; the index caches are built before the first round and only the
loop over ``--steps`` micro batches is timed (after one warm-up batch). The first batches of both
sides are compared (tokens, labels, loss_mask, position_ids). Figures are medians of ``--repeats``.

    python benchmarks/bench_gpt_loader.py            # 60k documents (~30M tokens), seq 2048, micro 8
    python benchmarks/bench_gpt_loader.py --quick    # small store, one round (smoke run)
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peer import how_to_get, peer_python

REPO = Path(__file__).resolve().parents[1]

OURS = r"""
import hashlib, json, sys, time
import numpy as np
import tokenmill
from tokenmill.store import IndexedDataset
a = json.loads(sys.argv[1])
store = IndexedDataset(a["prefix"])
gpt = tokenmill.GPTDataset(store, tokenmill.GPTDatasetConfig(seq_length=a["seq"], seed=a["seed"],
                           num_samples=a["num_samples"]), cache=a["cache"])
config = tokenmill.GPTBatchConfig(global_batch_size=a["micro"] * a["world"] * 4, micro_batch_size=a["micro"])
if a["kind"] == "torch":
    source = tokenmill.loader(gpt, config, rank=0, world_size=a["world"], num_workers=a["workers"])
else:
    source = tokenmill.batches(gpt, config, rank=0, world_size=a["world"])
stream = iter(source)
first = next(stream)
digest = hashlib.sha256()
for key in ("tokens", "labels", "loss_mask", "position_ids"):
    digest.update(np.asarray(first[key], dtype=np.float64).tobytes())
start = time.perf_counter()
for _ in range(a["steps"]):
    batch = next(stream)
seconds = time.perf_counter() - start
print("RESULT:" + json.dumps({"seconds": seconds, "first": digest.hexdigest()}))
"""

MEGATRON = r"""
import hashlib, json, sys, time, warnings
warnings.filterwarnings("ignore")
import numpy as np, torch
sys.path.insert(0, "tests/data")
from megatron_oracle import PretrainingSampler, _Tokenizer
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
from megatron.core.datasets.indexed_dataset import IndexedDataset
from megatron.core.datasets.utils import Split
a = json.loads(sys.argv[1])
config = GPTDatasetConfig(random_seed=a["seed"], sequence_length=a["seq"], blend=([a["prefix"]], None),
    split="1,0,0", path_to_cache=a["cache"], tokenizer=_Tokenizer(65000, 1), reset_position_ids=False,
    reset_attention_mask=False, eod_mask_loss=False, create_attention_mask=False)
low = IndexedDataset(a["prefix"], multimodal=False, mmap=True)
indices = np.arange(0, len(low.sequence_lengths), dtype=np.int32)
dataset = GPTDataset(low, a["prefix"], indices, a["num_samples"], Split.train, config)
sampler = PretrainingSampler(len(dataset), 0, a["micro"], 0, a["world"])
loader = torch.utils.data.DataLoader(dataset, batch_sampler=sampler, num_workers=a["workers"], pin_memory=False)
stream = iter(loader)
first = next(stream)
digest = hashlib.sha256()
for key in ("tokens", "labels", "loss_mask", "position_ids"):
    digest.update(np.asarray(first[key].numpy(), dtype=np.float64).tobytes())
start = time.perf_counter()
for _ in range(a["steps"]):
    batch = next(stream)
seconds = time.perf_counter() - start
print("RESULT:" + json.dumps({"seconds": seconds, "first": digest.hexdigest()}))
"""


def run(python: str, code: str, args: dict) -> dict:
    """One timed round in a fresh process; its RESULT line."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([python, "-c", code, json.dumps(args)], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"{python} failed:\n{proc.stderr[-3000:]}")
    line = next(x for x in reversed(proc.stdout.splitlines()) if x.startswith("RESULT:"))
    return json.loads(line[len("RESULT:"):])


def write_store(prefix: Path, documents: int, seed: int) -> int:
    """A Megatron-layout store of ``documents`` documents (lognormal lengths, EOD-ended); its tokens."""
    from tokenmill.store import IndexedWriter

    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.lognormal(5.5, 1.0, documents).astype(np.int64), 1, 8000)
    tokens = rng.integers(2, 65000, int(lengths.sum()), dtype=np.uint16)
    with IndexedWriter(prefix, layout="megatron", dtype=np.uint16) as writer:
        for piece in np.split(tokens, np.cumsum(lengths)[:-1]):
            writer.add_item(np.append(piece, 1))
            writer.end_document()
    return int(lengths.sum() + documents)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=60_000)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--micro", type=int, default=8)
    parser.add_argument("--world", type=int, default=1, help="data-parallel size (rank 0 is measured)")
    parser.add_argument("--steps", type=int, default=300, help="micro batches timed per round")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader workers, both sides")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.documents, args.steps, args.repeats = 3_000, 30, 1
    megatron = peer_python("megatron")
    if megatron is None:
        raise SystemExit(f"megatron-core is needed for the comparison: {how_to_get('megatron')}")
    with tempfile.TemporaryDirectory(prefix="bench-gpt-loader-") as work:
        prefix = Path(work) / "docs_text_document"
        tokens = write_store(prefix, args.documents, seed=1)
        num_samples = (args.steps + 2) * args.micro * args.world
        common = {"prefix": str(prefix), "seq": args.seq, "seed": 1234, "num_samples": num_samples,
                  "micro": args.micro, "world": args.world, "workers": args.workers, "steps": args.steps}
        ours = dict(common, cache=str(Path(work) / "ours-cache"))
        theirs = dict(common, cache=str(Path(work) / "megatron-cache"))
        # Build both caches untimed.
        run(sys.executable, OURS, dict(ours, kind="numpy", steps=0))
        run(megatron, MEGATRON, dict(theirs, steps=0))
        times: dict[str, list[float]] = {"tokenmill loader (torch)": [], "tokenmill batches (numpy)": [],
                                         "megatron-core GPTDataset + sampler + DataLoader": []}
        firsts = set()
        for _ in range(args.repeats):
            for name, (python, code, extra) in {
                "tokenmill loader (torch)": (sys.executable, OURS, dict(ours, kind="torch")),
                "megatron-core GPTDataset + sampler + DataLoader": (megatron, MEGATRON, theirs),
                "tokenmill batches (numpy)": (sys.executable, OURS, dict(ours, kind="numpy")),
            }.items():
                result = run(python, code, extra)
                times[name].append(result["seconds"])
                firsts.add(result["first"])
    samples = args.steps * args.micro
    print(f"store: {args.documents} documents, {tokens / 1e6:.1f}M tokens; seq_length {args.seq}, micro batch "
          f"{args.micro}, rank 0 of {args.world}, {args.workers} DataLoader workers; {args.steps} micro batches "
          f"({samples} samples) per round, median of {args.repeats}")
    print(f"first batches identical on every side: {len(firsts) == 1}")
    base = statistics.median(times["megatron-core GPTDataset + sampler + DataLoader"])
    print(f"{'':50} {'samples/s':>12} {'vs megatron-core':>17}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:50} {samples / median:12,.0f} {base / median:16.1f}x")


if __name__ == "__main__":
    main()
