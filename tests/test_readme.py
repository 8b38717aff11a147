"""The README runs as written: every ```python and ```bash block, as a reader would (see
:mod:`tests.doc_blocks`: a scratch copy of the checkout after ``bash examples/quickstart.sh``).

Each README example is also the first block of a docs page, verbatim: ``tests/test_docs.py`` runs it
there, first, in a fresh copy of the checkout after the quickstart: exactly where a reader of the README
runs it. Such a block is not run a second time here; a README block that no docs page starts with runs
here, in README order.

The README is the front page: at most 250 lines, and its first command installs what the main job and
every README example need (the ``all`` extra) and runs the main job.
"""

from __future__ import annotations

import pytest

from tests.doc_blocks import REPO, RUN, Block, PageRun, odd_blocks, page_blocks

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

BLOCKS = page_blocks("README.md")
RUNNABLE = [b for b in BLOCKS if b.lang in RUN]


def _first_docs_blocks() -> dict[str, Block]:
    """The first runnable block of each docs page, by its code (the docs test runs it first on its page)."""
    first: dict[str, Block] = {}
    for path in sorted((REPO / "docs").rglob("*.md")):
        runnable = [b for b in page_blocks(str(path.relative_to(REPO))) if b.lang in RUN]
        if runnable and runnable[0].not_run is None:
            first.setdefault(runnable[0].code, runnable[0])
    return first


RUN_IN_DOCS = _first_docs_blocks()
HERE = [b for b in RUNNABLE if b.not_run is not None or b.code not in RUN_IN_DOCS]  # the rest run in docs
MAX_NOT_RUN = 2
MAX_LINES = 250
NOT_RUNTIME = {"test", "docs", "all"}  # extras that are not features a README example may need


def test_readme_blocks_are_all_known_kinds():
    """A block with another info string (or none) would be neither run nor knowingly shown."""
    odd = odd_blocks(BLOCKS)
    assert not odd, f"README blocks must be ```python/```bash (run) or ```console/```text/```yaml (shown): {odd}"
    assert len(RUNNABLE) >= 5, "the README lost its examples?"



def test_not_run_blocks_are_few_and_say_why():
    not_run = {b.id: b.not_run for b in RUNNABLE if b.not_run is not None}
    assert all(reason for reason in not_run.values()), f"every not-run marker needs a reason: {not_run}"
    assert len(not_run) <= MAX_NOT_RUN, f"too many README blocks are not run: {not_run}"


def test_the_quickstart_block_is_what_the_fixture_runs():
    """The first block clones, installs everything the examples need and runs the main job; the test
    runs its main job (``bash examples/quickstart.sh``) before any other block."""
    first = RUNNABLE[0]
    assert first.not_run and "bash examples/quickstart.sh" in first.code, first
    assert "git clone" in first.code and ".[all]" in first.code, first


def test_readme_is_a_front_page():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; the front page keeps at most {MAX_LINES}"


def test_the_all_extra_installs_every_optional_feature():
    """``pip install -e '.[all]'`` (the README's first command) brings every runtime extra, so every README
    example runs after it: the examples may use any feature, and the tests below run them all."""
    if tomllib is None:
        pytest.skip("tomllib needs Python 3.11")
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    wanted = {req for name, reqs in extras.items() if name not in NOT_RUNTIME for req in reqs}
    missing = sorted(wanted - set(extras["all"]))
    assert not missing, f"the 'all' extra lacks {missing}: add them to [project.optional-dependencies] all"


@pytest.fixture(scope="module")
def readme_run(quickstart_checkout, tmp_path_factory) -> PageRun:
    return PageRun(HERE, quickstart_checkout, tmp_path_factory.mktemp("readme"))


@pytest.mark.parametrize("block", HERE, ids=[b.id for b in HERE])
def test_readme_block_runs_as_written(readme_run, block):
    status, message = readme_run.run_through(block)
    if status in ("not-run", "skipped"):
        pytest.skip(message)
    assert status == "passed", message
