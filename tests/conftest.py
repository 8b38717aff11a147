"""Shared fixtures: every test keeps its caches in a temporary folder, never in the user's ``~/.cache``;
one data_bin of many directions serves the tests of every layer that reads it."""

from __future__ import annotations

import pytest

from tests.data.multi_corpus import make_data_bin
from tests.doc_blocks import quickstart_checkout as quickstart_checkout_at
from tokenmill.data.multi_pairs import MultiPairDataset


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
