"""GPT sample index and blending: tokenmill vs megatron-core, side by side in one run.

What is timed (each implementation in its own fresh process, median of --repeats runs):

* index build: the document, sample and shuffle index for every document of the store.
  tokenmill: ``build_gpt_index``. megatron-core: its real
  ``GPTDataset._build_document_sample_shuffle_indices`` (``_build_document_index`` +
  ``helpers.build_sample_idx`` (C++) + ``_build_shuffle_index`` and the Python around them), called
  with a mock config so it builds in memory without writing its cache. Peak memory is the rise of
  the process's peak RSS over the build (``/proc/self/clear_refs`` resets it), so the C++ helper's
  allocations count too; "B/sample" divides it by the number of samples.
* first start: open the store and construct the dataset with an empty cache folder (build + write
  the ``.npy`` cache): ``tokenmill.data.gpt_dataset.GPTDataset(cache_dir=...)`` vs megatron-core's
  ``GPTDataset(path_to_cache=...)``.
* cached start: opening the store (tokenmill's reader verifies every pointer; megatron-core's does
  not), then constructing the dataset with the cache present and reading a first batch of 8 samples.
* blending: ``build_blending_indices`` vs megatron-core's C++ ``helpers.build_blending_indices``.

The store is real on-disk Megatron layout: a ``.idx`` with the document sizes and a sparse ``.bin``
of the right length (the benchmark never reads most tokens, so they need no disk space).
Both sides' arrays are hashed and compared: the table says whether they are identical.

    python benchmarks/bench_gpt_index.py            # 5M documents, ~5B tokens, seq 2048, 2 epochs
    python benchmarks/bench_gpt_index.py --quick    # 200k documents, one repeat (smoke run)
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

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
DEFAULT_MEGATRON_PYTHON = "/work/peers/mcore/bin/python"
EOD = 0


# ---------------------------------------------------------------- shared helpers (both processes)


def _status(key: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> int:
    """Reset the peak-RSS counter; returns the current RSS (the baseline)."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        pass
    return _status("VmRSS:")


def _peak_since(baseline: int) -> int:
    return max(_status("VmHWM:") - baseline, 0)


def _digest(*arrays: np.ndarray) -> str:
    digest = hashlib.sha1()
    for array in arrays:
        contiguous = np.ascontiguousarray(array)
        digest.update(str(contiguous.shape).encode())
        digest.update(np.asarray(contiguous, dtype=np.int64).tobytes())
    return digest.hexdigest()


def _timed(function, repeats: int) -> tuple[float, list[float], int, object]:
    """Median seconds, all times, the largest peak-RSS rise, and the last result."""
    times, peaks, result = [], [], None
    for _ in range(repeats):
        result = None
        baseline = _reset_peak()
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
        peaks.append(_peak_since(baseline))
    return statistics.median(times), times, max(peaks), result


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


# ---------------------------------------------------------------- workers


def worker_tokenmill(args: dict) -> dict:
    sys.path.insert(0, str(REPO / "src"))
    from tokenmill.data import gpt_index
    from tokenmill.data.blending import build_blending_indices, normalize_weights
    from tokenmill.data.gpt_dataset import GPTDataset, GPTDatasetConfig
    from tokenmill.data.gpt_index import GPTIndexConfig, build_gpt_index, plan_epochs
    from tokenmill.store import IndexedDataset

    out: dict = {}
    prefix, repeats = args["prefix"], args["repeats"]
    sizes = np.array(IndexedDataset(prefix).sizes)  # in RAM, as megatron-core's copy
    config = GPTIndexConfig(seq_length=args["seq_length"], seed=args["seed"], num_samples=args["num_samples"])
    median, times, peak, index = _timed(lambda: build_gpt_index(sizes, config), repeats)
    out["build"] = {"median": median, "times": times, "peak": peak, "samples": len(index)}
    out["digest"] = _digest(index.document_index, index.sample_index, index.shuffle_index)
    out["array_bytes"] = index.document_index.nbytes + index.sample_index.nbytes + index.shuffle_index.nbytes
    out["separate_final_epoch"] = index.plan.separate_final_epoch
    out["num_epochs"] = index.plan.num_epochs
    del index

    # the three parts on their own, as build_gpt_index runs them
    plan = plan_epochs(int(sizes.sum(dtype=np.int64)), config)
    documents = np.arange(len(sizes), dtype=np.int32)
    parts = {}
    started = time.perf_counter()
    rng = np.random.RandomState(config.seed)
    packed = gpt_index._packed_stream(sizes, documents, plan.num_epochs, rng, plan.separate_final_epoch)
    parts["document index"] = time.perf_counter() - started
    started = time.perf_counter()
    stream, ids = gpt_index._halves(packed)
    sample_index = gpt_index._sample_index(
        lambda begin, end, view=stream: view[begin:end],
        len(packed),
        gpt_index.sample_index_dtype(sizes, len(packed)),
        config.seq_length,
        plan.num_epochs * plan.tokens_per_epoch,
        True,
        True,
    )
    np.ascontiguousarray(ids)
    parts["sample index"] = time.perf_counter() - started
    started = time.perf_counter()
    gpt_index.build_shuffle_index(len(sample_index) - 1, len(sample_index) - 1, rng)
    parts["shuffle index"] = time.perf_counter() - started
    out["parts"] = parts
    del packed, stream, ids, sample_index

    dataset_config = GPTDatasetConfig(
        seq_length=args["seq_length"], seed=args["seed"], num_samples=args["num_samples"], eod_id=EOD
    )
    cache = Path(args["cache"])

    def first_start():
        shutil.rmtree(cache, ignore_errors=True)
        return GPTDataset(IndexedDataset(prefix), dataset_config, cache_dir=cache)

    store = IndexedDataset(prefix)

    def cached_start():
        dataset = GPTDataset(store, dataset_config, cache_dir=cache)
        dataset.get_batch(np.arange(8))
        return dataset

    median, times, peak, _ = _timed(first_start, repeats)
    out["first_start"] = {"median": median, "times": times, "peak": peak}
    median, times, _, _ = _timed(lambda: IndexedDataset(prefix), max(repeats, 3))
    out["open_store"] = {"median": median, "times": times}
    median, times, peak, _ = _timed(cached_start, max(repeats, 3))
    out["cached_start"] = {"median": median, "times": times, "peak": peak}
    shutil.rmtree(cache, ignore_errors=True)

    blends = {}
    for name, (weights, size) in args["blends"].items():
        normalized = normalize_weights(weights)
        median, times, _, result = _timed(lambda w=normalized, n=size: build_blending_indices(w, n), repeats)
        blends[name] = {"median": median, "times": times, "digest": _digest(*result)}
    out["blends"] = blends
    return out


def worker_megatron(args: dict) -> dict:
    import logging
    import types
    import typing
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from megatron.core.datasets import helpers
    from megatron.core.datasets.gpt_dataset import (
        GPTDataset,
        GPTDatasetConfig,
        _build_document_index,
        _build_shuffle_index,
    )
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    from megatron.core.datasets.utils import Split, normalize

    class Tokenizer:
        vocab_size = 32000
        eod = EOD
        unique_identifiers: typing.ClassVar[dict] = {"class": "BenchTokenizer"}

    out: dict = {}
    prefix, repeats = args["prefix"], args["repeats"]
    low = IndexedDataset(prefix, multimodal=False, mmap=True)
    sizes = low.sequence_lengths.copy()
    indices = np.arange(len(sizes), dtype=np.int32)
    common = dict(
        random_seed=args["seed"],
        sequence_length=args["seq_length"],
        tokenizer=Tokenizer(),
        reset_position_ids=False,
        reset_attention_mask=False,
        eod_mask_loss=False,
        create_attention_mask=False,
    )
    mock_config = GPTDatasetConfig(**common)  # no blend: megatron-core builds in memory, writes no cache

    def build():
        stub = types.SimpleNamespace(
            config=mock_config,
            dataset=types.SimpleNamespace(sequence_lengths=sizes, path_prefix=prefix),
            indices=indices,
            num_samples=args["num_samples"],
            index_split=Split.train,
            unique_description_hash="bench",
        )
        stub._get_num_tokens_per_epoch = lambda: GPTDataset._get_num_tokens_per_epoch(stub)
        stub._get_num_epochs = lambda tokens: GPTDataset._get_num_epochs(stub, tokens)
        return GPTDataset._build_document_sample_shuffle_indices(stub)

    median, times, peak, arrays = _timed(build, repeats)
    out["build"] = {"median": median, "times": times, "peak": peak, "samples": int(arrays[2].shape[0])}
    out["digest"] = _digest(*arrays)
    out["array_bytes"] = int(sum(a.nbytes for a in arrays))
    del arrays

    # the three parts on their own (same calls as GPTDataset makes)
    tokens = int(np.sum(sizes[indices]))
    epochs, total = 1, tokens
    while total < args["num_samples"] * args["seq_length"] + 1:
        epochs, total = epochs + 1, total + tokens
    parts = {}
    rng = np.random.RandomState(args["seed"])
    started = time.perf_counter()
    document_index = _build_document_index(indices, epochs, rng, False)
    parts["document index"] = time.perf_counter() - started
    started = time.perf_counter()
    sample_index = helpers.build_sample_idx(sizes, document_index, args["seq_length"], epochs, tokens, True, True)
    parts["sample index"] = time.perf_counter() - started
    started = time.perf_counter()
    _build_shuffle_index(sample_index.shape[0] - 1, sample_index.shape[0] - 1, rng)
    parts["shuffle index"] = time.perf_counter() - started
    out["parts"] = parts
    del document_index, sample_index

    cache = Path(args["cache"])
    disk_config = GPTDatasetConfig(**common, blend=([prefix], None), split="1,0,0", path_to_cache=str(cache))

    def open_store():
        return IndexedDataset(prefix, multimodal=False, mmap=True)

    def first_start():
        shutil.rmtree(cache, ignore_errors=True)
        return GPTDataset(open_store(), prefix, indices, args["num_samples"], Split.train, disk_config)

    store = open_store()

    def cached_start():
        dataset = GPTDataset(store, prefix, indices, args["num_samples"], Split.train, disk_config)
        for i in range(8):
            dataset[i]
        return dataset

    median, times, peak, _ = _timed(first_start, repeats)
    out["first_start"] = {"median": median, "times": times, "peak": peak}
    median, times, _, _ = _timed(open_store, max(repeats, 3))
    out["open_store"] = {"median": median, "times": times}
    median, times, peak, _ = _timed(cached_start, max(repeats, 3))
    out["cached_start"] = {"median": median, "times": times, "peak": peak}
    shutil.rmtree(cache, ignore_errors=True)

    blends = {}
    for name, (weights, size) in args["blends"].items():
        normalized = normalize(weights)

        def blend(w=normalized, n=size):
            dataset_index = np.zeros(n, dtype=np.int16)
            dataset_sample_index = np.zeros(n, dtype=np.int64)
            helpers.build_blending_indices(dataset_index, dataset_sample_index, w, len(w), n, False)
            return dataset_index, dataset_sample_index

        median, times, _, result = _timed(blend, repeats)
        blends[name] = {"median": median, "times": times, "digest": _digest(*result)}
    out["blends"] = blends
    return out


# ---------------------------------------------------------------- driver


def megatron_python(explicit: str | None) -> str | None:
    for candidate in (explicit, os.environ.get("TOKENMILL_MEGATRON_PYTHON"), DEFAULT_MEGATRON_PYTHON):
        if candidate and Path(candidate).exists():
            return candidate
    try:
        import megatron.core  # noqa: F401
    except ImportError:
        return None
    return sys.executable


def run_worker(python: str, kind: str, args: dict) -> dict:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [python, str(HERE), "--worker", kind, json.dumps(args)], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise SystemExit(f"{kind} worker failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt_ratio(ours: float, theirs: float) -> str:
    return f"{theirs / ours:.2f}x" if ours > 0 else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="200k documents, one repeat")
    parser.add_argument("--docs", type=int, default=None)
    parser.add_argument("--mean-tokens", type=float, default=1000.0)
    parser.add_argument("--seq-length", type=int, default=2048)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--blend-size", type=int, default=None)
    parser.add_argument("--workdir", default="/tmp/tokenmill-bench-gpt-index")
    parser.add_argument("--megatron-python", default=None)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("payload", nargs="?", help=argparse.SUPPRESS)
    options = parser.parse_args()

    if options.worker:
        args = json.loads(options.payload)
        result = worker_tokenmill(args) if options.worker == "tokenmill" else worker_megatron(args)
        print(json.dumps(result))
        return

    num_docs = options.docs or (200_000 if options.quick else 5_000_000)
    repeats = options.repeats or (1 if options.quick else 3)
    blend_size = options.blend_size or (1_000_000 if options.quick else 10_000_000)
    workdir = Path(options.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    sizes = make_sizes(num_docs, options.mean_tokens)
    tokens = int(sizes.sum(dtype=np.int64))
    # As many samples as `epochs` passes hold: megatron-core's num_samples for that many epochs.
    num_samples = (options.epochs * tokens - 1) // options.seq_length
    prefix = workdir / "store" / "docs"
    started = time.perf_counter()
    write_sparse_store(prefix, sizes)
    print(
        f"store: {num_docs:,} documents, {tokens:,} tokens (mean {tokens / num_docs:.0f}), "
        f"written in {time.perf_counter() - started:.1f} s at {prefix}"
    )
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
        "repeats": repeats,
        "blends": blends,
    }
    ours = run_worker(sys.executable, "tokenmill", {**common, "cache": str(workdir / "cache-tokenmill")})
    peer = megatron_python(options.megatron_python)
    theirs = None
    if peer is None:
        print("megatron-core not found (set TOKENMILL_MEGATRON_PYTHON): tokenmill figures only")
    else:
        theirs = run_worker(peer, "megatron", {**common, "cache": str(workdir / "cache-megatron")})
    shutil.rmtree(workdir, ignore_errors=True)

    samples = ours["build"]["samples"]
    print(
        f"\nGPT index: {num_docs:,} documents, {tokens / 1e9:.2f}B tokens, seq_length {options.seq_length}, "
        f"{ours['num_epochs']} epochs -> {samples:,} samples (separate final epoch: "
        f"{ours['separate_final_epoch']}); median of {repeats} run(s)"
    )
    header = f"{'':34s}{'tokenmill':>14s}{'megatron-core':>16s}{'megatron/ours':>15s}"
    print(header)
    print("-" * len(header))

    def row(label: str, a: float, b: float | None, unit: str = "s", digits: int = 3) -> None:
        ours_text = f"{a:.{digits}f} {unit}"
        theirs_text = "-" if b is None else f"{b:.{digits}f} {unit}"
        ratio = "-" if b is None else _fmt_ratio(a, b)
        print(f"{label:34s}{ours_text:>14s}{theirs_text:>16s}{ratio:>15s}")

    get = (lambda *keys: None) if theirs is None else (lambda *keys: _dig(theirs, keys))
    row("index build", ours["build"]["median"], get("build", "median"))
    for part in ("document index", "sample index", "shuffle index"):
        row(f"  {part} (one run)", ours["parts"][part], get("parts", part))
    row(
        "  peak memory", ours["build"]["peak"] / 1e6, None if theirs is None else theirs["build"]["peak"] / 1e6, "MB", 0
    )
    row(
        "  peak memory per sample",
        ours["build"]["peak"] / samples,
        None if theirs is None else theirs["build"]["peak"] / samples,
        "B",
        1,
    )
    row(
        "  arrays per sample",
        ours["array_bytes"] / samples,
        None if theirs is None else theirs["array_bytes"] / samples,
        "B",
        1,
    )
    row("first start (build + write cache)", ours["first_start"]["median"], get("first_start", "median"))
    row("cached start: open the store", ours["open_store"]["median"], get("open_store", "median"))
    row("cached start: index + batch of 8", ours["cached_start"]["median"], get("cached_start", "median"))
    if theirs is not None:
        same = ours["digest"] == theirs["digest"]
        print(f"identical document/sample/shuffle index: {'yes' if same else 'NO'}")

    print(f"\nblending indices, {blend_size:,} samples; median of {repeats} run(s)")
    print(header)
    print("-" * len(header))
    for name in blends:
        b = None if theirs is None else theirs["blends"][name]["median"]
        row(name, ours["blends"][name]["median"], b)
        if theirs is not None and ours["blends"][name]["digest"] != theirs["blends"][name]["digest"]:
            print(f"  {name}: blending indices DIFFER from megatron-core")
    if theirs is not None:
        same = all(ours["blends"][n]["digest"] == theirs["blends"][n]["digest"] for n in blends)
        print(f"identical dataset_index/dataset_sample_index: {'yes' if same else 'NO'}")


def _dig(data: dict, keys: tuple) -> float:
    for key in keys:
        data = data[key]
    return data


if __name__ == "__main__":
    main()
