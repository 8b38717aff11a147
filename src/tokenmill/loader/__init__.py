"""Iterators that serve batches with exact, O(1) resume; the PyTorch adapter is imported on demand.

``from tokenmill.loader import BatchIterator`` never imports torch; ``make_loader``,
``StatefulLoader`` and ``TorchBatches`` (from :mod:`tokenmill.loader.torch`) do, on first use.
"""

from __future__ import annotations

from typing import Any

from tokenmill.loader.iterator import BatchIterator, plan_sizes

__all__ = ["BatchIterator", "StatefulLoader", "TorchBatches", "make_loader", "plan_sizes"]

_TORCH_NAMES = {"StatefulLoader", "TorchBatches", "make_loader", "to_tensors"}


def __getattr__(name: str) -> Any:
    if name in _TORCH_NAMES:
        from tokenmill.loader import torch as torch_adapter

        return getattr(torch_adapter, name)
    raise AttributeError(f"module 'tokenmill.loader' has no attribute {name!r}")
