"""scripts/setup_peers.sh builds the peers once per machine: a checkout without ``.peers`` links the
machine's cache folder (``${XDG_CACHE_HOME:-~/.cache}/tokenmill-peers``) and finds the peers built
there ready, instead of building them again."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MEGATRON_PROBE = "import megatron.core.datasets.indexed_dataset"  # what setup_peers.sh imports to check the peer


def _clone(root: Path) -> Path:
    """The part of a fresh clone the script needs (it works relative to its own folder)."""
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(REPO / "scripts" / "setup_peers.sh", root / "scripts" / "setup_peers.sh")
    return root


def test_two_clones_share_the_machine_cache(tmp_path):
    """A peer an earlier checkout built (and marked ready) in the machine's cache is found ready by every
    new clone: linked, not built again and not probed again."""
    peer = tmp_path / "xdg" / "tokenmill-peers" / "megatron"
    (peer / "bin").mkdir(parents=True)
    (peer / "bin" / "python").symlink_to(sys.executable)
    (peer / ".tokenmill-ready").write_text(MEGATRON_PROBE + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "TOKENMILL_PEERS_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    for name in ("first", "second"):
        clone = _clone(tmp_path / name)
        done = subprocess.run(["bash", "scripts/setup_peers.sh", "megatron"], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert (clone / ".peers").is_symlink() and (clone / ".peers").resolve() == peer.parent.resolve()
        assert "peer megatron: ready" in done.stdout and "installing" not in done.stdout, done.stdout


def test_a_changed_probe_checks_the_peer_again(tmp_path):
    """A mark written for another probe does not count: the peer is probed (and, failing, rebuilt)."""
    clone = _clone(tmp_path / "clone")
    peer = clone / ".peers" / "megatron"
    (peer / "bin").mkdir(parents=True)
    (peer / "bin" / "python").write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    (peer / "bin" / "python").chmod(0o755)
    (peer / ".tokenmill-ready").write_text("import an_older_probe\n", encoding="utf-8")
    fake = tmp_path / "bin"  # a python3 that fails: the rebuild is attempted, and stops there
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    (fake / "python3").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "scripts/setup_peers.sh", "megatron"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=60)
    assert "peer megatron: installing" in done.stdout and done.returncode != 0, (done.stdout, done.stderr)
    assert (peer / ".tokenmill-ready").read_text(encoding="utf-8") == "import an_older_probe\n", "no new mark"


def test_an_existing_peers_folder_is_used_as_it_is(tmp_path):
    """A checkout that has its own .peers (a folder, or a link made earlier) keeps it."""
    clone = _clone(tmp_path / "clone")
    (clone / ".peers").mkdir()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    done = subprocess.run(["bash", "scripts/setup_peers.sh", "nosuchpeer"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown peer nosuchpeer" in done.stderr
    assert (clone / ".peers").is_dir() and not (clone / ".peers").is_symlink()
    assert not (tmp_path / "xdg").exists(), "the cache is made only for a checkout without .peers"
