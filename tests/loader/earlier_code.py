"""Run a script with the code of an earlier commit (``git archive`` of its ``src``, in a separate process):
how tests get states written by the previous release, not states edited to look like them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PREVIOUS = "f4373dc"
"""The last commit before loader states recorded contents: the state format of the previous release."""
WAVE = "cdb9d27"
"""A commit whose GPT/blend states record contents by member fingerprint (before blend members were keyed by
content, and before pair states recorded contents)."""


class EarlierCode:
    """Unpacks the ``src`` of commits into ``folder`` (once each) and runs scripts with it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.trees: dict[str, Path] = {}

    def tree(self, commit: str) -> Path:
        """The commit's ``src`` folder (skips the test where the checkout lacks the commit: a shallow clone)."""
        if commit not in self.trees:
            found = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"],
                                   capture_output=True, check=False)
            if found.returncode != 0:
                pytest.skip(f"this checkout does not hold commit {commit} (a shallow clone): nothing to compare with")
            target = self.folder / commit
            target.mkdir(parents=True)
            with (target / "src.tar").open("wb") as handle:
                subprocess.run(["git", "-C", str(ROOT), "archive", commit, "src"], stdout=handle, check=True)
            with tarfile.open(target / "src.tar") as tar:
                tar.extractall(target, filter="data")
            self.trees[commit] = target / "src"
        return self.trees[commit]

    def state(self, commit: str, script: str, args: dict[str, Any]) -> dict[str, Any]:
        """The JSON state ``script`` (reading ``json.loads(sys.argv[1])``) prints with the commit's code."""
        tree = self.tree(commit)
        env = {**os.environ, "PYTHONPATH": str(tree)}
        done = subprocess.run([sys.executable, "-c", script, json.dumps(args)], env=env, capture_output=True,
                              text=True, check=False, cwd=tree.parent)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout)
