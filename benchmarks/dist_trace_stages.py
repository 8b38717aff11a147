"""Where the coordinator's memory goes, stage by stage: ``tokenmill prepare`` run in this process under
``tracemalloc`` (Python objects and numpy buffers; not file-backed mapped pages, not memory the allocator
keeps after a free). Each pipeline stage's traced peak is recorded, and a sampler thread snapshots the
largest allocation sites whenever a stage reaches a new high. For bench_distributed.py's RSS check.

    python benchmarks/dist_trace_stages.py -- prepare --source-lang en ... --tasks 4   # tokenmill's arguments
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
import time
import tracemalloc

MB = 2**20


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    out = None
    if args[:1] == ["--json"]:
        out, args = args[1], args[2:]
    context = importlib.import_module("tokenmill.prepare.run.context")
    stages: dict[str, dict] = {}
    current = {"name": "start-up", "high": 0}
    lock = threading.Lock()

    def snapshot(name: str) -> None:
        snap = tracemalloc.take_snapshot()
        top = snap.statistics("lineno")[:6]
        stages.setdefault(name, {})["sites"] = [
            {"site": f"{s.traceback[0].filename.split('/src/')[-1]}:{s.traceback[0].lineno}", "mb": s.size / MB}
            for s in top
        ]

    original = context.RunContext.record

    def traced_stage(self, name, key, run):
        with lock:
            current["name"], current["high"] = name, 0
            tracemalloc.reset_peak()
        started = time.perf_counter()
        try:
            return original(self, name, key, run)
        finally:
            with lock:
                peak = tracemalloc.get_traced_memory()[1]
                entry = stages.setdefault(name, {})
                entry.update(peak_mb=peak / MB, seconds=time.perf_counter() - started)
                current["name"] = f"after {name}"

    context.RunContext.record = traced_stage
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.25):
            with lock:
                now = tracemalloc.get_traced_memory()[0]
                name = current["name"]
                if not name.startswith("after") and now > current["high"] * 1.05 + MB:
                    current["high"] = now
                    snapshot(name)

    tracemalloc.start(1)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    from tokenmill.cli import main as cli

    try:
        cli(args)
    except SystemExit as stop:
        if stop.code:
            raise
    finally:
        done.set()
        sampler.join()
        for name, entry in stages.items():
            sites = ", ".join(f"{s['site']} {s['mb']:.1f}" for s in entry.get("sites", [])[:3])
            print(f"{name}: traced peak {entry.get('peak_mb', 0):.1f} MB in {entry.get('seconds', 0):.1f} s; "
                  f"largest sites at its sampled high (MB): {sites}", file=sys.stderr)
        if out:
            with open(out, "w", encoding="utf-8") as handle:
                json.dump(stages, handle, indent=1)


if __name__ == "__main__":
    main()
