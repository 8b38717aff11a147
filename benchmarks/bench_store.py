"""Token store throughput, tokenmill vs megatron-core, side by side in one run.

    python benchmarks/bench_store.py              # 10M items (several minutes, ~6 GB of temporary files)
    python benchmarks/bench_store.py --quick      # 200k items
    python benchmarks/bench_store.py --items 2000000 --reps 31 --json out.json

Items have lengths uniform in 1..200 tokens, token ids uniform below 32000 (uint16). Every writer and
reader runs in its own process (megatron-core in its own venv, see benchmarks/_peer.py), regenerating
the same items from the same seed chunk by chunk; timings are taken inside those processes, around the
library calls only (generating items and turning them into per-item arrays/tensors is not timed).

Write: megatron-core ``IndexedDatasetBuilder`` (``add_item(tensor)`` + ``end_document()`` per item, then
``finalize``) against tokenmill's ``IndexedWriter`` both per item (``add_item`` + ``end_document``) and
batched (``add_items`` per chunk of 100k items, the path tokenmill's own pipeline uses). Peak RSS is
read from /proc (VmHWM, reset after set-up) to show what the writer keeps per item.

Read: random batches of 4096 items from the same warm files (read once end to end before the phase,
so both libraries hit the page cache): a Python loop of ``ds[i]`` in each library, the same loop plus
``np.concatenate`` (the output a batch needs), and tokenmill's vectorized ``gather``/``gather_padded``.
Every timed call gets its own fresh batch of indices (the same ones for the same method in both
libraries), so page-table faults on first touch weigh the same on every method that reads tokens.
Medians over ``--reps`` batches.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _peer  # a sibling module; works under the peer's interpreter too

VOCAB = 32000
MAX_LEN = 200
CHUNK = 100_000
BATCH = 4096
SCRIPT = str(Path(__file__).resolve())
# Each read method draws its batches from its own stream, so the same method sees the same indices in both
# libraries while no two timed calls share a batch.
METHOD_SLOTS = {"loop": 0, "loop+concat": 1, "gather": 2, "gather_padded": 3}


# ---------------------------------------------------------------- data (identical in every process)
def chunk_counts(items: int) -> list[int]:
    """Items per generation chunk."""
    full, rest = divmod(items, CHUNK)
    return [CHUNK] * full + ([rest] if rest else [])


def make_chunk(seed: int, k: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Chunk ``k``: (lengths int64 in 1..MAX_LEN, flat uint16 tokens below VOCAB), a pure function of the seed."""
    rng = np.random.default_rng([seed, 0, k])
    lengths = rng.integers(1, MAX_LEN + 1, size=count, dtype=np.int64)
    tokens = rng.integers(0, VOCAB, size=int(lengths.sum()), dtype=np.uint16)
    return lengths, tokens


def batch_indices(seed: int, method: str, rep: int, items: int, batch: int) -> np.ndarray:
    """The random item indices that ``method`` reads in repetition ``rep`` (negative reps are warm-up)."""
    rng = np.random.default_rng([seed, 1, METHOD_SLOTS[method], rep + 1000])
    return rng.integers(0, items, size=batch, dtype=np.int64)


# ---------------------------------------------------------------- memory (Linux /proc)
def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where that is not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


# ---------------------------------------------------------------- workers (each in its own process)
class WriteWorker:
    """Writes the items chunk by chunk with writer ``kind`` (mcore | tm-loop | tm-batched); ``step(k)`` adds
    chunk ``k`` and times only the library calls."""

    def __init__(self, kind: str, spec: dict) -> None:
        self.kind, self.prefix, self.seed = kind, spec["prefix"], spec["seed"]
        self.counts = chunk_counts(spec["items"])
        if kind == "mcore":
            import torch
            from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder

            self.builder = IndexedDatasetBuilder(self.prefix + ".bin", dtype=np.uint16)
            self._torch = torch
        else:
            from tokenmill.store import IndexedWriter

            self.writer = IndexedWriter(self.prefix, layout="megatron", vocab_size=VOCAB)
        self.inputs: object = self.prepare(*make_chunk(self.seed, 0, self.counts[0]))
        self.baseline = _status_bytes("VmRSS")
        self.reset_ok = reset_peak_rss()
        self.add_s = self.add_cpu = 0.0

    def prepare(self, lengths: np.ndarray, tokens: np.ndarray) -> object:
        """What each API takes: per-item tensors (megatron-core), per-item arrays, or the flat batch."""
        if self.kind == "tm-batched":
            return tokens, lengths
        views = np.split(tokens, np.cumsum(lengths)[:-1])
        if self.kind == "mcore":
            return [self._torch.from_numpy(view) for view in views]
        return views

    def feed(self, inputs: object) -> None:
        if self.kind == "mcore":
            builder = self.builder
            for tensor in inputs:  # type: ignore[attr-defined]
                builder.add_item(tensor)
                builder.end_document()
        elif self.kind == "tm-loop":
            writer = self.writer
            for view in inputs:  # type: ignore[attr-defined]
                writer.add_item(view)
                writer.end_document()
        else:
            self.writer.add_items(*inputs)  # type: ignore[misc]
            self.writer.end_document()  # no batched "one document per item" call exists: one per batch

    def step(self, k: int) -> float:
        if self.inputs is None:
            self.inputs = self.prepare(*make_chunk(self.seed, k, self.counts[k]))
        start, cpu = time.perf_counter(), time.process_time()
        self.feed(self.inputs)
        elapsed = time.perf_counter() - start
        self.add_cpu += time.process_time() - cpu
        self.inputs = None
        self.add_s += elapsed
        return elapsed

    def finish(self) -> dict:
        start, cpu = time.perf_counter(), time.process_time()
        if self.kind == "mcore":
            self.builder.finalize(self.prefix + ".idx")
        else:
            self.writer.finalize()
        finalize_s = time.perf_counter() - start
        return {
            "add_s": self.add_s,
            "finalize_s": finalize_s,
            "cpu_s": self.add_cpu + time.process_time() - cpu,
            "baseline_rss": self.baseline,
            "peak_rss": _status_bytes("VmHWM"),
            "peak_reset": self.reset_ok,
            "versions": _versions(self.kind),
        }


def _versions(kind: str) -> dict:
    out = {"python": platform.python_version(), "numpy": np.__version__}
    if kind.startswith("mcore"):
        import importlib.metadata

        import torch

        out["torch"] = torch.__version__
        out["megatron-core"] = importlib.metadata.version("megatron-core")
    return out


class ReadWorker:
    """Random batch reads with reader ``kind`` (mcore | tm); ``step(rep)`` times every method once, each on
    its own batch (negative reps are warm-up)."""

    def __init__(self, kind: str, spec: dict) -> None:
        self.kind, self.items, self.seed, self.batch = kind, spec["items"], spec["seed"], spec["batch"]
        if kind == "mcore":
            from megatron.core.datasets.indexed_dataset import IndexedDataset as MegatronDataset

            ds = MegatronDataset(spec["prefix"])
        else:
            from tokenmill.store import IndexedDataset

            ds = IndexedDataset(spec["prefix"])
        self.methods: dict[str, Callable[[list[int], np.ndarray], object]] = {
            "loop": lambda lst, arr: [ds[i] for i in lst],
            "loop+concat": lambda lst, arr: np.concatenate([ds[i] for i in lst]),
        }
        if kind == "tm":
            self.methods["gather"] = lambda lst, arr: ds.gather(arr)
            self.methods["gather_padded"] = lambda lst, arr: ds.gather_padded(arr, 0)

        # Same indices -> same tokens in both libraries (the caller compares the digests).
        check = batch_indices(self.seed, "gather", -1000, self.items, self.batch)
        reference = np.concatenate([ds[i] for i in check.tolist()])
        self.digest = hashlib.sha256(reference.tobytes()).hexdigest()
        if kind == "tm":
            flat, offsets = ds.gather(check)
            padded = ds.gather_padded(check, 0)
            mask = np.arange(padded.shape[1]) < np.diff(offsets)[:, None]
            if not (np.array_equal(flat, reference) and np.array_equal(padded[mask], reference)):
                raise RuntimeError("tokenmill gather/gather_padded disagree with its per-item reads")

    def step(self, rep: int) -> dict[str, list[float]]:
        """{method: [wall seconds, CPU seconds]} for one batch per method."""
        names = list(self.methods)
        shift = rep % len(names)
        times = {}
        for name in names[shift:] + names[:shift]:  # rotate so that no method always goes first
            indices = batch_indices(self.seed, name, rep, self.items, self.batch)
            as_list = indices.tolist()
            start, cpu = time.perf_counter(), time.process_time()
            self.methods[name](as_list, indices)
            times[name] = [time.perf_counter() - start, time.process_time() - cpu]
        return times

    def finish(self) -> dict:
        return {"digest": self.digest, "versions": _versions(self.kind)}


# ---------------------------------------------------------------- orchestration
def machine() -> dict:
    """What the figures were measured on."""
    model = "unknown"
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    ram = 0
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                ram = int(line.split()[1]) * 1024
    return {
        "cpu": model,
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "ram_gib": round(ram / 2**30, 1),
        "kernel": platform.release(),
        "load_start": os.getloadavg(),
    }


def same_bytes(a: Path, b: Path, block: int = 16 << 20) -> bool:
    """True when two files are byte-identical."""
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(block), fb.read(block)
            if x != y:
                return False
            if not x:
                return True


def warm(path: Path, block: int = 16 << 20) -> None:
    """Read a file end to end so that it sits in the page cache."""
    with open(path, "rb") as handle:
        while handle.read(block):
            pass


def start_workers(role: str, plan: list[tuple[str, str]], spec: dict) -> dict[str, _peer.LockstepWorker]:
    """Start one lockstep worker per (kind, interpreter); set-up (imports, opening files) is not timed."""
    workers: dict[str, _peer.LockstepWorker] = {}
    try:
        for kind, python in plan:
            print(f"  starting {role} worker {kind}", file=sys.stderr, flush=True)
            kind_spec = {**spec, "prefix": str(Path(spec["prefix"]) / kind)} if role == "write" else spec
            args = [SCRIPT, "--worker", role, kind, json.dumps(kind_spec)]
            workers[kind] = _peer.LockstepWorker(python, args, what=f"{role} worker {kind}")
    except BaseException:
        for worker in workers.values():
            worker.kill()
        raise
    return workers


def lockstep(workers: dict[str, _peer.LockstepWorker], steps: range, label: str) -> dict[str, list]:
    """Run every step in every worker, one at a time, rotating who goes first; return each worker's replies."""
    replies: dict[str, list] = {kind: [] for kind in workers}
    kinds = list(workers)
    began = time.perf_counter()
    try:
        for number, step in enumerate(steps):
            shift = number % len(kinds)
            for kind in kinds[shift:] + kinds[:shift]:
                replies[kind].append(workers[kind].step(step))
            if (number + 1) % 10 == 0 or number + 1 == len(steps):
                print(
                    f"  {label}: {number + 1}/{len(steps)} steps, {time.perf_counter() - began:.0f}s",
                    file=sys.stderr,
                    flush=True,
                )
    except BaseException:
        for worker in workers.values():
            worker.kill()
        raise
    return replies


def fmt_rate(value: float) -> str:
    return f"{value / 1e6:.2f} M" if value >= 1e6 else f"{value / 1e3:.0f} k"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000_000, help="items to write (default 10M)")
    parser.add_argument("--quick", action="store_true", help="200k items (a smoke run)")
    parser.add_argument("--reps", type=int, default=25, help="timed random batches per read method")
    parser.add_argument("--warmup", type=int, default=3, help="untimed batches per read method first")
    parser.add_argument("--batch", type=int, default=BATCH, help="items per random batch")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--workdir", help="where the temporary stores go (default: the system temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the written stores")
    parser.add_argument("--json", help="also write all figures to this JSON file")
    parser.add_argument("--worker", nargs=3, metavar=("ROLE", "KIND", "SPEC"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        role, kind, spec = args.worker
        _peer.serve((WriteWorker if role == "write" else ReadWorker)(kind, json.loads(spec)))
        return 0

    items = 200_000 if args.quick else args.items
    mcore = _peer.peer_python("megatron")
    if mcore is None:
        print(f"megatron-core is needed for the side-by-side run: {_peer.how_to_get('megatron')}", file=sys.stderr)
        return 2
    ours = sys.executable
    info = machine()

    workdir = Path(tempfile.mkdtemp(prefix="tokenmill-bench-", dir=args.workdir))
    try:
        counts = chunk_counts(items)
        n_tokens = sum(int(make_chunk(args.seed, k, c)[0].sum()) for k, c in enumerate(counts))
        bin_bytes = 2 * n_tokens
        need = 3 * bin_bytes + 3 * 20 * items
        free = shutil.disk_usage(workdir).free
        if free < need * 1.1:
            print(
                f"{workdir}: {free / 2**30:.1f} GiB free, the run needs ~{need / 2**30:.1f} GiB; use --workdir",
                file=sys.stderr,
            )
            return 2
        print(f"bench_store: {items:,} items, {n_tokens:,} tokens, in {workdir}", file=sys.stderr)

        # Write: the three writers take turns chunk by chunk, so that they see the same machine load.
        plan = [("mcore", mcore), ("tm-loop", ours), ("tm-batched", ours)]
        workers = start_workers("write", plan, {"prefix": str(workdir), "items": items, "seed": args.seed})
        lockstep(workers, range(len(counts)), "write")
        writes = {}
        for kind, worker in workers.items():
            print(f"  finalizing {kind}", file=sys.stderr, flush=True)
            writes[kind] = worker.finish()

        identical = {
            "tm-loop .bin == megatron .bin": same_bytes(workdir / "tm-loop.bin", workdir / "mcore.bin"),
            "tm-loop .idx == megatron .idx": same_bytes(workdir / "tm-loop.idx", workdir / "mcore.idx"),
            "tm-batched .bin == megatron .bin": same_bytes(workdir / "tm-batched.bin", workdir / "mcore.bin"),
        }
        if not args.keep:
            for kind in ("mcore", "tm-batched"):
                for suffix in (".bin", ".idx"):
                    (workdir / f"{kind}{suffix}").unlink()

        # Read: both libraries open the very same files, read end to end first so that they sit in the page cache.
        prefix = workdir / "tm-loop"
        warm(prefix.with_suffix(".bin"))
        warm(prefix.with_suffix(".idx"))
        read_spec = {"prefix": str(prefix), "items": items, "seed": args.seed, "batch": args.batch}
        workers = start_workers("read", [("mcore", mcore), ("tm", ours)], read_spec)
        replies = lockstep(workers, range(-args.warmup, args.reps), "read")
        reads = {}
        for kind, worker in workers.items():
            reads[kind] = worker.finish()
            timed = replies[kind][args.warmup :]
            reads[kind]["times"] = {name: [rep[name] for rep in timed] for name in timed[0]}
        info["load_end"] = os.getloadavg()
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    report = render(info, items, n_tokens, bin_bytes, writes, reads, identical, args)
    print(report)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "machine": info,
                    "items": items,
                    "tokens": n_tokens,
                    "writes": writes,
                    "reads": reads,
                    "identical": identical,
                    "args": vars(args),
                },
                indent=2,
            )
            + "\n"
        )
    return 0


def render(
    info: dict,
    items: int,
    n_tokens: int,
    bin_bytes: int,
    writes: dict,
    reads: dict,
    identical: dict,
    args: argparse.Namespace,
) -> str:
    """The markdown report: machine, write table, read table, targets."""
    versions = {**writes["tm-loop"]["versions"], **writes["mcore"]["versions"]}
    lines = [
        "## Token store benchmark (benchmarks/bench_store.py)\n",
        f"Machine: {info['cpu']}, {info['usable_cpus']} usable of {info['logical_cpus']} logical CPUs, "
        f"{info['ram_gib']} GiB RAM, Linux {info['kernel']}; load average {info['load_start'][0]:.2f} at start, "
        f"{info['load_end'][0]:.2f} at end (shared with other jobs). "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + ".",
        f"\nData: {items:,} items, lengths uniform in 1..{MAX_LEN}, {n_tokens:,} uint16 tokens "
        f"({bin_bytes / 1e6:,.0f} MB .bin), vocab {VOCAB}, seed {args.seed}.\n",
        "### Write (Megatron layout, one document per item)\n",
        "| writer | add s | finalize s | total s | CPU s | items/s | MB/s | peak RSS growth | bytes/item "
        "| vs megatron-core |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    names = {
        "mcore": "megatron-core IndexedDatasetBuilder: add_item(tensor) + end_document",
        "tm-loop": "tokenmill IndexedWriter: add_item + end_document",
        "tm-batched": "tokenmill IndexedWriter: add_items (100k-item batches)",
    }
    total = {kind: r["add_s"] + r["finalize_s"] for kind, r in writes.items()}
    for kind, result in writes.items():
        growth = result["peak_rss"] - result["baseline_rss"]
        lines.append(
            f"| {names[kind]} | {result['add_s']:.2f} | {result['finalize_s']:.2f} | {total[kind]:.2f} | "
            f"{result['cpu_s']:.2f} | {fmt_rate(items / total[kind])} | {bin_bytes / 1e6 / total[kind]:,.0f} | "
            f"{growth / 2**20:,.0f} MiB | {growth / items:.1f} | {total['mcore'] / total[kind]:.2f}x |"
        )
    lines.append(
        "\nWall-clock times of the library calls only (generating items and building per-item arrays/tensors "
        "is not timed); the three writers take turns chunk by chunk (100k items) so that they see the same "
        "machine load. tokenmill's finalize fsyncs both files and renames them into place (atomic write); "
        "megatron-core's only closes them. Peak RSS growth = VmHWM minus RSS after set-up (one 100k-item input "
        "chunk included). The batched path ends one document per batch (there is no batched "
        "one-document-per-item call), so its .idx has fewer document indices; its .bin is the same. Byte checks: "
        + "; ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in identical.items())
        + ".\n"
    )

    wall = {
        (kind, name): statistics.median(v[0] for v in values)
        for kind, result in reads.items()
        for name, values in result["times"].items()
    }
    cpu = {
        (kind, name): statistics.median(v[1] for v in values)
        for kind, result in reads.items()
        for name, values in result["times"].items()
    }
    lines += [
        f"### Random reads: {args.batch}-item batches, medians of {args.reps} batches (same warm files)\n",
        "| reader | method | wall ms/batch | CPU ms/batch | items/s | vs megatron-core ds[i] loop "
        "| vs tokenmill ds[i] loop |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    labels = {
        "loop": "loop of ds[i]",
        "loop+concat": "loop of ds[i] + np.concatenate",
        "gather": "gather (flat + offsets)",
        "gather_padded": "gather_padded (matrix)",
    }
    for (kind, name), median in wall.items():
        lines.append(
            f"| {'megatron-core' if kind == 'mcore' else 'tokenmill'} | {labels[name]} | {median * 1e3:.2f} | "
            f"{cpu[kind, name] * 1e3:.2f} | {fmt_rate(args.batch / median)} | "
            f"{wall['mcore', 'loop'] / median:.1f}x | {wall['tm', 'loop'] / median:.1f}x |"
        )
    same = reads["mcore"]["digest"] == reads["tm"]["digest"]
    lines.append(
        "\nBoth readers open the same .bin/.idx (written by tokenmill's per-item writer, byte-identical to "
        "megatron-core's), read end to end once before this phase so that both hit the page cache; the two "
        "reader processes take turns batch by batch. Every timed call gets a fresh random batch (the same "
        "indices for the same method in both libraries), so first-touch page faults weigh alike on every "
        "method that reads tokens. `ds[i]` returns a view in both libraries (no tokens copied); gather copies "
        f"the tokens into one array. Same tokens from both libraries for a check batch: {'yes' if same else 'NO'}.\n"
    )

    rows = [
        (
            "writer, batched add_items, vs megatron-core builder",
            total["mcore"] / total["tm-batched"],
            writes["mcore"]["cpu_s"] / writes["tm-batched"]["cpu_s"],
            5,
        ),
        (
            "writer, per-item add_item, vs megatron-core builder",
            total["mcore"] / total["tm-loop"],
            writes["mcore"]["cpu_s"] / writes["tm-loop"]["cpu_s"],
            5,
        ),
    ]
    for baseline, label in (
        (("mcore", "loop"), "megatron-core loop of ds[i]"),
        (("tm", "loop"), "tokenmill loop of ds[i]"),
    ):
        for method in ("gather", "gather_padded"):
            rows.append(
                (f"{method} vs {label}", wall[baseline] / wall["tm", method], cpu[baseline] / cpu["tm", method], 20)
            )
    lines += [
        "### Against the issue's targets\n",
        "| measure | ratio (wall) | ratio (CPU time) | target | met |",
        "|---|---:|---:|---:|---|",
    ]
    for label, ratio, cpu_ratio, target in rows:
        met = "yes" if ratio >= target else "no"
        lines.append(f"| {label} | {ratio:.1f}x | {cpu_ratio:.1f}x | >= {target}x | {met} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
