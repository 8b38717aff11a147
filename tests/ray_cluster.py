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
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.netns import can_make_namespaces, namespace_pids, network_namespace, run_in

ADDRESS = "10.254.0.1"
MB = 1 << 20


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
    with network_namespace(ADDRESS) as namespace:
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


__all__ = ["ADDRESS", "can_make_namespaces", "namespace_pids", "network_namespace", "run_in", "two_node_ray"]
