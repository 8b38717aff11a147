"""`tokenmill prepare` cut into tasks: local engine (plain, 1 task, 2 tasks), Ray on a two-node cluster,
peak RSS per process from 1M to 8M pairs, a projection to 1B pairs, and datatrove's tokenization step
side by side (wall, RSS, and whether its token stream changes with its task count).

Corpus (``dist_corpus.py``, generated into ``/tmp/bench_distributed``): real-looking English-Chinese
pairs, ~20% exact duplicates (most far back, in another task), leaks of valid/test, empty sides and
whitespace dirt; 3,000 valid and 3,000 test pairs. The smaller corpora are the first pairs of the
largest. A 32k joined SentencePiece model is trained once by ``tokenmill prepare`` on the first 200k
pairs (``--input-sentence-size 300000``; cached in ``benchmarks/.data/distributed``; not timed) and
given with ``--spm-model`` to every timed run, so the tokenizer stage only copies it. Every run: dedup on
(the default), ``--joined-dictionary``, ``--workers 2``, ``--no-report``, a fresh process and output.

Runs (each measured: wall, CPU of every process, RSS of every process sampled every 0.2 s from /proc):

* ``plain``: ``--tasks 0``, forced onto the one-process path at every size (the local engine's ``bytes_per_task`` is
  raised in the process that runs the CLI: at 8M pairs the input is over 1 GiB and ``--tasks 0`` would
  otherwise pick 2 tasks);
* ``local xN``: ``--tasks N --engine local`` (tasks one after another, each in a process of its own that
  a helper started per tasked stage forks (``tokenmill.prepare.task_process``), each using both cores:
  forked cleaning workers, 2 tokenizer threads);
* ``ray xN``: ``--tasks N --engine ray --ray-address HEAD`` on a head and a second node started with
  ``ray start`` (``--cpus-per-node`` CPUs each) inside a network namespace this script makes (a veth
  pair, 10.254.0.1/24, default route on it) and removes; the driver runs in it too, so no traffic
  reaches the machine's external address. The cluster's processes are stopped by pid (those the
  namespace holds), never by name.

Peak RSS is per process (the coordinator, the local engine's helper, each task process and its forked
cleaning workers, each Ray worker), with its anonymous part (statm's resident minus shared: without
file-backed pages such as memory-mapped files); the coordinator's is also split by stage (its ``stage X:
running`` log lines; after the last stage's recorded seconds: ``finish``, the manifest and publishing).
``dist_trace_stages.py`` shows where a stage's allocations go (tracemalloc), e.g. for the coordinator's
phases of a tasked run.

Every output is compared file by file with the plain run of the same size (every ``.bin``, ``.idx``,
dictionary, model and log; the manifest without its ``settings`` and ``run`` keys).

Side by side with datatrove (``datatrove_tokenize.py`` in ``.peers/datatrove``): ``--lm-mb`` MB of JSONL in
``--lm-shards`` files (``tok_corpus.jsonl_corpus``) and the 32k byte-level BPE ``tokenizer.json`` of
bench_lm_prepare.py; ours is ``tokenmill prepare --input ... --tokenizer-type HuggingFaceTokenizer
--tokenizer-model tokenizer.json --append-eod --tasks N`` for N in 0 (plain), 1, 2, 4, datatrove's
``JsonlReader -> DocumentTokenizer`` with 1, 2, 4 tasks unshuffled and with its default (shuffled,
unseeded) at 1 task twice and 2 tasks. Token streams (tasks concatenated in task order) are compared.

    python benchmarks/bench_distributed.py          # 4M engines, 1M/4M/8M RSS, 100 MB LM (~35 min here; root for Ray)
    python benchmarks/bench_distributed.py --parts rss-tasked --rss-pairs 1000000,8000000   # tasked RSS only
    python benchmarks/bench_distributed.py --quick  # 200k pairs, 10 MB: a smoke run (~5 min)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _datatrove_out import load_stream  # noqa: E402
from _peer import how_to_get, peer_python  # noqa: E402
from _procstat import PAGE, TICK, _children  # noqa: E402
from dist_corpus import prefix_corpus, write_corpus  # noqa: E402

sys.path.insert(0, str(HERE.parent))
from tests.ray_cluster import namespace_pids, two_node_ray  # noqa: E402

ROOT = Path(os.environ.get("TOKENMILL_BENCH_DIR", "/tmp/bench_distributed"))
CACHE = HERE / ".data" / "distributed"
HWM_FILE = "TOKENMILL_BENCH_HWM"
EXIT_HWM = ("import atexit, os; "  # the coordinator writes its exact peak RSS (VmHWM) to $TOKENMILL_BENCH_HWM
            "atexit.register(lambda: os.environ.get('TOKENMILL_BENCH_HWM') and open("
            "os.environ['TOKENMILL_BENCH_HWM'], 'w').write("
            "next(line for line in open('/proc/self/status') if line.startswith('VmHWM')))); ")
TASKED = EXIT_HWM + "import sys; from tokenmill.cli import main; sys.argv[0] = 'tokenmill'; main()"
PLAIN = (EXIT_HWM + "import importlib, sys; "
         "importlib.import_module('tokenmill.prepare.engines').engine_part('local').bytes_per_task = 1 << 62; "
         "from tokenmill.cli import main; sys.argv[0] = 'tokenmill'; main()")
STAGE = re.compile(r"^stage (\S+): running")
MB = 2**20


# ---------------------------------------------------------------- measuring a process tree
class Watch:
    """Runs a command and samples, every ``interval`` s, the RSS and CPU of each process under it and
    under ``extra_roots`` (a Ray cluster's processes); the command's stderr lines ``stage X: running``
    mark where the coordinator (the command's own process) is, so its RSS is known per stage."""

    def __init__(self, cmd: list[str], *, extra_roots: list[int] = (), env: dict | None = None,
                 interval: float = 0.2) -> None:
        self.cmd, self.extra_roots, self.env, self.interval = cmd, list(extra_roots), env, interval
        self.peak: dict[int, int] = {}
        self.peak_anon: dict[int, int] = {}  # resident minus file-backed/shared pages (statm)
        self.cpu: dict[int, float] = {}
        self.names: dict[int, set[str]] = {}
        self.depth: dict[int, int] = {}  # generations below the coordinator (1: its children)
        self.helper_tree: set[int] = set()  # the local engine's task helper and what it forks
        self.under_coordinator: set[int] = set()
        self.series: list[tuple[float, int, int]] = []  # (time, coordinator RSS, its anonymous part)
        self.hwm_series: list[tuple[float, int]] = []  # (time, the coordinator's VmHWM so far)
        self.events: list[tuple[float, str]] = []  # (time, stage started)
        self.tree_peak = 0
        self.stderr: list[str] = []

    def _walk(self, root: int) -> list[int]:
        out, stack, seen = [], [(root, 0)], set()
        while stack:
            p, depth = stack.pop()
            if p in seen:
                continue
            seen.add(p)
            out.append(p)
            if root not in self.extra_roots:
                self.depth.setdefault(p, depth)
            stack += [(c, depth + 1) for c in _children(p)]
        return out

    def _sample(self, coordinator: int, start: float) -> None:
        total = 0
        mine = self._walk(coordinator)
        self.under_coordinator.update(mine)
        pids = set(mine)
        for root in self.extra_roots:
            pids.update(self._walk(root))
        for p in pids:
            try:
                with open(f"/proc/{p}/statm") as handle:
                    statm = handle.read().split()
                rss, anon = int(statm[1]) * PAGE, (int(statm[1]) - int(statm[2])) * PAGE
                with open(f"/proc/{p}/status") as handle:  # the kernel's high-water mark: no peak between samples
                    hwm = next((int(line.split()[1]) * 1024 for line in handle if line.startswith("VmHWM")), 0)
                with open(f"/proc/{p}/stat") as handle:
                    fields = handle.read().rpartition(")")[2].split()
                with open(f"/proc/{p}/cmdline", "rb") as handle:
                    command = handle.read()
                    name = command.split(b"\0")[0].decode(errors="replace")
                if b"tokenmill.prepare.task_process" in command:
                    self.helper_tree.add(p)
            except (OSError, IndexError, ValueError):
                continue
            total += rss
            self.peak[p] = max(self.peak.get(p, 0), rss, hwm)
            self.peak_anon[p] = max(self.peak_anon.get(p, 0), anon)
            self.cpu[p] = max(self.cpu.get(p, 0.0), (int(fields[11]) + int(fields[12])) / TICK)
            self.names.setdefault(p, set()).add(os.path.basename(name)[:40])
            if p == coordinator:
                self.series.append((time.perf_counter() - start, rss, anon))
                self.hwm_series.append((self.series[-1][0], hwm))
        self.tree_peak = max(self.tree_peak, total)

    def run(self) -> dict[str, Any]:
        start = time.perf_counter()
        out = tempfile.TemporaryFile(mode="w+")
        proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.PIPE, text=True, env=self.env)
        done = threading.Event()

        def read_stderr() -> None:
            for line in proc.stderr:  # type: ignore[union-attr]
                match = STAGE.match(line)
                if match:
                    self.events.append((time.perf_counter() - start, match.group(1)))
                self.stderr.append(line)
                del self.stderr[:-200]

        def sample() -> None:
            while not done.is_set():
                self._sample(proc.pid, start)
                done.wait(self.interval)

        reader = threading.Thread(target=read_stderr, daemon=True)
        sampler = threading.Thread(target=sample, daemon=True)
        reader.start()
        sampler.start()
        proc.wait()
        seconds = time.perf_counter() - start
        done.set()
        sampler.join()
        reader.join()
        out.seek(0)
        stdout = out.read()
        if proc.returncode != 0:
            raise SystemExit(f"failed ({proc.returncode}): {' '.join(self.cmd)}\n{''.join(self.stderr)[-4000:]}")
        return {"seconds": seconds, "coordinator": proc.pid, "stdout": stdout}

    def coordinator_by_stage(self, merge_seconds: dict[str, float], anon: bool = False,
                             stage_seconds: dict[str, float] | None = None) -> dict[str, float]:
        """The coordinator's peak RSS (MB; ``anon``: its anonymous part, without file-backed pages such as
        memory-mapped files) in each stage (in order); a tasked stage's last ``merge_seconds`` are its
        merge, shown apart (``STAGE merge``); what follows the last stage's ``stage_seconds`` is ``finish``
        (the manifest's checksums and store checks, publishing)."""
        events = self.events
        ends = [t for t, _ in events[1:]] + [float("inf")]
        peaks: dict[str, float] = {}
        first = events[0][0] if events else float("inf")
        for t, total, anonymous in self.series:
            rss = anonymous if anon else total
            if t < first:
                label = "start-up"
            else:
                k = max(i for i, (s, _) in enumerate(events) if s <= t)
                label = events[k][1]
                ended = events[k][0] + (stage_seconds or {}).get(label, float("inf")) + self.interval
                if k == len(events) - 1 and t > ended:
                    peaks["finish"] = max(peaks.get("finish", 0.0), rss / MB)
                    continue
                merge = merge_seconds.get(label)
                if merge is not None and ends[k] != float("inf") and t >= ends[k] - merge - self.interval:
                    label = f"{label} merge"
            peaks[label] = max(peaks.get(label, 0.0), rss / MB)
        return peaks

    def hwm_before_finish(self, stage_seconds: dict[str, float]) -> float | None:
        """The coordinator's exact peak RSS (MB, the kernel's VmHWM) up to the end of its last stage, i.e.
        without ``finish``; None when no sample falls after that stage's end."""
        if not self.events:
            return None
        start, last = self.events[-1]
        ended = start + stage_seconds.get(last, float("inf"))
        before = [hwm for t, hwm in self.hwm_series if t <= ended]
        after = [t for t, _ in self.hwm_series if t > ended]
        return max(before) / MB if before and after else None


# ---------------------------------------------------------------- outputs
def digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def output_files(folder: Path) -> dict[str, Path]:
    """The published files (the manifest and report apart), by relative path."""
    files = {}
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if path.is_file() and not any(part.startswith(".") for part in rel.parts) and rel.name not in (
                "manifest.json", "report.html"):
            files[rel.as_posix()] = path
    return files


def compare(reference: Path, other: Path) -> str:
    """'identical (N files)' or what differs. preprocess.log's title names the output folder: compared
    with each folder's path blanked (and its manifest entry left out)."""
    a, b = output_files(reference), output_files(other)
    if set(a) != set(b):
        return f"DIFFERENT file sets: {sorted(set(a) ^ set(b))}"
    differ = []
    for name in sorted(a):
        if name == "preprocess.log":
            texts = [f.read_text(encoding="utf-8").replace(str(folder), "DEST")
                     for f, folder in ((a[name], reference), (b[name], other))]
            if texts[0] != texts[1]:
                differ.append(name)
        elif a[name].stat().st_size != b[name].stat().st_size or digest(a[name]) != digest(b[name]):
            differ.append(name)
    ma, mb = (json.loads((f / "manifest.json").read_text(encoding="utf-8")) for f in (reference, other))
    for m in (ma, mb):
        m.pop("run", None), m.pop("settings", None), m.get("files", {}).pop("preprocess.log", None)
    if ma != mb:
        differ.append("manifest.json (outside settings/run)")
    return f"identical ({len(a)} files + manifest)" if not differ else f"DIFFERENT: {differ}"


def work_bytes(out: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in (out / ".work").rglob(pattern) if p.is_file() and "tasks" not in p.parts)


# ---------------------------------------------------------------- one prepare run
def spm_model(corpus8: Path, train_pairs: int) -> tuple[Path, dict]:
    """The 32k joined model (cached), trained by tokenmill prepare on the first ``train_pairs`` pairs."""
    CACHE.mkdir(parents=True, exist_ok=True)
    model, meta = CACHE / f"spm32000-{train_pairs}.model", CACHE / f"spm32000-{train_pairs}.json"
    if model.exists() and meta.exists():
        return model, json.loads(meta.read_text())
    small = prefix_corpus(corpus8, ROOT / "corpus" / f"spm-{train_pairs}", train_pairs)
    out = ROOT / "spm-train"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "tokenmill", "prepare", "-q", "--source-lang", "en", "--target-lang", "zh",
           "--trainpref", str(small / "train"), "--destdir", str(out), "--vocab-size", "32000",
           "--input-sentence-size", "300000", "--joined-dictionary", "--no-report"]
    subprocess.run(cmd, check=True)
    stages = json.loads((out / "manifest.json").read_text())["run"]["stages"]
    info = {"train_pairs": train_pairs, "input_sentence_size": 300000, "tokenizer_s": stages["tokenizer"]["seconds"]}
    shutil.copyfile(out / "spm.model", model)
    meta.write_text(json.dumps(info))
    shutil.rmtree(out, ignore_errors=True)
    return model, info


def prepare_cmd(corpus: Path, out: Path, model: Path, *, tasks: int, engine: str = "local", plain: bool = False,
                ray_address: str | None = None) -> list[str]:
    head = [sys.executable, "-c", PLAIN if plain else TASKED]
    cmd = [*head, "prepare", "--source-lang", "en", "--target-lang", "zh", "--trainpref", str(corpus / "train"),
           "--validpref", str(corpus / "valid"), "--testpref", str(corpus / "test"), "--destdir", str(out),
           "--spm-model", str(model), "--joined-dictionary", "--workers", "2", "--tasks", str(tasks),
           "--engine", engine, "--no-report"]
    return cmd + (["--ray-address", ray_address] if ray_address else [])


def measure_prepare(name: str, cmd: list[str], out: Path, pairs: int, tasks: int, *,
                    extra_roots: list[int] = ()) -> dict[str, Any]:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        hwm_file = Path(folder) / "coordinator.hwm"
        watch = Watch(cmd, extra_roots=extra_roots, env={**os.environ, HWM_FILE: str(hwm_file)})
        result = watch.run()
        if hwm_file.exists():  # the coordinator's exact peak, its last moments included
            hwm = int(hwm_file.read_text().split()[1]) * 1024
            watch.peak[result["coordinator"]] = max(watch.peak.get(result["coordinator"], 0), hwm)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    run = manifest["run"]
    stages = {k: v["seconds"] for k, v in run["stages"].items()}
    merge = run.get("merge_seconds", {})
    coordinator = result["coordinator"]
    procs = []
    for pid, peak in watch.peak.items():
        names = sorted(watch.names.get(pid, {"?"}))
        depth = watch.depth.get(pid, 0)
        if pid == coordinator:
            role = "coordinator"
        elif pid in watch.helper_tree:  # the helper, the task processes it forks, their cleaning workers
            role = {1: "task helper", 2: "task process"}.get(depth, "task's forked cleaning worker")
        elif pid in watch.under_coordinator:
            role = "coordinator child (forked cleaning worker)"
        elif any(n.startswith("ray::") for n in names):
            role = "Ray worker (ran a task)" if any(n != "ray::IDLE" and n.startswith("ray::") for n in names) \
                else "Ray worker (idle)"
        else:
            role = "Ray system"
        procs.append({"pid": pid, "role": role, "names": names, "peak_mb": peak / MB,
                      "peak_anon_mb": watch.peak_anon.get(pid, 0) / MB, "cpu_s": watch.cpu.get(pid, 0)})
    by_role: dict[str, float] = {}
    anon_by_role: dict[str, float] = {}
    for p in procs:
        by_role[p["role"]] = max(by_role.get(p["role"], 0.0), p["peak_mb"])
        anon_by_role[p["role"]] = max(anon_by_role.get(p["role"], 0.0), p["peak_anon_mb"])
    task_rows = run.get("tasks", {})
    row = {
        "name": name, "pairs": pairs, "tasks": tasks, "seconds": result["seconds"], "load_before": load,
        "load_after": os.getloadavg()[0], "stages": stages, "merge_seconds": merge,
        "merge_share": sum(merge.values()) / result["seconds"],
        "other_s": result["seconds"] - sum(stages.values()),
        "cpu_s": sum(p["cpu_s"] for p in procs if p["role"] != "Ray system" and p["role"] != "Ray worker (idle)"),
        "tree_peak_mb": watch.tree_peak / MB, "peak_by_role_mb": by_role, "anon_peak_by_role_mb": anon_by_role,
        "largest_process_mb": max(p["peak_mb"] for p in procs if p["role"] != "Ray system"),
        "coordinator_by_stage_mb": watch.coordinator_by_stage(merge, stage_seconds=stages),
        "coordinator_hwm_before_finish_mb": watch.hwm_before_finish(stages),
        "coordinator_anon_by_stage_mb": watch.coordinator_by_stage(merge, anon=True, stage_seconds=stages),
        "task_rows": task_rows, "processes": procs, "path": "tasked" if task_rows else "one process",
        "kept_pairs": manifest["summary"]["splits"]["train"]["clean"]["kept"]["pairs"],
        "clean_bytes": work_bytes(out, "clean/train.*"), "ids_bytes": work_bytes(out, "ids/train.*"),
        "store_bytes": sum(p.stat().st_size for p in out.rglob("train.*.bin") if ".work" not in p.parts),
    }
    print(json.dumps({k: v for k, v in row.items() if k not in ("processes", "task_rows")}), file=sys.stderr)
    return row


# ---------------------------------------------------------------- datatrove side by side
def doc_multiset(tokens: np.ndarray, ends: np.ndarray) -> list[bytes]:
    starts = np.concatenate([[0], ends[:-1]])
    return sorted(hashlib.blake2b(tokens[s:e].tobytes(), digest_size=12).digest()
                  for s, e in zip(starts.tolist(), ends.tolist(), strict=True))


def lm_side(args: argparse.Namespace) -> dict[str, Any]:
    import bench_lm_prepare
    import tok_corpus

    from tokenmill.store import IndexedDataset

    data = ROOT / "lm-data"
    (data / "lm").mkdir(parents=True, exist_ok=True)
    pool = HERE / ".data" / "lm" / "pool-0.json"
    if pool.exists() and not (data / "lm" / pool.name).exists():
        shutil.copyfile(pool, data / "lm" / pool.name)
    tok_corpus.DATA = data  # the JSONL goes under the benchmark's temp folder
    files = tok_corpus.jsonl_corpus(args.lm_mb, shards=args.lm_shards)
    tokenizer = bench_lm_prepare.tokenizer_model(files[0], 32_000)  # cached in benchmarks/.data/lm
    mb = sum(f.stat().st_size for f in files) / 1e6
    runs: dict[str, dict[str, Any]] = {}
    work = ROOT / "lm-runs"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for tasks in (0, 1, 2, 4):
        out = work / f"ours-{tasks}"
        cmd = [sys.executable, "-m", "tokenmill", "prepare", "--input", str(files[0].parent / "part-*.jsonl"),
               "--output-prefix", str(out / "corpus"), "--json-keys", "text", "--tokenizer-type",
               "HuggingFaceTokenizer", "--tokenizer-model", str(tokenizer), "--append-eod", "--workers", "2",
               "--tasks", str(tasks), "--no-report"]
        load = os.getloadavg()[0]
        watch = Watch(cmd)
        result = watch.run()
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        runs[f"ours x{tasks}"] = {"seconds": result["seconds"], "load_before": load,
                                  "largest_process_mb": max(watch.peak.values()) / MB,
                                  "tree_peak_mb": watch.tree_peak / MB, "cpu_s": sum(watch.cpu.values()),
                                  "tasked": bool(manifest["run"].get("tasks"))}
        print(json.dumps({"side": f"ours x{tasks}", **runs[f"ours x{tasks}"]}), file=sys.stderr)
    for tasks in (1, 2, 4):
        runs[f"ours x{tasks}"]["same_as"] = f"ours x0: {compare(work / 'ours-0', work / f'ours-{tasks}')}"
    store = IndexedDataset(work / "ours-0" / "corpus_text_document")
    ours_tokens = np.asarray(store.tokens)
    ours_ends = np.cumsum(store.sizes.astype(np.int64))
    python = peer_python("datatrove")
    if python is None:
        print(f"datatrove peer missing ({how_to_get('datatrove')}); skipped", file=sys.stderr)
        return {"mb": mb, "documents": len(store), "tokens": len(ours_tokens), "runs": runs}
    dtype = np.dtype(np.uint16) if store.dtype == np.uint16 else np.dtype(np.uint32)
    streams: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    plan = [("unshuffled", 1, ""), ("unshuffled", 2, ""), ("unshuffled", 4, ""),
            ("shuffled (default)", 1, "a"), ("shuffled (default)", 1, "b"), ("shuffled (default)", 2, "")]
    for kind, tasks, tag in plan:
        name = f"datatrove {kind} x{tasks}{' run ' + tag if tag else ''}"
        out = work / f"dt-{kind.split()[0]}-{tasks}{tag}"
        cmd = [python, str(HERE / "datatrove_tokenize.py"), "--input-dir", str(files[0].parent),
               "--glob", "part-*.jsonl", "--tokenizer-model", str(tokenizer), "--output", str(out),
               "--tasks", str(tasks), "--workers", "2",
               *(["--shuffle"] if kind != "unshuffled" else [])]
        load = os.getloadavg()[0]
        watch = Watch(cmd, env=dict(os.environ, PYTHONWARNINGS="ignore"))
        result = watch.run()
        ds = sorted(out.glob("*.ds"))
        streams[name] = load_stream(ds, dtype)
        runs[name] = {"seconds": result["seconds"], "load_before": load,
                      "largest_process_mb": max(watch.peak.values()) / MB, "tree_peak_mb": watch.tree_peak / MB,
                      "cpu_s": sum(watch.cpu.values())}
        print(json.dumps({"side": name, **runs[name]}), file=sys.stderr)
        shutil.rmtree(out)
    ours_set = doc_multiset(ours_tokens, ours_ends)
    first = streams["datatrove unshuffled x1"]
    for name, (tokens, ends) in streams.items():
        same_ours = len(tokens) == len(ours_tokens) and np.array_equal(tokens, ours_tokens) \
            and np.array_equal(ends, ours_ends)
        same_first = len(tokens) == len(first[0]) and np.array_equal(tokens, first[0]) \
            and np.array_equal(ends, first[1])
        runs[name]["same_stream_as_ours"] = bool(same_ours)
        runs[name]["same_stream_as_datatrove_x1"] = bool(same_first)
        runs[name]["same_documents_as_ours"] = doc_multiset(tokens, ends) == ours_set
        if name.endswith(" run b"):  # the same settings again: does datatrove repeat itself?
            other = streams[name[: -len("b")] + "a"]
            runs[name]["same_stream_as_run_a"] = bool(len(tokens) == len(other[0]) and np.array_equal(tokens, other[0]))
    shutil.rmtree(work, ignore_errors=True)
    return {"mb": mb, "files": len(files), "documents": len(store), "tokens": len(ours_tokens), "runs": runs}


# ---------------------------------------------------------------- the projection
def _group(stage: str, tasked: set[str]) -> str | None:
    """The coordinator-side component a stage belongs to (None: the tasked stages, whose coordinator part is
    their merge, counted apart)."""
    if stage in tasked or stage == "clean.train" or stage.startswith("encode.train"):
        return None
    if stage.startswith("binarize.train"):
        return "binarize.train (one process)"
    if stage == "pieces.train":
        return "piece filters (item sizes)"
    if stage == "dictionary":
        return "dictionary"
    if stage == "tokenizer":
        return "tokenizer (given model: copied)"
    return "valid/test stages"


def _merge_group(stage: str) -> str:
    return {"clean.train": "clean merge (dedup, masks)"}.get(stage, f"{stage.split('.')[0]} merges")


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """(seconds per pair, fixed seconds) of a least-squares line (one size: the median ratio, no fixed part)."""
    if len(set(xs)) < 2:
        return float(np.median(np.array(ys) / np.array(xs))), 0.0
    slope, intercept = np.polyfit(xs, ys, 1)
    return float(slope), float(intercept)


def projection(rows: list[dict[str, Any]], tokenizer_s: float, target: float = 1e9) -> dict[str, Any]:
    """``target`` pairs on 64 and 512 cores. Tasks: the Ray run's per-task rates (one CPU per task, so
    lines per core-second), all cores busy. Everything else runs once, on the coordinator: each part
    (each stage's merge, the stages not cut into tasks, the time outside stages: start-up, the plan's
    counting pass, publishing) as a line fitted over every tasked run's seconds against its pairs."""
    ray = max((r for r in rows if r["name"].startswith("ray")), key=lambda r: r["pairs"])
    tasked = [r for r in rows if r["tasks"] >= 1]
    rates = {stage: sum(t["lines"] for t in task_rows) / sum(t["seconds"] for t in task_rows)
             for stage, task_rows in ray["task_rows"].items()}
    kept = ray["kept_pairs"] / ray["pairs"]
    # each tasked stage's task seconds (one CPU each) per input pair: what its tasks cost, however their
    # "lines" count (input pairs, kept pairs, newlines, indexed lines)
    per_pair = {stage: sum(t["seconds"] for t in task_rows) / ray["pairs"]
                for stage, task_rows in ray["task_rows"].items()}
    core_s_per_pair = sum(per_pair.values())
    biggest = max(tasked, key=lambda r: (r["pairs"], -r["tasks"]))
    clean_gbps = biggest["clean_bytes"] / biggest["merge_seconds"]["clean.train"] / 1e9
    binarize_s = sum(v for k, v in biggest["merge_seconds"].items() if k.startswith("binarize"))
    copy_gbps = biggest.get("store_bytes", 0) / binarize_s / 1e9 if binarize_s else None
    components: dict[str, list[float]] = {}
    for r in tasked:
        parts: dict[str, float] = {"outside stages": r["other_s"]}
        for stage, seconds in r["merge_seconds"].items():
            parts[_merge_group(stage)] = parts.get(_merge_group(stage), 0.0) + seconds
        for stage, seconds in r["stages"].items():
            group = _group(stage, set(r["task_rows"]))
            if group:
                parts[group] = parts.get(group, 0.0) + seconds
        for name, seconds in parts.items():
            components.setdefault(name, []).append(seconds)
    xs = [float(r["pairs"]) for r in tasked]
    fixed = ("valid/test stages", "tokenizer (given model: copied)")  # no work that grows with the training set
    fits = {name: (0.0, float(np.median(ys))) if name in fixed else _fit(xs, ys) for name, ys in components.items()}
    serial = {name: max(0.0, intercept + slope * target) for name, (slope, intercept) in fits.items()}
    out = {"target": target, "rates_lines_per_core_s": rates, "kept_share": kept, "core_s_per_pair": core_s_per_pair,
           "core_us_per_pair_by_stage": {stage: seconds * 1e6 for stage, seconds in per_pair.items()},
           "clean_merge_gbps": clean_gbps, "binarize_copy_gbps": copy_gbps, "merge_at": biggest["name"],
           "merge_pairs": biggest["pairs"], "fits_us_per_pair_and_fixed_s": {
               k: (slope * 1e6, intercept) for k, (slope, intercept) in fits.items()},
           "serial_s": serial, "tokenizer_train_s": tokenizer_s, "cores": {}}
    for cores in (64, 512):
        tasks_s = target * core_s_per_pair / cores
        out["cores"][cores] = {"tasks_s": tasks_s, "total_s": tasks_s + sum(serial.values()) + tokenizer_s}
    return out


# ---------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--main-pairs", type=int, default=4_000_000, help="size of the engine comparison")
    parser.add_argument("--rss-pairs", default="1000000,4000000,8000000", help="sizes of the RSS check")
    parser.add_argument("--pairs-per-task", type=int, default=1_000_000)
    parser.add_argument("--cpus-per-node", type=int, default=1)
    parser.add_argument("--spm-train-pairs", type=int, default=200_000)
    parser.add_argument("--lm-mb", type=float, default=100)
    parser.add_argument("--lm-shards", type=int, default=4)
    parser.add_argument("--parts", default="engines,rss,datatrove",
                        help="engines, rss, datatrove; rss-tasked: only the tasked runs of the RSS check")
    parser.add_argument("--only", default="", help="comma-separated run names to make (e.g. 'ray x4'); the plain "
                        "run is always made: the others are compared with it")
    parser.add_argument("--quick", action="store_true", help="200k pairs, 10 MB of JSONL")
    parser.add_argument("--keep", action="store_true", help=f"keep {ROOT}")
    parser.add_argument("--json", default=str(CACHE / "results.json"))
    args = parser.parse_args()
    if args.quick:
        args.main_pairs, args.rss_pairs, args.pairs_per_task, args.lm_mb = 200_000, "100000,200000", 100_000, 10
        args.spm_train_pairs = 100_000
    parts = args.parts.split(",")
    rss_sizes = [int(x) for x in args.rss_pairs.split(",")] if {"rss", "rss-tasked"} & set(parts) else []
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"machine: {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, load {os.getloadavg()}")
    started = time.perf_counter()
    results: dict[str, Any] = {"machine": {"cores": os.cpu_count(), "cpu": cpu}, "rows": []}
    ROOT.mkdir(parents=True, exist_ok=True)
    try:
        sizes = sorted(set(rss_sizes) | ({args.main_pairs} if "engines" in parts else set()))
        if sizes:
            biggest = max(sizes)
            t = time.perf_counter()
            full = write_corpus(ROOT / "corpus" / str(biggest), biggest)
            results["corpus_s"] = time.perf_counter() - t
            model, model_info = spm_model(full, args.spm_train_pairs)
            results["model"] = model_info
        for pairs in sizes:
            corpus = prefix_corpus(full, ROOT / "corpus" / str(pairs), pairs)
            results.setdefault("input_bytes", {})[pairs] = sum(
                (corpus / f"train.{lang}").stat().st_size for lang in ("en", "zh"))
            per_task = max(1, pairs // args.pairs_per_task)
            runs: list[tuple[str, int, str]] = [] if "rss-tasked" in parts else [("plain", 0, "plain")]
            if pairs == args.main_pairs and "engines" in parts:
                runs += [("local x1", 1, "local"), ("local x2", 2, "local"), (f"ray x{per_task}", per_task, "ray")]
            if pairs in rss_sizes and per_task not in (r[1] for r in runs if r[2] == "local"):
                runs.append((f"local x{per_task}", per_task, "local"))
            if args.only:
                wanted = {"plain", *(name.strip() for name in args.only.split(","))}
                runs = [run for run in runs if run[0] in wanted]
            reference = ROOT / "runs" / f"{pairs}-plain"
            for name, tasks, engine in runs:
                out = ROOT / "runs" / f"{pairs}-{name.replace(' ', '')}"
                shutil.rmtree(out, ignore_errors=True)
                if engine == "ray":
                    with two_node_ray(args.cpus_per_node, object_store_mb=256) as (namespace, address):
                        roots = namespace_pids(namespace)
                        cmd = ["ip", "netns", "exec", namespace,
                               *prepare_cmd(corpus, out, model, tasks=tasks, engine="ray", ray_address=address)]
                        row = measure_prepare(name, cmd, out, pairs, tasks, extra_roots=roots)
                else:
                    cmd = prepare_cmd(corpus, out, model, tasks=tasks, plain=engine == "plain")
                    row = measure_prepare(name, cmd, out, pairs, tasks)
                row["same_as_plain"] = ("reference" if out == reference else compare(reference, out)
                                        if reference.exists() else "not compared (no plain run)")
                results["rows"].append(row)
                if out != reference:
                    shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(reference, ignore_errors=True)
            if pairs != max(sizes):
                shutil.rmtree(corpus, ignore_errors=True)
        if "engines" in parts:
            if any(r["name"].startswith("ray") for r in results["rows"]):  # the task rates come from the Ray run
                results["projection"] = projection(results["rows"], results["model"]["tokenizer_s"])
            else:
                print("no projection: it takes the task rates of a Ray run (--only left it out)")
        if "datatrove" in parts:
            results["datatrove"] = lm_side(args)
    finally:
        results["elapsed_s"] = time.perf_counter() - started
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
        if not args.keep:
            shutil.rmtree(ROOT, ignore_errors=True)
    report(results, args)


def report(results: dict[str, Any], args: argparse.Namespace) -> None:
    rows = results["rows"]
    print(f"\nall runs: {results['elapsed_s'] / 60:.1f} min (corpus {results.get('corpus_s', 0):.0f} s); "
          f"load now {os.getloadavg()}")
    main_rows = [r for r in rows if r["pairs"] == args.main_pairs and (r["name"] in ("plain", "local x1", "local x2")
                                                                        or r["name"].startswith("ray"))]
    if main_rows:
        plain = next(r for r in main_rows if r["name"] == "plain")
        print(f"\n{args.main_pairs:,} pairs ({results['input_bytes'][args.main_pairs] / 1e6:,.0f} MB), "
              f"{plain['kept_pairs']:,} kept after cleaning and dedup\n")
        print("| run | wall s | x plain | CPU s | merge s (clean / encode en, zh / binarize en, zh) | merge share "
              "| coordinator peak RSS | largest other process | load before/after | path | output vs plain |")
        print("|---|---:|---:|---:|---|---:|---:|---:|---|---|---|")
        for r in main_rows:
            order = ("clean", "sample", "encode", "binarize")  # the header's order (the manifest's keys are sorted)
            shown = sorted(r["merge_seconds"].items(), key=lambda kv: (order.index(kv[0].split(".")[0])
                                                                       if kv[0].split(".")[0] in order else 9, kv[0]))
            merge = " / ".join(f"{v:.1f}" for _, v in shown) or "-"
            others = {k: v for k, v in r["peak_by_role_mb"].items() if k not in ("coordinator", "Ray system")}
            other = max(others.items(), key=lambda kv: kv[1]) if others else ("-", 0)
            print(f"| {r['name']} | {r['seconds']:.1f} | {r['seconds'] / plain['seconds']:.2f}x | {r['cpu_s']:.0f} | "
                  f"{merge} | {r['merge_share'] * 100:.1f}% | {r['peak_by_role_mb']['coordinator']:.0f} MB | "
                  f"{other[1]:.0f} MB ({other[0]}) | {r['load_before']:.1f} / {r['load_after']:.1f} "
                  f"| {r['path']} | {r['same_as_plain']} |")
        for r in main_rows:
            print(f"\n{r['name']} stages (s): " + ", ".join(f"{k} {v:.1f}" for k, v in r["stages"].items()
                                                           if v >= 0.5) + f", outside stages {r['other_s']:.1f}")
            for stage, task_rows in r["task_rows"].items():
                print(f"  {stage}: " + "; ".join(
                    f"#{t['task']} {t['lines']:,} lines {t['seconds']:.1f} s x{t['attempts']}"
                    + (f" node {t['node'][:6]}" if "node" in t else "") for t in task_rows))
    rss_rows = [r for r in rows if r["name"] == "plain" or (r["tasks"] == max(1, r["pairs"] // args.pairs_per_task)
                and r["name"].startswith("local"))]
    if rss_rows:
        print("\n| pairs | run | coordinator peak RSS (anonymous part) | coordinator without finish | largest task "
              "process | largest forked cleaning worker | task helper | process tree peak (sum) | wall s | path "
              "| output vs plain |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
        for r in sorted(rss_rows, key=lambda r: (r["pairs"], r["tasks"])):
            peaks = r["peak_by_role_mb"]
            child = max(peaks.get("coordinator child (forked cleaning worker)", 0),
                        peaks.get("task's forked cleaning worker", 0))
            anon = r.get("anon_peak_by_role_mb", {}).get("coordinator")
            stages = {k: v for k, v in r["coordinator_by_stage_mb"].items() if k != "finish"}
            before_finish = r.get("coordinator_hwm_before_finish_mb") or max(stages.values(), default=0)
            print(f"| {r['pairs']:,} | {r['name']} | {peaks['coordinator']:.0f} MB"
                  + (f" ({anon:.0f} MB)" if anon is not None else "")
                  + f" | {before_finish:.0f} MB | {peaks.get('task process', 0):.0f} MB | "
                  f"{child:.0f} MB | {peaks.get('task helper', 0):.0f} MB | {r['tree_peak_mb']:.0f} MB | "
                  f"{r['seconds']:.1f} | {r['path']} | {r['same_as_plain']} |")
        print("\ncoordinator peak RSS per stage, MB (anonymous part in brackets; stages under the 0.2 s sampling "
              "interval may not show):")
        for r in sorted(rss_rows, key=lambda r: (r["name"] != "plain", r["pairs"])):
            anon = r.get("coordinator_anon_by_stage_mb", {})
            print(f"  {r['pairs']:,} {r['name']}: " + ", ".join(
                f"{k} {v:.0f}" + (f" ({anon[k]:.0f})" if k in anon else "")
                for k, v in r["coordinator_by_stage_mb"].items()))
    ray_rows = [r for r in rows if r["name"].startswith("ray")]
    for r in ray_rows:
        workers = sorted((p for p in r["processes"] if p["role"] == "Ray worker (ran a task)"),
                         key=lambda p: -p["peak_mb"])
        print(f"\n{r['name']} at {r['pairs']:,}: Ray workers that ran tasks, peak RSS: "
              + ", ".join(f"{p['peak_mb']:.0f} MB" for p in workers)
              + f"; Ray system processes up to {r['peak_by_role_mb'].get('Ray system', 0):.0f} MB")
    if "projection" in results:
        p = results["projection"]
        print("\nprojection to 1B pairs: task core-us per input pair (Ray tasks on one CPU): "
              + ", ".join(f"{k} {v:.2f}" for k, v in p["core_us_per_pair_by_stage"].items())
              + f"; {p['core_s_per_pair'] * 1e6:.0f} core-us per input pair ({p['kept_share']:.0%} kept); merges at "
              f"{p['merge_pairs']:,} ({p['merge_at']}): {p['clean_merge_gbps']:.2f} GB/s cleaned text, "
              + (f"{p['binarize_copy_gbps']:.2f} GB/s of stores copied" if p.get("binarize_copy_gbps") else
                 "binarize not tasked"))
        print("coordinator parts, fitted (us per pair, fixed s): " + ", ".join(
            f"{k} {v[0]:.2f} us + {v[1]:.1f} s" for k, v in p["fits_us_per_pair_and_fixed_s"].items()))
        names = list(p["serial_s"])
        print("\n| cores | tasks (all cores) | " + " | ".join(names) + " | tokenizer training (fixed sample) | total |")
        print("|---:|---:|" + "---:|" * len(names) + "---:|---:|")
        for cores, c in p["cores"].items():
            print(f"| {cores} | {c['tasks_s'] / 60:.1f} min | "
                  + " | ".join(f"{p['serial_s'][n] / 60:.1f} min" for n in names)
                  + f" | {p['tokenizer_train_s'] / 60:.1f} min | {c['total_s'] / 60:.1f} min |")
    if "datatrove" in results:
        d = results["datatrove"]
        print(f"\n{d['mb']:.0f} MB of JSONL in {d.get('files', '?')} files, {d['documents']:,} documents, "
              f"{d['tokens']:,} tokens\n")
        print("| run | wall s | CPU s | largest process | tree peak | load before | token stream |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for name, r in d["runs"].items():
            if name.startswith("ours"):
                same = "plain (reference)" if name == "ours x0" else r["same_as"]
            else:
                same = (f"same as ours: {'yes' if r['same_stream_as_ours'] else 'NO'}; same as datatrove x1: "
                        f"{'yes' if r['same_stream_as_datatrove_x1'] else 'NO'}; same documents (as a multiset): "
                        f"{'yes' if r['same_documents_as_ours'] else 'NO'}"
                        + (f"; same as run a: {'yes' if r['same_stream_as_run_a'] else 'NO'}"
                           if "same_stream_as_run_a" in r else ""))
            print(f"| {name} | {r['seconds']:.1f} | {r['cpu_s']:.0f} | {r['largest_process_mb']:.0f} MB | "
                  f"{r['tree_peak_mb']:.0f} MB | {r['load_before']:.1f} | {same} |")


if __name__ == "__main__":
    main()
