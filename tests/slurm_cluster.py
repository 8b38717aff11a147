"""A one-node Slurm cluster (Debian's ``slurm-wlm``: slurmctld + slurmd, munge for authentication) inside a
network namespace made for it, for tests that submit real sbatch jobs.

Everything it starts (munged, slurmctld, slurmd, the jobs) runs in the namespace, with its own config,
state, spool, key and sockets under a temporary folder, so it neither sees nor disturbs a Slurm or munge
the machine may run, and no port opens outside the namespace. The node is named after the machine
(slurmctld only runs on the host its config names) at 127.0.0.1, with its real CPU count. Leaving the
context ends every process in the namespace (by pid) and removes it. Needs root, iproute2 and the
``slurmctld``, ``slurmd``, ``sbatch`` and ``munged`` programs (:func:`can_start_slurm`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.netns import can_make_namespaces, network_namespace, run_in

ADDRESS = "10.254.1.1"
PROGRAMS = ("slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "munged")


def can_start_slurm() -> bool:
    """Whether a cluster can be started here: root, namespaces and Slurm's and munge's programs."""
    return can_make_namespaces() and all(shutil.which(p) for p in PROGRAMS)


@dataclass(frozen=True)
class SlurmCluster:
    """A started cluster: run its client commands through :meth:`run` (inside the namespace, its config)."""

    namespace: str
    folder: Path

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.folder / "slurm.conf")}

    def run(self, *command: str, cwd: Path | None = None, check: bool = True, timeout: float = 120
            ) -> subprocess.CompletedProcess:
        """``command`` inside the namespace, with this cluster's config; in ``cwd`` when given."""
        if cwd is not None:
            command = ("sh", "-c", 'cd "$0" && exec "$@"', str(cwd), *command)
        return run_in(self.namespace, *command, env=self.env, check=check, timeout=timeout)

    def queue(self) -> list[tuple[str, str, str]]:
        """(job id, state, reason) of every job still known to the queue."""
        done = self.run("squeue", "-h", "-o", "%i|%T|%r")
        return [tuple(line.split("|", 2)) for line in done.stdout.splitlines() if line]  # type: ignore[misc]

    def wait_idle(self, timeout: float) -> None:
        """Until no job is queued or running; a job whose dependency can never be met (one before it failed)
        raises at once, naming it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            jobs = self.queue()
            if not jobs:
                return
            stuck = [job for job in jobs if "DependencyNeverSatisfied" in job[2]]
            if stuck:
                raise RuntimeError(f"Slurm jobs wait on jobs that failed: {stuck}")
            time.sleep(0.25)
        raise RuntimeError(f"Slurm jobs still queued after {timeout:.0f} s: {self.queue()}")


@contextlib.contextmanager
def one_node_slurm(ready_timeout: float = 60.0) -> Iterator[SlurmCluster]:
    """munged, slurmctld and slurmd in a fresh namespace, the node idle and accepting jobs."""
    folder = Path(tempfile.mkdtemp(prefix="tmslurm", dir="/tmp"))  # short paths: munge's socket must fit
    try:
        _write_files(folder)
        with network_namespace(ADDRESS) as namespace:
            munge = folder / "munge"
            run_in(namespace, "munged", "--force", f"--socket={munge / 'munge.sock'}",
                   f"--key-file={munge / 'munge.key'}", f"--log-file={munge / 'munged.log'}",
                   f"--pid-file={munge / 'munged.pid'}", f"--seed-file={munge / 'munged.seed'}")
            cluster = SlurmCluster(namespace, folder)
            conf = str(folder / "slurm.conf")
            for daemon in ("slurmctld", "slurmd"):  # each forks into the background (inside the namespace)
                started = cluster.run(daemon, "-f", conf, check=False)
                if started.returncode:
                    raise RuntimeError(f"{daemon} did not start: {started.stderr[-1000:]}{_log_tail(folder, daemon)}")
            _wait_for_idle_node(cluster, ready_timeout)
            yield cluster
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _write_files(folder: Path) -> None:
    """slurm.conf, cgroup.conf and a fresh munge key under ``folder``."""
    munge = folder / "munge"
    for sub in ("state", "spool", "munge"):
        (folder / sub).mkdir(mode=0o700)
    folder.chmod(0o755)  # munged wants every folder above its socket searchable
    key = munge / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    host = socket.gethostname().split(".")[0]
    settings = {
        "ClusterName": "tokenmilltest",
        "SlurmctldHost": f"{host}(127.0.0.1)",
        "AuthType": "auth/munge",
        "CredType": "cred/munge",
        "AuthInfo": f"socket={munge / 'munge.sock'}",
        "SlurmUser": "root",
        "SlurmdUser": "root",
        "StateSaveLocation": folder / "state",
        "SlurmdSpoolDir": folder / "spool",
        "SlurmctldPidFile": folder / "slurmctld.pid",
        "SlurmdPidFile": folder / "slurmd.pid",
        "SlurmctldLogFile": folder / "slurmctld.log",
        "SlurmdLogFile": folder / "slurmd.log",
        "ProctrackType": "proctrack/linuxproc",  # no cgroup tracking: works in containers
        "TaskPlugin": "task/none",
        "SchedulerType": "sched/builtin",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_CPU",
        "ReturnToService": "2",
        "MpiDefault": "none",
        "JobCompType": "jobcomp/none",
        "AccountingStorageType": "accounting_storage/none",
        "JobAcctGatherType": "jobacct_gather/none",
        "SchedulerParameters": "batch_sched_delay=0",  # a job whose dependency ended starts within ~1 s, not ~3 s
        "MinJobAge": "300",  # finished jobs stay listed (with their state) long enough to be read
    }
    lines = [f"{name}={value}" for name, value in settings.items()]
    lines.append(f"NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} State=UNKNOWN")
    lines.append(f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP")
    (folder / "slurm.conf").write_text("\n".join(lines) + "\n")
    # slurmd always starts a cgroup plugin; on a v1 (or hybrid) hierarchy name it, else let it detect v2
    v2_only = Path("/sys/fs/cgroup/cgroup.controllers").exists()
    (folder / "cgroup.conf").write_text("CgroupPlugin=autodetect\n" if v2_only else "CgroupPlugin=cgroup/v1\n")


def _wait_for_idle_node(cluster: SlurmCluster, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        done = cluster.run("sinfo", "-h", "-o", "%T", check=False)
        state = done.stdout.strip()
        if done.returncode == 0 and state == "idle":
            return
        time.sleep(0.5)
    raise RuntimeError(f"the Slurm node is not idle after {timeout:.0f} s (state {state!r})"
                       f"{_log_tail(cluster.folder, 'slurmctld')}{_log_tail(cluster.folder, 'slurmd')}")


def _log_tail(folder: Path, daemon: str) -> str:
    log = folder / f"{daemon}.log"
    return f"\n{daemon}.log:\n{log.read_text()[-1500:]}" if log.exists() else ""


__all__ = ["ADDRESS", "SlurmCluster", "can_start_slurm", "one_node_slurm"]
