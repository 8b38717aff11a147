"""Shared fixtures: every test keeps its caches in a temporary folder, never in the user's ``~/.cache``;
one data_bin of many directions serves the tests of every layer that reads it.

Under pytest-xdist's ``--dist loadgroup`` (``pytest -n auto --dist loadgroup``, for a machine with cores to
spare: ``docs/how-to/tests.md``; ``scripts/test.sh`` runs the suite in one process) every test module is one
unit of work, so its module fixtures are built once; tests marked ``xdist_group`` keep their
group (``ray``: the tests that start a Ray run one at a time). Units holding a ``slow`` test go first, so
no long unit is left alone at the end while the other worker idles.
"""

from __future__ import annotations

import pytest

from tests.data.multi_corpus import make_data_bin
from tests.doc_blocks import quickstart_checkout as quickstart_checkout_at
from tokenmill.data.multi_pairs import MultiPairDataset


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): tests pytest-xdist runs on one worker, one at a time")
    if _by_groups(config):
        config.option.loadscopereorder = False  # the order is set by pytest_collection_modifyitems below


def _by_groups(config: pytest.Config) -> bool:
    """Whether pytest-xdist distributes by ``xdist_group`` (``-n N --dist loadgroup``): asked in the controller
    and in each worker (a worker's ``dist`` is "no", its ``loadgroup`` true)."""
    return getattr(config.option, "dist", "no") == "loadgroup" or getattr(config.option, "loadgroup", False)


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup``: a test without a group joins its module's; units with a slow test first,
    then the larger units (each worker collects, and so orders, the same way)."""
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


@pytest.fixture(autouse=True, scope="session")
def _private_cache_root(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOKENMILL_CACHE", str(tmp_path_factory.mktemp("tokenmill-cache-root")))
        yield


@pytest.fixture(scope="session")
def multi_data_bin(tmp_path_factory):
    """A data_bin of many directions in shards (``tests/data/multi_corpus.py``), built once and only read."""
    return make_data_bin(tmp_path_factory.mktemp("multi") / "data_bin")


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
    return quickstart_checkout_at(tmp_path_factory.mktemp("quickstart"))
