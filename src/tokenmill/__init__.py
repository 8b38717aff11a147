"""tokenmill: raw text to training-ready token data, served to training with exact resume."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tokenmill")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
