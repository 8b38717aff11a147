"""scripts/setup_peers.sh builds the peers once per machine: a checkout without ``.peers`` links the
machine's cache folder (``${XDG_CACHE_HOME:-~/.cache}/tokenmill-peers``) and finds the peers built
there ready, instead of building them again."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MEGATRON = REPO / ".peers" / "megatron"


def _clone(root: Path) -> Path:
    """The part of a fresh clone the script needs (it works relative to its own folder)."""
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(REPO / "scripts" / "setup_peers.sh", root / "scripts" / "setup_peers.sh")
    return root


def test_two_clones_share_the_machine_cache(tmp_path):
    if not (MEGATRON / "bin" / "python").exists():
        pytest.skip("the megatron peer is not built here (bash scripts/setup_peers.sh megatron)")
    cache = tmp_path / "xdg" / "tokenmill-peers"
    cache.mkdir(parents=True)
    (cache / "megatron").symlink_to(MEGATRON.resolve())  # a peer an earlier checkout built on this machine
    env = {k: v for k, v in os.environ.items() if k != "TOKENMILL_PEERS_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    for name in ("first", "second"):
        clone = _clone(tmp_path / name)
        done = subprocess.run(["bash", "scripts/setup_peers.sh", "megatron"], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert (clone / ".peers").is_symlink() and (clone / ".peers").resolve() == cache.resolve()
        assert "peer megatron: ready" in done.stdout and "installing" not in done.stdout, done.stdout


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
