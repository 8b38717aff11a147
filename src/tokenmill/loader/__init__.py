"""Iterators that serve batches with exact, O(1) resume; the framework adapters are imported on demand.

``from tokenmill.loader import BatchIterator`` never imports torch, TensorFlow or Grain; ``make_loader``,
``StatefulLoader`` and ``TorchBatches`` (:mod:`tokenmill.loader.torch`), ``TFBatches``
(:mod:`tokenmill.loader.tf`) and ``GrainBatches``/``grain_loader`` (:mod:`tokenmill.loader.grain`) do, on
first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from tokenmill.loader.iterator import BatchIterator, plan_sizes
from tokenmill.loader.multilingual import multilingual_batches

__all__ = ["BatchIterator", "GrainBatches", "StatefulLoader", "TFBatches", "TorchBatches", "grain_loader",
           "make_loader", "multilingual_batches", "plan_sizes"]

_ADAPTERS = {  # name -> module; each needs its framework (an optional extra), so it is imported on first use
    **dict.fromkeys(("StatefulLoader", "TorchBatches", "make_loader", "rank_and_world", "to_tensors"),
                    "tokenmill.loader.torch"),  # pip install tokenmill[torch]
    "TFBatches": "tokenmill.loader.tf",  # pip install tokenmill[tf]
    **dict.fromkeys(("GrainBatches", "grain_loader"), "tokenmill.loader.grain"),  # pip install tokenmill[grain]
}


def adapter(name: str) -> Any:
    """The framework adapter object ``name`` (``"StatefulLoader"``, ``"TFBatches"``...), importing its module
    and its framework now; a missing framework raises ``ModuleNotFoundError`` naming the extra to install."""
    return getattr(importlib.import_module(_ADAPTERS[name]), name)


def __getattr__(name: str) -> Any:
    """PEP 562: the framework adapters load when first named, so importing this package needs none of them."""
    if name in _ADAPTERS:
        return adapter(name)
    raise AttributeError(f"module 'tokenmill.loader' has no attribute {name!r}")
