"""GPT sample index and blending: tokenmill vs megatron-core, side by side in one run.

Each implementation runs in its own long-lived process (megatron-core in its peer interpreter);
the driver asks them for one measurement at a time, alternating between the two, so that a busy
machine slows both alike. Figures are medians of --repeats rounds.

* index build: document, sample and shuffle index for every document of the store.
  tokenmill: ``build_gpt_index``. megatron-core: its real
  ``GPTDataset._build_document_sample_shuffle_indices`` (``_build_document_index`` +
  ``helpers.build_sample_idx`` (C++) + ``_build_shuffle_index`` and the Python around them), called
  with a mock config so it builds in memory without writing its cache. Peak memory is the rise of
  the process's peak RSS during the build (``/proc/self/clear_refs`` resets it), so the C++
  helper's allocations count too; "per sample" divides it by the number of samples.
* the three parts timed alone, as each implementation runs them.
* first start: open the store and construct the dataset on an empty cache folder (build + write
  the ``.npy`` cache): tokenmill's ``GPTDataset(cache=...)`` vs megatron-core's
  ``GPTDataset`` with ``path_to_cache``.
* cached start: opening the store (tokenmill's reader checks every pointer; megatron-core's does
  not), then constructing the dataset with its cache present and reading a batch of 8 samples.
* blending: ``build_blending_indices`` vs megatron-core's C++ ``helpers.build_blending_indices``.

The store is real on-disk Megatron layout: an ``.idx`` with the document sizes and a sparse ``.bin``
of the right length (most tokens are never read, so they take no disk space). Both sides' arrays
are hashed and compared; the tables say whether they are identical.

    python benchmarks/bench_gpt_index.py            # 5M documents, ~5B tokens, seq 2048, 2 epochs
    python benchmarks/bench_gpt_index.py --quick    # 200k documents, one round (smoke run)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peer import peer_python

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
EOD = 0


# ---------------------------------------------------------------- measuring (both processes)


def _status(key: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0


def _measure(function) -> tuple[float, int, object]:
    """Seconds, rise of peak RSS over the call, and the result."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")  # reset the peak-RSS counter
    except OSError:
        pass
    baseline = _status("VmRSS:")
    started = time.perf_counter()
    result = function()
    seconds = time.perf_counter() - started
    return seconds, max(_status("VmHWM:") - baseline, 0), result


def _digest(*arrays: np.ndarray) -> str:
    digest = hashlib.sha1()
    for array in arrays:
        contiguous = np.ascontiguousarray(array)
        digest.update(str(contiguous.shape).encode())
        digest.update(np.asarray(contiguous, dtype=np.int64).tobytes())
    return digest.hexdigest()


# ---------------------------------------------------------------- the store


def make_sizes(num_docs: int, mean_tokens: float, seed: int = 0) -> np.ndarray:
    """Real-looking document lengths: lognormal (sigma 1) with the given mean, 1..200k tokens."""
    sigma = 1.0
    mu = np.log(mean_tokens) - sigma**2 / 2
    rng = np.random.default_rng(seed)
    return np.clip(rng.lognormal(mu, sigma, size=num_docs), 1, 200_000).astype(np.int32)


def write_sparse_store(prefix: Path, sizes: np.ndarray) -> None:
    """A Megatron-layout uint16 store: full .idx, sparse .bin of the exact length."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    itemsize = 2
    pointers = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1].astype(np.int64) * itemsize, out=pointers[1:])
    document_indices = np.arange(len(sizes) + 1, dtype=np.int64)
    with open(f"{prefix}.idx", "wb") as handle:
        handle.write(struct.pack("<9sQBQQ", b"MMIDIDX\x00\x00", 1, 8, len(sizes), len(document_indices)))
        handle.write(sizes.astype(np.int32).tobytes())
        handle.write(pointers.tobytes())
        handle.write(document_indices.tobytes())
    with open(f"{prefix}.bin", "wb") as handle:
        handle.truncate(int(sizes.sum(dtype=np.int64)) * itemsize)


# ---------------------------------------------------------------- the two workers


class TokenmillWorker:
    """Runs tokenmill's side of every measurement."""

    def __init__(self, args: dict) -> None:
        sys.path.insert(0, str(REPO / "src"))
        from tokenmill.data import gpt_index
        from tokenmill.data.blending import build_blending_indices, normalize_weights
        from tokenmill.data.gpt_dataset import GPTDataset, GPTDatasetConfig
        from tokenmill.store import IndexedDataset

        self.gpt_index, self.GPTDataset, self.IndexedDataset = gpt_index, GPTDataset, IndexedDataset
        self.build_blending_indices, self.normalize_weights = build_blending_indices, normalize_weights
        self.args = args
        self.sizes = np.array(IndexedDataset(args["prefix"]).sizes)  # in RAM, like megatron-core's copy
        self.config = gpt_index.GPTIndexConfig(
            seq_length=args["seq_length"], seed=args["seed"], num_samples=args["num_samples"]
        )
        self.dataset_config = GPTDatasetConfig(
            seq_length=args["seq_length"], seed=args["seed"], num_samples=args["num_samples"], eod_id=EOD
        )
        self.cache = Path(args["cache"])

    def build(self) -> dict:
        seconds, peak, index = _measure(lambda: self.gpt_index.build_gpt_index(self.sizes, self.config))
        return {
            "seconds": seconds,
            "peak": peak,
            "samples": len(index),
            "digest": _digest(index.document_index, index.sample_index, index.shuffle_index),
            "array_bytes": index.document_index.nbytes + index.sample_index.nbytes + index.shuffle_index.nbytes,
            "epochs": index.plan.num_epochs,
            "separate": index.plan.separate_final_epoch,
        }

    def parts(self) -> dict:
        """The three steps as ``build_gpt_index`` runs them."""
        g, sizes, config = self.gpt_index, self.sizes, self.config
        plan = g.plan_epochs(int(sizes.sum(dtype=np.int64)), config)
        documents = np.arange(len(sizes), dtype=np.int32)
        rng = np.random.RandomState(config.seed)
        out = {}
        out["document index"], _, packed = _measure(
            lambda: g._packed_stream(sizes, documents, plan.num_epochs, rng, plan.separate_final_epoch)
        )
        stream, ids = g._halves(packed)

        def sample_index():
            rows = g._sample_index(
                lambda begin, end: stream[begin:end],
                len(packed),
                g.sample_index_dtype(sizes, len(packed)),
                config.seq_length,
                plan.num_epochs * plan.tokens_per_epoch,
                True,
                True,
            )
            np.ascontiguousarray(ids)  # the document index proper
            return rows

        out["sample index"], _, rows = _measure(sample_index)
        out["shuffle index"], _, _ = _measure(lambda: g.build_shuffle_index(len(rows) - 1, len(rows) - 1, rng))
        return out

    def first_start(self) -> dict:
        shutil.rmtree(self.cache, ignore_errors=True)
        seconds, peak, _ = _measure(
            lambda: self.GPTDataset(self.IndexedDataset(self.args["prefix"]), self.dataset_config, cache=self.cache)
        )
        return {"seconds": seconds, "peak": peak}

    def open_store(self) -> dict:
        seconds, _, self.store = _measure(lambda: self.IndexedDataset(self.args["prefix"]))
        return {"seconds": seconds}

    def cached_start(self) -> dict:
        def start():
            dataset = self.GPTDataset(self.store, self.dataset_config, cache=self.cache)
            dataset.get_batch(np.arange(8))

        seconds, _, _ = _measure(start)
        return {"seconds": seconds}

    def blend(self, name: str) -> dict:
        weights, size = self.args["blends"][name]
        normalized = self.normalize_weights(weights)
        seconds, _, result = _measure(lambda: self.build_blending_indices(normalized, size))
        return {"seconds": seconds, "digest": _digest(*result)}


class MegatronWorker:
    """Runs megatron-core's side of every measurement (in its own interpreter)."""

    def __init__(self, args: dict) -> None:
        import logging
        import typing
        import warnings

        warnings.filterwarnings("ignore")
        logging.disable(logging.WARNING)
        from megatron.core.datasets import gpt_dataset as mgpt
        from megatron.core.datasets import helpers
        from megatron.core.datasets.indexed_dataset import IndexedDataset
        from megatron.core.datasets.utils import Split, normalize

        class Tokenizer:
            vocab_size = 32000
            eod = EOD
            unique_identifiers: typing.ClassVar[dict] = {"class": "BenchTokenizer"}

        self.helpers, self.mgpt, self.IndexedDataset, self.Split, self.normalize = (
            helpers,
            mgpt,
            IndexedDataset,
            Split,
            normalize,
        )
        self.args = args
        prefix = args["prefix"]
        low_level = IndexedDataset(prefix, multimodal=False, mmap=True)  # keep open: it unmaps on deletion
        self.sizes = low_level.sequence_lengths.copy()
        del low_level
        self.indices = np.arange(len(self.sizes), dtype=np.int32)
        common = dict(
            random_seed=args["seed"],
            sequence_length=args["seq_length"],
            tokenizer=Tokenizer(),
            reset_position_ids=False,
            reset_attention_mask=False,
            eod_mask_loss=False,
            create_attention_mask=False,
        )
        self.mock_config = mgpt.GPTDatasetConfig(**common)  # no blend: builds in memory, writes no cache
        self.cache = Path(args["cache"])
        self.disk_config = mgpt.GPTDatasetConfig(
            **common, blend=([prefix], None), split="1,0,0", path_to_cache=str(self.cache)
        )

    def build(self) -> dict:
        import types

        mgpt = self.mgpt
        stub = types.SimpleNamespace(
            config=self.mock_config,
            dataset=types.SimpleNamespace(sequence_lengths=self.sizes, path_prefix=self.args["prefix"]),
            indices=self.indices,
            num_samples=self.args["num_samples"],
            index_split=self.Split.train,
            unique_description_hash="bench",
        )
        stub._get_num_tokens_per_epoch = lambda: mgpt.GPTDataset._get_num_tokens_per_epoch(stub)
        stub._get_num_epochs = lambda tokens: mgpt.GPTDataset._get_num_epochs(stub, tokens)
        seconds, peak, arrays = _measure(lambda: mgpt.GPTDataset._build_document_sample_shuffle_indices(stub))
        return {
            "seconds": seconds,
            "peak": peak,
            "samples": int(arrays[2].shape[0]),
            "digest": _digest(*arrays),
            "array_bytes": int(sum(a.nbytes for a in arrays)),
        }

    def parts(self) -> dict:
        """The three steps with the same calls GPTDataset makes (the final epoch is not separate here)."""
        sizes, args, mgpt = self.sizes, self.args, self.mgpt
        tokens = int(np.sum(sizes[self.indices]))
        epochs, total = 1, tokens
        while total < args["num_samples"] * args["seq_length"] + 1:
            epochs, total = epochs + 1, total + tokens
        rng = np.random.RandomState(args["seed"])
        out = {}
        out["document index"], _, document_index = _measure(
            lambda: mgpt._build_document_index(self.indices, epochs, rng, False)
        )
        out["sample index"], _, rows = _measure(
            lambda: self.helpers.build_sample_idx(sizes, document_index, args["seq_length"], epochs, tokens, True, True)
        )
        out["shuffle index"], _, _ = _measure(
            lambda: mgpt._build_shuffle_index(rows.shape[0] - 1, rows.shape[0] - 1, rng)
        )
        return out

    def _construct(self, store):
        return self.mgpt.GPTDataset(
            store, self.args["prefix"], self.indices, self.args["num_samples"], self.Split.train, self.disk_config
        )

    def first_start(self) -> dict:
        shutil.rmtree(self.cache, ignore_errors=True)
        seconds, peak, _ = _measure(
            lambda: self._construct(self.IndexedDataset(self.args["prefix"], multimodal=False, mmap=True))
        )
        return {"seconds": seconds, "peak": peak}

    def open_store(self) -> dict:
        seconds, _, self.store = _measure(lambda: self.IndexedDataset(self.args["prefix"], multimodal=False, mmap=True))
        return {"seconds": seconds}

    def cached_start(self) -> dict:
        def start():
            dataset = self._construct(self.store)
            for i in range(8):
                dataset[i]

        seconds, _, _ = _measure(start)
        return {"seconds": seconds}

    def blend(self, name: str) -> dict:
        weights, size = self.args["blends"][name]
        normalized = self.normalize(weights)

        def run():
            dataset_index = np.zeros(size, dtype=np.int16)
            dataset_sample_index = np.zeros(size, dtype=np.int64)
            self.helpers.build_blending_indices(
                dataset_index, dataset_sample_index, normalized, len(normalized), size, False
            )
            return dataset_index, dataset_sample_index

        seconds, _, result = _measure(run)
        return {"seconds": seconds, "digest": _digest(*result)}


def serve(kind: str, args: dict) -> None:
    """Worker loop: one command per stdin line ("build", "blend:NAME", ...), one JSON line back."""
    worker = TokenmillWorker(args) if kind == "tokenmill" else MegatronWorker(args)
    print("READY", flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "quit":
            break
        if command.startswith("blend:"):
            result = worker.blend(command[len("blend:") :])
        else:
            result = getattr(worker, command)()
        print(json.dumps(result), flush=True)
    shutil.rmtree(args["cache"], ignore_errors=True)


# ---------------------------------------------------------------- driver


class Remote:
    """A worker process the driver talks to."""

    def __init__(self, python: str, kind: str, args: dict) -> None:
        self.kind = kind
        self.proc = subprocess.Popen(
            [python, str(HERE), "--worker", kind, json.dumps(args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ, PYTHONWARNINGS="ignore"),
        )
        self._expect_ready()

    def _expect_ready(self) -> None:
        for line in self.proc.stdout:
            if line.strip() == "READY":
                return
        raise SystemExit(f"{self.kind} worker did not start (exit {self.proc.wait()})")

    def ask(self, command: str) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.kind} worker died during {command!r} (exit {self.proc.wait()})")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait()


def megatron_python(explicit: str | None) -> str | None:
    for candidate in (explicit, peer_python("megatron")):
        if candidate and Path(candidate).exists():
            return candidate
    try:
        import megatron.core  # noqa: F401
    except ImportError:
        return None
    return sys.executable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="200k documents, 1M-sample blends, one round")
    parser.add_argument("--docs", type=int, default=None, help="documents (default 5,000,000)")
    parser.add_argument("--mean-tokens", type=float, default=1000.0)
    parser.add_argument("--seq-length", type=int, default=2048)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--repeats", type=int, default=None, help="rounds (default 5; 1 with --quick)")
    parser.add_argument("--blend-size", type=int, default=None, help="blend samples (default 10,000,000)")
    parser.add_argument("--workdir", default="/tmp/tokenmill-bench-gpt-index")
    parser.add_argument("--megatron-python", default=None)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("payload", nargs="?", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:
        serve(options.worker, json.loads(options.payload))
        return

    num_docs = options.docs or (200_000 if options.quick else 5_000_000)
    repeats = options.repeats or (1 if options.quick else 5)
    blend_size = options.blend_size or (1_000_000 if options.quick else 10_000_000)
    workdir = Path(options.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    sizes = make_sizes(num_docs, options.mean_tokens)
    tokens = int(sizes.sum(dtype=np.int64))
    # megatron-core's num_samples for `epochs` full passes (its GPTDataset then needs exactly that many)
    num_samples = (options.epochs * tokens - 1) // options.seq_length
    prefix = workdir / "store" / "docs"
    write_sparse_store(prefix, sizes)
    rng = np.random.default_rng(3)
    blends = {
        "2 datasets": ([0.3, 0.7], blend_size),
        "3 datasets": ([0.5, 0.3, 0.2], blend_size),
        "10 datasets": ((rng.random(10) * 10 + 1).round(3).tolist(), blend_size),
    }
    common = {
        "prefix": str(prefix),
        "seq_length": options.seq_length,
        "seed": options.seed,
        "num_samples": num_samples,
        "blends": blends,
    }
    workers = {"tokenmill": Remote(sys.executable, "tokenmill", {**common, "cache": str(workdir / "cache-tm")})}
    peer = megatron_python(options.megatron_python)
    if peer is None:
        print("megatron-core not found (set TOKENMILL_MEGATRON_PYTHON): tokenmill figures only")
    else:
        workers["megatron-core"] = Remote(peer, "megatron", {**common, "cache": str(workdir / "cache-mc")})
    commands = ["build", "parts", "first_start", "open_store", "cached_start"] + [f"blend:{b}" for b in blends]
    results: dict[str, dict[str, list[dict]]] = {name: {c: [] for c in commands} for name in workers}
    try:
        for round_number in range(repeats):
            order = list(workers) if round_number % 2 == 0 else list(reversed(workers))
            for command in commands:
                for name in order:
                    results[name][command].append(workers[name].ask(command))
    finally:
        for worker in workers.values():
            worker.close()
        shutil.rmtree(workdir, ignore_errors=True)
    report(results, num_docs, tokens, options, repeats, blend_size, blends)


def report(results: dict, num_docs: int, tokens: int, options, repeats: int, blend_size: int, blends: dict) -> None:
    ours = results["tokenmill"]
    theirs = results.get("megatron-core")
    first_build = ours["build"][0]
    samples = first_build["samples"]

    def median(side: dict | None, command: str, key: str = "seconds") -> float | None:
        if side is None:
            return None
        return statistics.median(r[key] for r in side[command])

    def largest(side: dict | None, command: str, key: str) -> float | None:
        return None if side is None else max(r[key] for r in side[command])

    header = f"{'':36s}{'tokenmill':>14s}{'megatron-core':>16s}{'megatron/ours':>15s}"

    def row(label: str, a: float, b: float | None, unit: str = "s", digits: int = 3) -> None:
        theirs_text = "-" if b is None else f"{b:.{digits}f} {unit}"
        ratio = "-" if b is None or a <= 0 else f"{b / a:.2f}x"
        print(f"{label:36s}{f'{a:.{digits}f} {unit}':>14s}{theirs_text:>16s}{ratio:>15s}")

    print(
        f"GPT index: {num_docs:,} documents, {tokens / 1e9:.2f}B tokens (mean {tokens / num_docs:.0f}), "
        f"seq_length {options.seq_length}, {first_build['epochs']} epochs -> {samples:,} samples "
        f"(separate final epoch: {first_build['separate']}); median of {repeats} alternating round(s)"
    )
    print(header)
    print("-" * len(header))
    row("index build", median(ours, "build"), median(theirs, "build"))
    for part in ("document index", "sample index", "shuffle index"):
        b = None if theirs is None else statistics.median(r[part] for r in theirs["parts"])
        row(f"  {part}", statistics.median(r[part] for r in ours["parts"]), b)
    peak_ours, peak_theirs = largest(ours, "build", "peak"), largest(theirs, "build", "peak")
    row("  peak memory (largest)", peak_ours / 1e6, None if peak_theirs is None else peak_theirs / 1e6, "MB", 0)
    row("  peak memory per sample", peak_ours / samples, None if theirs is None else peak_theirs / samples, "B", 1)
    array_theirs = None if theirs is None else theirs["build"][0]["array_bytes"] / samples
    row("  index arrays per sample", first_build["array_bytes"] / samples, array_theirs, "B", 1)
    row("first start (build + write cache)", median(ours, "first_start"), median(theirs, "first_start"))
    row("cached start: open the store", median(ours, "open_store"), median(theirs, "open_store"))
    row("cached start: index + batch of 8", median(ours, "cached_start"), median(theirs, "cached_start"))
    if theirs is not None:
        same = all(r["digest"] == theirs["build"][0]["digest"] for r in ours["build"] + theirs["build"])
        print(f"identical document/sample/shuffle index: {'yes' if same else 'NO'}")

    print(f"\nblending indices, {blend_size:,} samples; median of {repeats} alternating round(s)")
    print(header)
    print("-" * len(header))
    for name in blends:
        row(name, median(ours, f"blend:{name}"), median(theirs, f"blend:{name}"))
    if theirs is not None:
        same = all(ours[f"blend:{n}"][0]["digest"] == theirs[f"blend:{n}"][0]["digest"] for n in blends)
        print(f"identical dataset_index/dataset_sample_index: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
