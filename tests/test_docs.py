"""The documentation site: every ```python and ```bash block of every page under ``docs/`` runs as
written (each page in its own scratch copy of the checkout after ``bash examples/quickstart.sh``, its
blocks in page order; see :mod:`tests.doc_blocks`), and ``mkdocs build --strict`` passes (a broken
link, a page missing from the nav or a reference mkdocstrings cannot resolve fails it)."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys

import pytest

from tests.doc_blocks import REPO, RUN, PageRun, odd_blocks, page_blocks
from tokenmill.cli import COMMANDS
from tokenmill.prepare.config import NESTED, SETTINGS

PAGES = sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))
BLOCKS = {page: page_blocks(page) for page in PAGES}
RUNNABLE = [b for page in PAGES for b in BLOCKS[page] if b.lang in RUN]
MAX_NOT_RUN = 8


def test_docs_blocks_are_all_known_kinds():
    odd = [item for page in PAGES for item in odd_blocks(BLOCKS[page])]
    assert not odd, f"docs blocks must be ```python/```bash (run) or ```console/```text/```yaml (shown): {odd}"
    assert len(RUNNABLE) >= 30, "the docs lost their examples?"


def test_not_run_blocks_are_few_and_say_why():
    not_run = {b.id: b.not_run for b in RUNNABLE if b.not_run is not None}
    assert all(reason for reason in not_run.values()), f"every not-run marker needs a reason: {not_run}"
    assert len(not_run) <= MAX_NOT_RUN, f"too many docs blocks are not run: {not_run}"


@pytest.fixture(scope="module")
def page_runs(quickstart_checkout, tmp_path_factory) -> dict[str, PageRun]:
    root = tmp_path_factory.mktemp("docs-pages")
    return {page: PageRun(BLOCKS[page], quickstart_checkout, root / page.replace("/", "__")) for page in PAGES}


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_docs_block_runs_as_written(page_runs, block):
    status, message = page_runs[block.page].run_through(block)
    if status in ("not-run", "skipped"):
        pytest.skip(message)
    assert status == "passed", message


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed: pip install -e '.[docs]' (scripts/test.sh installs it)")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-6000:]}"
    return out


def test_mkdocs_build_strict_passes(site):
    assert (site / "index.html").is_file()


def test_config_page_lists_every_setting(site):
    """The config keys are generated from the dataclass at build time: a new field shows up by itself."""
    page = (site / "reference" / "config" / "index.html").read_text(encoding="utf-8")
    keys = [setting.key for setting in SETTINGS]
    keys += [f"{group}.{f.name}" for group, cls in NESTED.items() for f in dataclasses.fields(cls)]
    missing = [key for key in keys if f"<code>{key}</code>" not in page]
    assert not missing, f"reference/config.md lacks {missing}"


def test_cli_page_documents_every_command(site):
    page = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    missing = [name for name in COMMANDS if f"tokenmill {name}" not in page]
    assert not missing, f"reference/cli.md lacks {missing}"
    assert "--filter-max-ratio" in page and "--trainpref" in page, "prepare's flags are not in the reference"
