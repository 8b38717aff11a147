"""The README runs as written: every ```python and ```bash block, in README order, as a reader would.

The blocks run in a scratch copy of the repository's README, ``examples/`` and ``scripts/`` after the
quickstart's main job (``bash examples/quickstart.sh``), so the relative paths they use
(``examples/config.yaml``, ``runs/...``, ``data-bin``) mean what they mean in a checkout. Each block
is a complete program: a python block runs alone with this interpreter (a reader copies one block at
a time, so it must bring its own imports), a bash block runs with ``bash -e`` and a PATH that finds
this interpreter's ``python``/``tokenmill`` first and the fairseq peer's ``fairseq-*`` commands after
them. ```console and ```text blocks are shown output, not run.

A block that cannot run here is marked in the README by ``<!-- not-run: reason -->`` on the line
right before its fence; the test skips it with that reason. A block calling ``fairseq-*`` is skipped
only when the fairseq peer (``.peers/fairseq``, ``scripts/setup_peers.sh fairseq``) is absent.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
FAIRSEQ_BIN = REPO / ".peers" / "fairseq" / "bin"
COPIED = ("README.md", "examples", "scripts")  # what the blocks read, relative to the repository root
RUN = {"python", "bash"}
SHOWN = {"console", "text"}
MAX_NOT_RUN = 2
BLOCK_TIMEOUT = 300

_FENCE = re.compile(r"^(`{3,})(.*)$")
_NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(.*?)\s*-->\s*$")
_FAIRSEQ_COMMAND = re.compile(r"(?<![\w.-])fairseq-(?:train|preprocess|generate|interactive|eval-lm|validate)\b")


@dataclass(frozen=True)
class Block:
    line: int  # README line of the opening fence (1-based)
    lang: str
    code: str
    not_run: str | None  # the reason, when marked <!-- not-run: reason -->

    @property
    def id(self) -> str:
        return f"L{self.line}-{self.lang}"

    def head(self, lines: int = 4) -> str:
        shown = self.code.splitlines()[:lines]
        more = "\n    ..." if len(self.code.splitlines()) > lines else ""
        return "\n".join(f"    {line}" for line in shown) + more

    @property
    def needs_fairseq(self) -> bool:
        return bool(_FAIRSEQ_COMMAND.search(self.code))


def readme_blocks(text: str) -> list[Block]:
    """Every fenced block of ``text`` (a README), in order; raises ValueError on an unclosed fence."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        fence, info = opened.group(1), opened.group(2).strip()
        marker = _NOT_RUN.match(lines[i - 1]) if i > 0 else None
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not (lines[j].startswith(fence) and not lines[j].strip("`").strip()):
            body.append(lines[j])
            j += 1
        if j == len(lines):
            raise ValueError(f"README.md line {i + 1}: the fence {fence}{info} is never closed")
        blocks.append(Block(line=i + 1, lang=info, code="\n".join(body) + "\n", not_run=marker and marker.group(1)))
        i = j + 1
    return blocks


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))
RUNNABLE = [b for b in BLOCKS if b.lang in RUN]


def test_readme_blocks_are_all_known_kinds():
    """A block with another info string (or none) would be neither run nor knowingly shown."""
    odd = [f"line {b.line}: ```{b.lang}" for b in BLOCKS if b.lang not in RUN | SHOWN]
    assert not odd, f"README blocks must be ```python/```bash (run) or ```console/```text (shown): {odd}"
    misplaced = [f"line {b.line}: ```{b.lang}" for b in BLOCKS if b.not_run is not None and b.lang not in RUN]
    assert not misplaced, f"not-run markers belong only before run blocks: {misplaced}"
    assert len(RUNNABLE) >= 8, "the README lost its examples?"


def test_not_run_blocks_are_few_and_say_why():
    not_run = {b.id: b.not_run for b in RUNNABLE if b.not_run is not None}
    assert all(reason for reason in not_run.values()), f"every not-run marker needs a reason: {not_run}"
    assert len(not_run) <= MAX_NOT_RUN, f"too many README blocks are not run: {not_run}"


def test_the_quickstart_block_is_what_the_fixture_runs():
    """The quickstart block is not run (it installs and runs all tests); its main job is run first."""
    first = RUNNABLE[0]
    assert first.not_run and "bash examples/quickstart.sh" in first.code, first


def _env(scratch: Path) -> dict[str, str]:
    path = [str(Path(sys.executable).parent)]
    if FAIRSEQ_BIN.is_dir():
        path.append(str(FAIRSEQ_BIN))
    return {
        **os.environ,
        "PATH": os.pathsep.join([*path, os.environ.get("PATH", "")]),
        "TOKENMILL_CACHE": str(scratch / ".cache" / "plans"),  # plan caches stay in the scratch copy
        "PYTHONDONTWRITEBYTECODE": "1",
    }


class ReadmeRun:
    """Runs the README's blocks once each, in README order, in one scratch copy of the repository."""

    def __init__(self, scratch: Path, programs: Path) -> None:
        self.scratch = scratch
        self.programs = programs
        self.env = _env(scratch)
        self.results: dict[int, tuple[str, str | None]] = {}  # line -> (status, failure message)

    def setup(self) -> None:
        for name in COPIED:
            src = REPO / name
            if src.is_dir():
                shutil.copytree(src, self.scratch / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(src, self.scratch / name)
        quickstart = ["bash", "examples/quickstart.sh"]
        done = subprocess.run(quickstart, cwd=self.scratch, env=self.env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"the quickstart (bash examples/quickstart.sh) failed:\n{done.stderr[-4000:]}"

    def _execute(self, block: Block) -> tuple[str, str | None]:
        if block.not_run is not None:
            return "not-run", f"README.md line {block.line} ({block.lang}) is marked not-run: {block.not_run}"
        if block.needs_fairseq and not (FAIRSEQ_BIN / "fairseq-train").exists():
            return "skipped", (
                f"README.md line {block.line} needs the fairseq peer, which is not installed: "
                "run `bash scripts/setup_peers.sh fairseq`"
            )
        suffix = ".py" if block.lang == "python" else ".sh"
        program = self.programs / f"readme_L{block.line}{suffix}"
        program.write_text(block.code, encoding="utf-8")
        command = [sys.executable, str(program)] if block.lang == "python" else ["bash", "-e", str(program)]
        try:
            done = subprocess.run(
                command, cwd=self.scratch, env=self.env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT
            )
        except subprocess.TimeoutExpired:
            return "failed", f"README.md line {block.line} ({block.lang}) ran past {BLOCK_TIMEOUT} s:\n{block.head()}"
        if done.returncode != 0:
            return "failed", (
                f"README.md line {block.line} ({block.lang}) exited {done.returncode}:\n{block.head()}\n"
                f"--- stderr ---\n{done.stderr[-4000:]}\n--- stdout (end) ---\n{done.stdout[-1500:]}"
            )
        return "passed", None

    def run_through(self, block: Block) -> tuple[str, str | None]:
        """Run every block up to and including ``block`` that has not run yet; ``block``'s outcome."""
        for earlier in RUNNABLE:
            if earlier.line not in self.results:
                self.results[earlier.line] = self._execute(earlier)
            if earlier.line == block.line:
                break
        status, message = self.results[block.line]
        if status == "failed":
            failed_before = [f"line {n}" for n, (s, _) in self.results.items() if n < block.line and s == "failed"]
            if failed_before:
                message = f"{message}\n(earlier README blocks failed too: {', '.join(failed_before)})"
        return status, message


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory) -> ReadmeRun:
    run = ReadmeRun(tmp_path_factory.mktemp("readme-repo"), tmp_path_factory.mktemp("readme-blocks"))
    run.setup()
    return run


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_readme_block_runs_as_written(readme_run, block):
    status, message = readme_run.run_through(block)
    if status in ("not-run", "skipped"):
        pytest.skip(message)
    assert status == "passed", message
