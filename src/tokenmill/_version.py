"""tokenmill's version, in a leaf module: ``pyproject.toml`` reads it from here when the package is built,
and every module that records or prints the version imports it from here, never from the package
(``from tokenmill import __version__`` would run the package's ``__init__``)."""

__version__ = "0.1.0"
