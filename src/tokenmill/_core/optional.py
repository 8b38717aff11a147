"""Optional dependencies (pip extras): imported by the one module that needs each, with one clear error.

    tf = require("tensorflow", extra="tf", needed_by="tokenmill.loader.tf")

A missing package gives ``ModuleNotFoundError: tokenmill.loader.tf needs tensorflow: pip install
'tokenmill[tf]'``; an import error inside an installed package is raised as it is (it is a real bug).
"""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, *, extra: str, needed_by: str) -> ModuleType:
    """``module``, imported; a missing one (or a missing parent package) names the extra to install."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if not (module == missing or module.startswith(missing + ".")):
            raise
        raise ModuleNotFoundError(
            f"{needed_by} needs {module.split('.')[0]}: pip install 'tokenmill[{extra}]'", name=missing
        ) from error


__all__ = ["require"]
