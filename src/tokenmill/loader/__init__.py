"""Iterators that serve batches with exact, O(1) resume; the framework adapters are imported on demand.

``from tokenmill.loader import BatchIterator`` never imports torch, TensorFlow or Grain; ``make_loader``,
``StatefulLoader`` and ``TorchBatches`` (:mod:`tokenmill.loader.torch`), ``TFBatches``
(:mod:`tokenmill.loader.tf`) and ``GrainBatches``/``grain_loader`` (:mod:`tokenmill.loader.grain`) do, on
first use.
"""

from __future__ import annotations

from typing import Any

from tokenmill.loader.iterator import BatchIterator, plan_sizes
from tokenmill.loader.multilingual import multilingual_batches

__all__ = ["BatchIterator", "GrainBatches", "StatefulLoader", "TFBatches", "TorchBatches", "grain_loader",
           "make_loader", "multilingual_batches", "plan_sizes"]

_TORCH_NAMES = {"StatefulLoader", "TorchBatches", "make_loader", "to_tensors"}
_TF_NAMES = {"TFBatches"}  # tokenmill.loader.tf: TensorFlow (pip install tokenmill[tf])
_GRAIN_NAMES = {"GrainBatches", "grain_loader"}  # tokenmill.loader.grain: Grain (pip install tokenmill[grain])


def __getattr__(name: str) -> Any:
    if name in _TORCH_NAMES:
        from tokenmill.loader import torch as torch_adapter

        return getattr(torch_adapter, name)
    if name in _TF_NAMES:
        from tokenmill.loader import tf as tf_adapter

        return getattr(tf_adapter, name)
    if name in _GRAIN_NAMES:
        from tokenmill.loader import grain as grain_adapter

        return getattr(grain_adapter, name)
    raise AttributeError(f"module 'tokenmill.loader' has no attribute {name!r}")
