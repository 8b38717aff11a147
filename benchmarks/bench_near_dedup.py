"""Near-dedup (``prepare --near-dedup``): MB/s per core and peak RSS per process across corpus sizes, and
side by side with datatrove's MinHash pipeline on the same documents (time, RSS, clusters, and whether each
one's output changes with its task count).

The documents (``near_dup_corpus.py``): fresh English-like text, ~2.3 kB per document, 10% of them
near-duplicates of an earlier one (character edits, a date, whitespace, a boilerplate line), in 4 JSONL
shards. tokenmill runs ``prepare --tokenizer none --no-dedup --workers 1`` with and without
``--near-dedup``: near-dedup's cost is the difference of the two runs' CPU seconds (one core), its memory
the peak RSS of the largest process of the run with it. datatrove runs its four MinHash stages at its
defaults (5-grams, 14 x 8, the same as tokenmill's) in its own venv, ``workers=1``; its signature step is
~50x slower than ours here, so it runs on the smaller ``--peer-megabytes`` corpus.

    python benchmarks/bench_near_dedup.py --megabytes '' --peer-megabytes 40 --tasks 1,2  # side by side, ~10 min
    python benchmarks/bench_near_dedup.py --megabytes 1000,2000 --without-upto 1000 --no-peer  # tens of minutes
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _procstat import run_measured
from near_dup_corpus import jsonl_shards

HERE = Path(__file__).resolve().parent
DATATROVE = Path.home() / ".cache" / "tokenmill-peers" / "datatrove" / "bin" / "python"


def tokenmill_run(files: list[Path], destdir: Path, near: bool, tasks: int) -> dict:
    """One measured ``prepare`` run; its figures and the input texts it dropped as near-duplicates."""
    config = destdir.with_suffix(".json")
    config.write_text(json.dumps({
        "source_lang": "en", "trainpref": [str(f) for f in files], "input_format": "jsonl", "source_key": "text",
        "tokenizer": "none", "dedup": False, "near_dedup": near, "workers": 1, "tasks": tasks,
        "destdir": str(destdir)}))
    measured = run_measured([sys.executable, "-m", "tokenmill", "prepare", "-c", str(config), "-q", "--no-report"])
    manifest = json.loads((destdir / "manifest.json").read_text())
    clean = manifest["summary"]["splits"]["train"]["clean"] if "summary" in manifest else {}
    return {"seconds": measured.seconds, "cpu": measured.cpu_s, "rss": measured.process_peak_mb,
            "clean_s": manifest["run"]["stages"]["clean.train"]["seconds"], "near": clean.get("near_dedup", {}),
            "removed": removed_texts(files, destdir), "bin": (destdir / "train.en-None.en.bin").exists()}


def removed_texts(files: list[Path], destdir: Path) -> list[str]:
    """sha1 of the input text of every dropped document (as datatrove's worker names its removed ones)."""
    numbers = []
    for part in sorted(p for p in (destdir / ".work" / "tasks" / "clean.train").glob("0*") if p.is_dir()):
        numbers += np.fromfile(part / "numbers.raw", dtype=np.int64)[np.load(part / "gone.npy")].tolist()
    wanted, found, line = set(numbers), [], 0
    for path in files:
        with open(path, encoding="utf-8") as handle:
            for raw in handle:
                line += 1
                if line in wanted:
                    found.append(hashlib.sha1(json.loads(raw)["text"].encode()).hexdigest())
    return sorted(found)


def published(destdir: Path) -> bytes:
    """The published token store's bytes (the output a task count must not change)."""
    return b"".join(p.read_bytes() for p in sorted(destdir.glob("*.bin")) + sorted(destdir.glob("*.idx")))


def datatrove_run(files: list[Path], work: Path, tasks: int) -> dict:
    measured = run_measured([str(DATATROVE), str(HERE / "datatrove_minhash.py"), str(files[0].parent), str(work),
                             str(tasks)])
    line = next(x for x in measured.stdout.splitlines() if x.startswith("RESULT:"))
    return {**json.loads(line.removeprefix("RESULT:")), "wall": measured.seconds, "cpu": measured.cpu_s,
            "rss": measured.process_peak_mb}


def size_rows(sizes: list[float], scratch: Path, without_upto: float) -> None:
    """One row per corpus size; the run without near-dedup (for its CPU cost) only up to ``without_upto`` MB."""
    print("| corpus | documents dropped (clusters) | prepare CPU s (wall s) with / without | near-dedup CPU s | "
          "MB/s per core | clean.train s with / without | peak RSS per process with / without |\n"
          "|---|---|---|---|---|---|---|", flush=True)
    for megabytes in sizes:
        files = jsonl_shards(megabytes)
        mb = sum(f.stat().st_size for f in files) / 1e6
        on = tokenmill_run(files, scratch / f"on{megabytes:g}", True, 1)
        shutil.rmtree(scratch / f"on{megabytes:g}")
        off = {"cpu": float("nan"), "clean_s": float("nan"), "rss": float("nan")}
        if megabytes <= without_upto:
            off = tokenmill_run(files, scratch / f"off{megabytes:g}", False, 1)
            shutil.rmtree(scratch / f"off{megabytes:g}")
        cost = on["cpu"] - off["cpu"]
        print(f"| {mb:.0f} MB | {on['near']['near_duplicates']} ({on['near']['clusters']}) | {on['cpu']:.1f} "
              f"({on['seconds']:.0f}) / {off['cpu']:.1f} ({off.get('seconds', float('nan')):.0f}) | {cost:.1f} | "
              f"{mb / cost:.1f} | {on['clean_s']:.1f} / {off['clean_s']:.1f} | {on['rss']:.0f} / {off['rss']:.0f} MB |",
              flush=True)


def peer_rows(megabytes: float, tasks: list[int], scratch: Path) -> None:
    files = jsonl_shards(megabytes)
    mb = sum(f.stat().st_size for f in files) / 1e6
    ours = {t: tokenmill_run(files, scratch / f"peer_on{t}", True, t) for t in tasks}
    off = tokenmill_run(files, scratch / "peer_off", False, tasks[0])
    same_ours = len({published(scratch / f"peer_on{t}") for t in tasks}) == 1
    if not DATATROVE.exists():
        print(f"datatrove's venv is missing ({DATATROVE}): its rows are left out")
        return
    theirs = {t: datatrove_run(files, scratch / f"dt{t}", t) for t in tasks}
    same_theirs = len({r["removed_digest"] for r in theirs.values()}) == 1
    first, peer = ours[tasks[0]], theirs[tasks[0]]
    agree = len(set(first["removed"]) & set(peer["removed_texts"]))
    print(f"\n{mb:.1f} MB, {len(files)} shards; tasks {tasks}; tokenmill without --near-dedup: {off['cpu']:.1f} CPU s, "
          f"{off['seconds']:.1f} s wall\n")
    print("| tasks | tokenmill wall s / CPU s / near-dedup CPU s (MB/s per core) / peak RSS per process | "
          "datatrove 0.10 wall s / CPU s (MB/s per core) / peak RSS per process, same run |\n|---|---|---|")
    for t in tasks:
        cost = ours[t]["cpu"] - off["cpu"]
        print(f"| {t} | {ours[t]['seconds']:.1f} / {ours[t]['cpu']:.1f} / {cost:.1f} ({mb / cost:.2f}) / "
              f"{ours[t]['rss']:.0f} MB | {theirs[t]['wall']:.1f} / {theirs[t]['cpu']:.1f} "
              f"({mb / theirs[t]['cpu']:.2f}) / {theirs[t]['rss']:.0f} MB "
              f"({', '.join(f'{k} {v:.1f}' for k, v in theirs[t]['seconds'].items())}) |")
    for t in tasks:
        print(f"| documents removed (clusters), {t} task(s) | {ours[t]['near']['near_duplicates']} "
              f"({ours[t]['near']['clusters']}) | {theirs[t]['removed']} ({theirs[t]['clusters']}) |")
    print(f"| removed by both ({tasks[0]} task) | {agree} | {agree} |")
    print(f"| output the same for tasks {tasks} | {same_ours} | {same_theirs} |", flush=True)


def phase_rss(sizes: list[float], scratch: Path) -> None:
    """Peak RSS of the processes near-dedup runs in, apart from the rest of prepare: the Slurm engine's
    phases run one at a time (``plan``; ``clean --task 0``: the task that signs every item; ``tokenizer``:
    the coordinator's merge that settles the clusters, and with ``--tokenizer none`` the later stages)."""
    print("\n| corpus | clean task peak RSS with / without | clean task CPU s (wall s) with / without | merge "
          "phase peak RSS with / without |\n|---|---|---|---|")
    for megabytes in sizes:
        files = jsonl_shards(megabytes)
        rows = {}
        for near in (True, False):
            destdir = scratch / f"phase{megabytes:g}{near}"
            config = destdir.with_suffix(".json")
            config.write_text(json.dumps({
                "source_lang": "en", "trainpref": [str(f) for f in files], "input_format": "jsonl",
                "source_key": "text", "tokenizer": "none", "dedup": False, "near_dedup": near, "workers": 1,
                "tasks": 1, "engine": "slurm", "destdir": str(destdir)}))
            base = [sys.executable, "-m", "tokenmill", "prepare", "-c", str(config), "-q", "--no-report", "--phase"]
            run_measured([*base, "plan"])
            task = run_measured([*base, "clean", "--task", "0"])
            merge = run_measured([*base, "tokenizer"])
            rows[near] = (task.process_peak_mb, task.cpu_s, merge.process_peak_mb, task.seconds)
            shutil.rmtree(destdir)
        on, off = rows[True], rows[False]
        print(f"| {megabytes:g} MB | {on[0]:.0f} / {off[0]:.0f} MB | {on[1]:.1f} ({on[3]:.0f}) / {off[1]:.1f} "
              f"({off[3]:.0f}) | "
              f"{on[2]:.0f} / {off[2]:.0f} MB |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", default="50,100,200", help="corpus sizes for tokenmill's MB/s and RSS")
    parser.add_argument("--peer-megabytes", type=float, default=5.0, help="corpus size of the datatrove comparison")
    parser.add_argument("--tasks", default="1,2", help="task counts whose outputs are compared")
    parser.add_argument("--phases-only", action="store_true", help="only the per-phase RSS rows")
    parser.add_argument("--without-upto", type=float, default=float("inf"),
                        help="the run without --near-dedup (its CPU cost) only at sizes up to this many MB")
    parser.add_argument("--no-peer", action="store_true", help="no datatrove comparison")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="near-bench-") as scratch:
        if args.phases_only:
            phase_rss([float(x) for x in args.megabytes.split(",")], Path(scratch))
            return
        if args.megabytes:
            size_rows([float(x) for x in args.megabytes.split(",")], Path(scratch), args.without_upto)
        if not args.no_peer:
            peer_rows(args.peer_megabytes, [int(x) for x in args.tasks.split(",")], Path(scratch))


if __name__ == "__main__":
    main()
