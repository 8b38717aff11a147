"""A two-node Ray cluster inside a network namespace made for it (the tests' and benchmarks' one copy).

Ray advertises the machine's own interface address even when told ``--node-ip-address=127.0.0.1``,
so the nodes, the driver and the prepare run inside a fresh namespace: a veth pair holding
``10.254.0.1/24`` with a default route on it, so Ray picks that address and no traffic reaches the
machine's external one. Leaving the context stops both nodes, ends every process still in the
namespace (by pid) and removes the namespace. Needs root and iproute2 (:func:`can_make_namespaces`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

ADDRESS = "10.254.0.1"
MB = 1 << 20


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
def network_namespace(address: str = ADDRESS) -> Iterator[str]:
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


@contextlib.contextmanager
def two_node_ray(cpus: int = 1, env: Mapping[str, str] | None = None, object_store_mb: int | None = None,
                 ready_timeout: float = 90.0) -> Iterator[tuple[str, str]]:
    """A head and a second node (``cpus`` CPUs each) in a fresh namespace; yields (namespace, address).

    ``env`` is the nodes' environment (default: this process's); Ray's usage report is always off."""
    node_env = {**(env if env is not None else os.environ), "RAY_USAGE_STATS_ENABLED": "0"}
    ray = str(Path(sys.executable).parent / "ray")
    temp = tempfile.mkdtemp(prefix="tmray", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    store = [f"--object-store-memory={object_store_mb * MB}"] if object_store_mb else []
    nodes: list[subprocess.Popen] = []
    with network_namespace() as namespace:
        try:
            port = _free_port()
            address = f"{ADDRESS}:{port}"
            # --block: each node stays a child of this process in its own process group, so stopping it
            # stops only this cluster (`ray stop` would stop every Ray on the machine)
            head = ["start", "--head", "--block", f"--node-ip-address={ADDRESS}", f"--port={port}",
                    f"--num-cpus={cpus}", f"--temp-dir={temp}", "--include-dashboard=false", *store]
            second = ["start", "--block", f"--address={address}", f"--node-ip-address={ADDRESS}",
                      f"--num-cpus={cpus}", *store]
            for expected, args in ((1, head), (2, second)):
                nodes.append(subprocess.Popen(["ip", "netns", "exec", namespace, ray, *args], env=node_env,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                              start_new_session=True))
                _wait_for_nodes(namespace, ray, address, expected, ready_timeout)
            yield namespace, address
        finally:
            for node in reversed(nodes):
                _stop_group(node)
            shutil.rmtree(temp, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_nodes(namespace: str, ray: str, address: str, count: int, timeout: float) -> None:
    """Until ``ray status`` lists ``count`` active nodes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = run_in(namespace, ray, "status", f"--address={address}", check=False)
        active = status.stdout.split("Active:", 1)[-1].split("Pending:", 1)[0] if status.returncode == 0 else ""
        if active.count("node_") >= count:
            return
        time.sleep(1.0)
    raise RuntimeError(f"the Ray cluster did not reach {count} node(s) in {timeout:.0f} s")


def _stop_group(node: subprocess.Popen) -> None:
    """Stop one node's whole process group (its raylet, object store and workers)."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.pid, sig)
        try:
            node.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


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
