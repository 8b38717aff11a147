"""Network namespaces for tests that start servers (Ray, Slurm): their traffic never leaves the namespace.

A namespace made here holds a veth pair whose end ``v0`` carries ``address``/24 and the default route,
so a server that advertises "its" interface address picks that one, and resolvers that want a
configured non-loopback interface (``getaddrinfo`` with ``AI_ADDRCONFIG``) find it; nothing reaches
the machine's external address. Leaving the context ends every process still in the namespace (by
pid, never by name) and removes it. Needs root and iproute2 (:func:`can_make_namespaces`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping


def can_make_namespaces() -> bool:
    """Whether this process may create network namespaces (root, with ``ip``)."""
    return os.geteuid() == 0 and shutil.which("ip") is not None


def run_in(namespace: str, *command: str, env: Mapping[str, str] | None = None, check: bool = True,
           timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``command`` inside ``namespace``; with ``check`` a failure raises naming the command."""
    done = subprocess.run(["ip", "netns", "exec", namespace, *command], capture_output=True, text=True,
                          env=dict(env) if env is not None else None, timeout=timeout)
    if check and done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
    return done


def namespace_pids(namespace: str) -> list[int]:
    """Every process running inside ``namespace``."""
    done = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
    return [int(pid) for pid in done.stdout.split()]


@contextlib.contextmanager
def network_namespace(address: str) -> Iterator[str]:
    """A fresh namespace whose veth ``v0`` holds ``address``/24 and the default route; yields its name."""
    namespace = f"tm{uuid.uuid4().hex[:8]}"
    setup = [
        ["ip", "netns", "add", namespace],
        ["ip", "netns", "exec", namespace, "ip", "link", "add", "v0", "type", "veth", "peer", "name", "v1"],
        ["ip", "netns", "exec", namespace, "ip", "addr", "add", f"{address}/24", "dev", "v0"],
        ["ip", "netns", "exec", namespace, "ip", "link", "set", "v0", "up"],
        ["ip", "netns", "exec", namespace, "ip", "link", "set", "v1", "up"],
        ["ip", "netns", "exec", namespace, "ip", "link", "set", "lo", "up"],
        ["ip", "netns", "exec", namespace, "ip", "route", "add", "default", "via", address, "dev", "v0"],
    ]
    try:
        for command in setup:
            subprocess.run(command, check=True, capture_output=True)
        yield namespace
    finally:
        _end_processes_in(namespace)
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


def _end_processes_in(namespace: str) -> None:
    """SIGTERM, then SIGKILL, whatever still runs in the namespace (all of it started by its user)."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        pids = namespace_pids(namespace)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.time() + wait
        while pids and time.time() < deadline:
            time.sleep(0.2)
            pids = namespace_pids(namespace)
        if not pids:
            return
