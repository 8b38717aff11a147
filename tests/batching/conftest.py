"""Keep plan caches and verification stamps of these tests out of the user's ~/.cache."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TOKENMILL_CACHE", str(tmp_path_factory.mktemp("tokenmill-cache")))
