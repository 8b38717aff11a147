"""tokenmill: raw text to training-ready token data, served to training with exact resume.

The common jobs need only this module: ``tokenmill.prepare(...)``, ``tokenmill.open(path)``,
``tokenmill.batches(...)`` (numpy) and ``tokenmill.loader(...)`` (PyTorch), with the configs they
take (``tokenmill.open("s3://bucket/data-bin")`` reads from object storage through a local cache).
The modules below (``tokenmill.store``, ``.data``, ``.batching``, ``.loader``, ``.vocab``) stay
available for everything else.

Importing this package is cheap: each public name is imported from its module the first time it is
used (``tokenmill.open``, ``from tokenmill import batches``), so ``import tokenmill.store.reader`` or
``tokenmill --version`` pays only for what it runs.
"""

import importlib as _importlib
import importlib.util as _importlib_util
import sys as _sys
import types as _types
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from tokenmill._version import __version__

_PUBLIC = {
    "BatchConfig": "tokenmill.batching.config",
    "BlendedDataset": "tokenmill.data.blending",
    "ConfigError": "tokenmill.errors",
    "FormatError": "tokenmill.errors",
    "GPTBatchConfig": "tokenmill.batching.gpt_plan",
    "GPTDataset": "tokenmill.data.gpt_dataset",
    "GPTDatasetConfig": "tokenmill.data.gpt_dataset",
    "IndexedDataset": "tokenmill.store",
    "LangTokConfig": "tokenmill.data.multi_langtok",
    "PackConfig": "tokenmill.batching.packed_pairs",
    "PrepareConfig": "tokenmill.prepare",
    "PrepareSummary": "tokenmill.prepare",
    "RemoteOptions": "tokenmill.store.remote",
    "SamplingConfig": "tokenmill.data.sampling",
    "TokenmillError": "tokenmill.errors",
    "batches": "tokenmill.front",
    "loader": "tokenmill.front",
    "open": "tokenmill.front",
    "prepare": "tokenmill.front",
    "trace": "tokenmill.loader.trace",
}
"""Each public name and the module it is defined in."""

__all__ = [
    "BatchConfig",
    "BlendedDataset",
    "ConfigError",
    "FormatError",
    "GPTBatchConfig",
    "GPTDataset",
    "GPTDatasetConfig",
    "IndexedDataset",
    "LangTokConfig",
    "PackConfig",
    "PrepareConfig",
    "PrepareSummary",
    "RemoteOptions",
    "SamplingConfig",
    "TokenmillError",
    "__version__",
    "batches",
    "loader",
    "open",
    "prepare",
    "trace",
]

if _TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports on first use
    from tokenmill.batching.config import BatchConfig
    from tokenmill.batching.gpt_plan import GPTBatchConfig
    from tokenmill.batching.packed_pairs import PackConfig
    from tokenmill.data.blending import BlendedDataset
    from tokenmill.data.gpt_dataset import GPTDataset, GPTDatasetConfig
    from tokenmill.data.multi_langtok import LangTokConfig
    from tokenmill.data.sampling import SamplingConfig
    from tokenmill.errors import ConfigError, FormatError, TokenmillError
    from tokenmill.front import batches, loader, open, prepare
    from tokenmill.loader.trace import trace
    from tokenmill.prepare import PrepareConfig, PrepareSummary
    from tokenmill.store import IndexedDataset
    from tokenmill.store.remote import RemoteOptions


def __getattr__(name: str) -> _Any:
    """A public name, imported from its module on first use (then kept in the package's namespace), or a
    sub-package (``tokenmill.store`` after a bare ``import tokenmill``)."""
    if name in _PUBLIC:
        value = getattr(_importlib.import_module(_PUBLIC[name]), name)
    elif not name.startswith("_") and _importlib_util.find_spec(f"{__name__}.{name}") is not None:
        value = _importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


_SHADOWED = frozenset({"loader", "prepare"})
"""Public functions named like a sub-package (``tokenmill.prepare`` the function, ``tokenmill.prepare`` the
package): the name means the function, as it always has; the package is reached by its import
(``import tokenmill.prepare as p``, ``from tokenmill.prepare import PrepareConfig``)."""


class _Package(_types.ModuleType):
    """This package's module type: importing sub-package ``tokenmill.prepare`` (or ``.loader``) would bind the
    package to that name and hide the function; that binding is skipped so the function keeps its name."""

    def __setattr__(self, name: str, value: _Any) -> None:
        if name in _SHADOWED and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    """The public names (loaded or not) and the sub-packages imported so far."""
    return sorted({*__all__, *(name for name in globals() if not name.startswith("_"))})
