"""Every test keeps its caches in a temporary folder, never in the user's ``~/.cache``."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache_root(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOKENMILL_CACHE_DIR", str(tmp_path_factory.mktemp("tokenmill-cache-root")))
        yield
