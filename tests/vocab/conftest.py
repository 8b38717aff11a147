"""Markers used by the vocab tests (registered here so ``--strict-markers`` runs stay clean)."""

from __future__ import annotations


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "t2t: compares with Tensor2Tensor itself in its venv (TOKENMILL_T2T_PYTHON)")
