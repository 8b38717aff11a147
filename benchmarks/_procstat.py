"""Run a command and measure it: wall seconds, the peak of the summed RSS of its whole process tree
(sampled from /proc every ``interval`` s: pool workers and forkservers included), the peak RSS of
its largest single process (the larger of ``/usr/bin/time``'s maximum resident set size and the
sampled one: ``time`` misses descendants reaped by another process, such as forkserver workers) and
its CPU seconds (likewise).

Summing RSS counts pages that forked workers share with their parent more than once, so the tree
figure is an upper bound of the memory the run needs; the largest-process figure is a lower bound.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                out += [int(c) for c in handle.read().split()]
        except OSError:
            pass
    return out


TICK = os.sysconf("SC_CLK_TCK")


def tree_rss(pid: int, cpu: dict[int, float] | None = None, largest: list[int] | None = None) -> int:
    """Bytes resident in ``pid`` and all its descendants now; ``cpu`` gets each one's user + system
    seconds so far (pid -> seconds), ``largest[0]`` the largest single RSS seen."""
    total, stack, seen = 0, [pid], set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            with open(f"/proc/{p}/statm") as handle:
                rss = int(handle.read().split()[1]) * PAGE
            total += rss
            if largest is not None:
                largest[0] = max(largest[0], rss)
            if cpu is not None:
                with open(f"/proc/{p}/stat") as handle:
                    fields = handle.read().rpartition(")")[2].split()
                cpu[p] = max(cpu.get(p, 0.0), (int(fields[11]) + int(fields[12])) / TICK)
        except (OSError, IndexError, ValueError):
            continue
        stack += _children(p)
    return total


@dataclass
class Measured:
    seconds: float
    tree_peak_mb: float
    process_peak_mb: float | None
    cpu_s: float | None
    """User + system CPU seconds of the command and its descendants: ``/usr/bin/time``'s figure, or the
    per-process CPU sampled from /proc when that is larger (descendants reaped by a process other than
    their parent are missing from rusage); a process's last ``interval`` is missed by the sampling."""
    stdout: str
    stderr: str


def run_measured(cmd: list[str], *, env: dict | None = None, cwd: str | None = None,
                 interval: float = 0.2) -> Measured:
    """Run ``cmd`` to completion (SystemExit with its stderr when it fails) and measure it."""
    timer = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists() else None)
    report = tempfile.NamedTemporaryFile(prefix="maxrss-", delete=False)
    report.close()
    full = [timer, "-f", "%M %U %S", "-o", report.name, *cmd] if timer else cmd
    peak = 0
    cpu_seen: dict[int, float] = {}
    largest = [0]
    start = time.perf_counter()
    proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(proc.pid, cpu_seen, largest))
            done.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    process_peak = cpu = None
    try:
        text = Path(report.name).read_text().strip().splitlines()
        fields = text[-1].split() if text else []
        if len(fields) == 3:
            process_peak, cpu = int(fields[0]) / 1024, float(fields[1]) + float(fields[2])
    finally:
        os.unlink(report.name)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{err[-4000:]}")
    # processes reaped by a grandparent we do not wait for (forkserver workers) escape rusage: take the
    # larger of rusage and the sum of the per-process CPU seen while sampling
    sampled = sum(cpu_seen.values())
    process_peak = max(process_peak or 0.0, largest[0] / 2**20)
    cpu = max(cpu or 0.0, sampled) if cpu is not None or sampled else None
    return Measured(seconds, peak / 2**20, process_peak, cpu, out, err)
