"""Loader throughput reading a prepared directory from a local S3 server against local disk.

The server is moto's S3 server in its own process on 127.0.0.1 (``tests/s3server.py``): it stands in
for object storage, but it is Python on the same cores as the loader, so its fetch speed is a floor,
not S3's. The data: ``--pairs`` synthetic en-de pairs (lognormal lengths, uint16 ids), written as a
prepared directory (stores + manifest) and uploaded once. For each source, one rank iterates whole
epochs of fairseq batch dicts (``tokenmill.batches``, ``max_tokens`` per batch; the epochs' plans are
cached beforehand so that only reading and collating is timed):

* **local disk**: ``tokenmill.open(directory)``;
* **S3, cold cache**: ``tokenmill.open("s3://...")`` on an empty cache: the open fetches the indices and
  the train ``.bin`` files (checked against the manifest) before epoch 1;
* **S3, warm cache**: a second open on the filled cache (the manifest is fetched, nothing else).

Each figure is the median of ``--repeats`` runs; epoch 1 throughput counts the open, epoch 2 does not.

    python benchmarks/bench_remote.py                 # 1M pairs
    python benchmarks/bench_remote.py --pairs 100000 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import tokenmill
from tests.s3server import S3Server
from tokenmill.store import IndexedWriter
from tokenmill.store.manifest import write_manifest
from tokenmill.store.remote import RemoteOptions

VOCAB = 32000


def make_directory(path: Path, pairs: int, seed: int = 1) -> int:
    """A prepared en-de directory of ``pairs`` random pairs; returns its bytes."""
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
    return sum(f.stat().st_size for f in path.iterdir())


def epoch(iterator) -> tuple[int, int, float]:
    """Batches, real tokens (both sides) and seconds of one epoch of ``iterator``."""
    started = time.perf_counter()
    batches = tokens = 0
    for batch in iterator:
        batches += 1
        tokens += int(batch["net_input"]["src_lengths"].sum()) + int(batch["ntokens"])
    return batches, tokens, time.perf_counter() - started


def run(source: str, opener, config: tokenmill.BatchConfig, plans: Path) -> dict[str, float]:
    started = time.perf_counter()
    data = opener()
    opened = time.perf_counter() - started
    iterator = tokenmill.batches(data, config, cache=plans)
    batches, tokens, first = epoch(iterator)
    batches2, tokens2, second = epoch(iterator)
    return {"open": opened, "epoch1": first, "epoch2": second, "batches": batches, "tokens": tokens,
            "batches2": batches2, "tokens2": tokens2}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", default=None, help="where the data and caches go (default: a temp dir)")
    args = parser.parse_args()

    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-remote-"))
    local = work / "data-bin"
    if local.exists():
        shutil.rmtree(local)
    size = make_directory(local, args.pairs)
    plans, cache = work / "plans", work / "remote-cache"
    config = tokenmill.BatchConfig(max_tokens=args.max_tokens, seed=1)
    os.environ["TOKENMILL_CACHE"] = str(work / "tm-cache")

    with S3Server(process=True) as s3:
        started = time.perf_counter()
        url = s3.upload_dir(local, "data-bin")
        upload = time.perf_counter() - started
        options = s3.storage_options
        remote = RemoteOptions(cache_dir=cache)

        def from_s3():
            return tokenmill.open(url, storage_options=options, remote=remote)

        run("warm-up", lambda: tokenmill.open(local), config, plans)  # plans of epochs 1 and 2 cached
        results: dict[str, list[dict[str, float]]] = {"local disk": [], "S3, cold cache": [], "S3, warm cache": []}
        for _ in range(args.repeats):
            results["local disk"].append(run("local", lambda: tokenmill.open(local), config, plans))
            shutil.rmtree(cache, ignore_errors=True)
            results["S3, cold cache"].append(run("cold", from_s3, config, plans))
            results["S3, warm cache"].append(run("warm", from_s3, config, plans))

    print(f"{args.pairs:,} pairs, {size / 1e6:.0f} MB on disk (upload to moto {upload:.1f} s); "
          f"max_tokens {args.max_tokens}, 1 rank, median of {args.repeats}\n")
    print("| source | open (s) | open + epoch 1 (s) | epoch 1 batches/s | epoch 1 tokens/s | epoch 2 batches/s "
          "| epoch 2 tokens/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for source, runs in results.items():
        def med(key: str, runs=runs) -> float:
            return statistics.median(r[key] for r in runs)

        first = med("open") + med("epoch1")
        print(f"| {source} | {med('open'):.3f} | {first:.2f} | {med('batches') / first:,.0f} | "
              f"{med('tokens') / first:,.0f} | {med('batches2') / med('epoch2'):,.0f} | "
              f"{med('tokens2') / med('epoch2'):,.0f} |")
    cold = statistics.median(r["open"] for r in results["S3, cold cache"])
    print(f"\ncold open fetched {size / 1e6:.0f} MB at {size / 1e6 / cold:.0f} MB/s")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
