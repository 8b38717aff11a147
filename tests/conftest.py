"""Shared fixtures: every test keeps its caches in a temporary folder, never in the user's ``~/.cache``;
one data_bin of many directions serves the tests of every layer that reads it.

``scripts/test.sh`` runs the suite in two parts (``--part``, added here). ``--part serial``: the tests
marked ``serial``, one after another with the machine to themselves. ``--part parallel``: every other
test, on pytest-xdist workers (``-n 2 --dist loadgroup``). A new test runs in the parallel part unless it
is marked ``serial`` (``pytestmark = pytest.mark.serial``), which it must be when it starts a Ray or
Slurm cluster or a browser, or asserts how long something takes (Ctrl-C stops within N seconds): beside
another worker's tests on two loaded cores such a test times out. A test that binds a port binds port 0.

Under pytest-xdist's ``--dist loadgroup`` every test module is one unit of work, so its module fixtures are
built once; tests marked ``xdist_group`` keep their group. Units holding a ``slow`` test go first, so no
long unit is left alone at the end while the other worker idles. A session fixture that prepares data
(the quickstart checkout) is built once per run, not once per worker: ``tests/shared_once.py`` shares it
through a file lock in the run's temporary folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.data.multi_corpus import make_data_bin
from tests.doc_blocks import quickstart_checkout as quickstart_checkout_at
from tests.shared_once import built_once
from tokenmill.data.multi_pairs import MultiPairDataset

PARTS = ("all", "serial", "parallel")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--part", choices=PARTS, default="all",
                     help="run only the tests marked serial, or only the others (scripts/test.sh runs both)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): tests pytest-xdist runs on one worker, one at a time")
    if _by_groups(config):
        config.option.loadscopereorder = False  # the order is set by pytest_collection_modifyitems below


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``--part serial``, a test module that never says ``mark.serial`` is not even imported: the serial
    part then skips the imports of the whole suite (TensorFlow, torch: ~10 s of CPU). So a serial test is
    marked in its own module, by ``pytestmark`` or a decorator."""
    if config.getoption("part") != "serial" or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    return "mark.serial" not in collection_path.read_text(encoding="utf-8")


def _by_groups(config: pytest.Config) -> bool:
    """Whether pytest-xdist distributes by ``xdist_group`` (``-n N --dist loadgroup``): asked in the controller
    and in each worker (a worker's ``dist`` is "no", its ``loadgroup`` true)."""
    return getattr(config.option, "dist", "no") == "loadgroup" or getattr(config.option, "loadgroup", False)


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the tests of ``--part``; then, under ``--dist loadgroup``: a test without a group joins its
    module's; units with a slow test first, then the larger units (each worker collects, and so orders, the
    same way)."""
    _keep_part(config, items)
    if not _by_groups(config):
        return
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        if mark is None:
            mark = pytest.mark.xdist_group(item.nodeid.split("::")[0])
            item.add_marker(mark)
        units.setdefault(mark.args[0] if mark.args else mark.kwargs["name"], []).append(item)
    order = sorted(units.values(), key=lambda unit: (not any(i.get_closest_marker("slow") for i in unit), -len(unit)))
    items[:] = [item for unit in order for item in unit]


def _keep_part(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests outside ``--part`` (serial: those marked ``serial``; parallel: the others)."""
    part = config.getoption("part")
    if part == "all":
        return
    keep = [item for item in items if (item.get_closest_marker("serial") is not None) == (part == "serial")]
    if len(keep) < len(items):
        kept = {id(item) for item in keep}
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept])
        items[:] = keep


@pytest.fixture(autouse=True, scope="session")
def _private_cache_root(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOKENMILL_CACHE", str(tmp_path_factory.mktemp("tokenmill-cache-root")))
        yield


@pytest.fixture(scope="session")
def multi_data_bin(tmp_path_factory):
    """A data_bin of many directions in shards (``tests/data/multi_corpus.py``), built once and only read."""
    return built_once(tmp_path_factory, "multi", lambda folder: make_data_bin(folder / "data_bin"))


@pytest.fixture(scope="session")
def multi_dataset(multi_data_bin) -> MultiPairDataset:
    """Every direction of :func:`multi_data_bin`, tagged as prepare recorded."""
    return MultiPairDataset.from_dir(multi_data_bin)


@pytest.fixture(scope="session")
def survive_seeds(tmp_path_factory):
    """Valid files of every kind tokenmill reads, for the readers-survive tests to mutate (never written).
    Imported here, not at the top: the seeds need the optional tokenizer libraries."""
    from tests.survive.seeds import build_seeds

    return build_seeds(tmp_path_factory.mktemp("survive-seeds"))


@pytest.fixture(scope="session")
def sandbox():
    """A child interpreter the readers-survive tests read mutated files in (crashes and hangs stay there)."""
    from tests.survive.sandbox import Sandbox

    child = Sandbox()
    yield child
    child.close()


@pytest.fixture(scope="session")
def quickstart_checkout(tmp_path_factory):
    """A scratch copy of the checkout after ``bash examples/quickstart.sh``, shared by the README and docs
    tests: each page copies it and runs its blocks in its copy (``tests/doc_blocks.py``)."""
    return built_once(tmp_path_factory, "quickstart", quickstart_checkout_at)
