"""Run the code blocks of a Markdown page (the README, a docs page) as a reader would, in page order.

The blocks run in a scratch copy of the repository's README, ``docs/``, ``examples/`` and ``scripts/``
made after the quickstart's main job (``bash examples/quickstart.sh``), so the relative paths they use
(``examples/config.yaml``, ``runs/...``, ``data-bin``) mean what they mean in a checkout. Each block
is a complete program: a python block runs alone with this interpreter (a reader copies one block at
a time, so it must bring its own imports), a bash block runs with ``bash -e`` and a PATH that finds
this interpreter's ``python``/``tokenmill`` first and the fairseq peer's ``fairseq-*`` commands after
them. ```console, ```text and ```yaml blocks are shown, not run.

A block that cannot run here is marked by ``<!-- not-run: reason -->`` on the line right before its
fence; the tests skip it with that reason. A block calling ``fairseq-*`` is skipped only when the
fairseq peer (``.peers/fairseq``, ``scripts/setup_peers.sh fairseq``) is absent.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAIRSEQ_BIN = REPO / ".peers" / "fairseq" / "bin"
COPIED = ("README.md", "docs", "examples", "scripts")  # what the blocks read, relative to the repository root
RUN = {"python", "bash"}
SHOWN = {"console", "text", "yaml"}
BLOCK_TIMEOUT = 300

_FENCE = re.compile(r"^(`{3,})(.*)$")
_NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(.*?)\s*-->\s*$")
_FAIRSEQ_COMMAND = re.compile(r"(?<![\w.-])fairseq-(?:train|preprocess|generate|interactive|eval-lm|validate)\b")


@dataclass(frozen=True)
class Block:
    page: str  # the page's path relative to the repository root
    line: int  # line of the opening fence (1-based)
    lang: str
    code: str
    not_run: str | None  # the reason, when marked <!-- not-run: reason -->

    @property
    def id(self) -> str:
        return f"{self.page}:L{self.line}-{self.lang}"

    @property
    def where(self) -> str:
        return f"{self.page} line {self.line} ({self.lang})"

    def head(self, lines: int = 4) -> str:
        shown = self.code.splitlines()[:lines]
        more = "\n    ..." if len(self.code.splitlines()) > lines else ""
        return "\n".join(f"    {line}" for line in shown) + more

    @property
    def needs_fairseq(self) -> bool:
        return bool(_FAIRSEQ_COMMAND.search(self.code))


def fenced_blocks(text: str, page: str) -> list[Block]:
    """Every fenced block of ``text`` (the Markdown of ``page``), in order; ValueError on an unclosed fence."""
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
            raise ValueError(f"{page} line {i + 1}: the fence {fence}{info} is never closed")
        blocks.append(Block(page, i + 1, info, "\n".join(body) + "\n", marker and marker.group(1)))
        i = j + 1
    return blocks


def page_blocks(page: str) -> list[Block]:
    return fenced_blocks((REPO / page).read_text(encoding="utf-8"), page)


def odd_blocks(blocks: list[Block]) -> list[str]:
    """Blocks that would be neither run nor knowingly shown, and not-run markers on shown blocks."""
    odd = [f"{b.where}: ```{b.lang}" for b in blocks if b.lang not in RUN | SHOWN]
    odd += [f"{b.where}: not-run marker on a shown block" for b in blocks if b.not_run is not None and b.lang in SHOWN]
    return odd


def quickstart_checkout(scratch: Path) -> Path:
    """A scratch copy of what the blocks read, after the quickstart's main job; asserts it ran."""
    for name in COPIED:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, scratch / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, scratch / name)
    done = subprocess.run(["bash", "examples/quickstart.sh"], cwd=scratch, env=block_env(scratch),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the quickstart (bash examples/quickstart.sh) failed:\n{done.stderr[-4000:]}"
    return scratch


def block_env(scratch: Path) -> dict[str, str]:
    path = [str(Path(sys.executable).parent)]
    if FAIRSEQ_BIN.is_dir():
        path.append(str(FAIRSEQ_BIN))
    return {
        **os.environ,
        "PATH": os.pathsep.join([*path, os.environ.get("PATH", "")]),
        "TOKENMILL_CACHE": str(scratch / ".cache" / "plans"),  # plan caches stay in the scratch copy
        "PYTHONDONTWRITEBYTECODE": "1",
    }


class PageRun:
    """Runs one page's blocks once each, in page order, in its own copy of the quickstart checkout."""

    def __init__(self, blocks: list[Block], checkout: Path, scratch: Path) -> None:
        self.blocks = [b for b in blocks if b.lang in RUN]
        self.checkout = checkout
        self.scratch = scratch
        self.env: dict[str, str] | None = None
        self.results: dict[int, tuple[str, str | None]] = {}  # line -> (status, failure message)

    def _prepare(self) -> None:
        if self.env is None:
            shutil.copytree(self.checkout, self.scratch, symlinks=True, dirs_exist_ok=True)
            self.env = block_env(self.scratch)

    def _execute(self, block: Block) -> tuple[str, str | None]:
        if block.not_run is not None:
            return "not-run", f"{block.where} is marked not-run: {block.not_run}"
        if block.needs_fairseq and not (FAIRSEQ_BIN / "fairseq-train").exists():
            return "skipped", f"{block.where} needs the fairseq peer: run `bash scripts/setup_peers.sh fairseq`"
        self._prepare()
        suffix = ".py" if block.lang == "python" else ".sh"
        program = self.scratch / ".blocks" / f"L{block.line}{suffix}"
        program.parent.mkdir(exist_ok=True)
        program.write_text(block.code, encoding="utf-8")
        command = [sys.executable, str(program)] if block.lang == "python" else ["bash", "-e", str(program)]
        try:
            done = subprocess.run(command, cwd=self.scratch, env=self.env, capture_output=True, text=True,
                                  timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            return "failed", f"{block.where} ran past {BLOCK_TIMEOUT} s:\n{block.head()}"
        if done.returncode != 0:
            return "failed", (
                f"{block.where} exited {done.returncode}:\n{block.head()}\n"
                f"--- stderr ---\n{done.stderr[-4000:]}\n--- stdout (end) ---\n{done.stdout[-1500:]}"
            )
        return "passed", None

    def run_through(self, block: Block) -> tuple[str, str | None]:
        """Run every block up to and including ``block`` that has not run yet; ``block``'s outcome."""
        for earlier in self.blocks:
            if earlier.line not in self.results:
                self.results[earlier.line] = self._execute(earlier)
            if earlier.line == block.line:
                break
        status, message = self.results[block.line]
        if status == "failed":
            failed_before = [f"line {n}" for n, (s, _) in self.results.items() if n < block.line and s == "failed"]
            if failed_before:
                message = f"{message}\n(earlier blocks of {block.page} failed too: {', '.join(failed_before)})"
        return status, message
