"""What a URL is to tokenmill: the test that tells one from a local path, its fsspec filesystem, and the
errors of reading one. fsspec is imported only when a URL is first read (it is the ``s3`` extra)."""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from typing import Any

from tokenmill.errors import ConfigError, TokenmillError


def _fsspec_core() -> Any:
    """``fsspec.core``, imported when a URL is first read: it is the s3 extra, and importing it costs tens of
    milliseconds (ssl, asyncio) that ``import tokenmill`` should not pay. None when it is not installed."""
    try:
        return importlib.import_module("fsspec.core")
    except ImportError:
        return None


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*(::|://)")


class RemoteError(TokenmillError):
    """A remote directory that cannot be read (unreachable, or not what its manifest says)."""


class NoManifest(RemoteError):
    """No ``manifest.json`` at a URL (:func:`locate` then looks in the folders above)."""


def is_url(path: object) -> bool:
    """True for ``s3://...``, ``gs://...``, ``https://...``, ``simplecache::s3://...``: not a local path."""
    return isinstance(path, str) and _URL.match(path) is not None


def url_filesystem(url: str, storage_options: Mapping[str, Any] | None = None, shown: str | None = None) -> Any:
    """(fsspec filesystem, path in it) of ``url``; one clear error when fsspec or the protocol's filesystem
    is missing or the URL does not parse (``shown``: how the message names the URL)."""
    shown = shown or url
    core = _fsspec_core()
    if core is None:
        raise ConfigError(f"{shown}: reading a URL needs fsspec and its filesystem: pip install 'tokenmill[s3]'")
    try:
        return core.url_to_fs(url, **dict(storage_options or {}))
    except ImportError as error:
        raise ConfigError(
            f"{shown}: {error}; pip install 'tokenmill[s3]' for s3://, or the fsspec filesystem of this protocol "
            "(gcsfs for gs://)"
        ) from None
    except (ValueError, TypeError) as error:
        raise ConfigError(f"{shown}: cannot open it with fsspec ({describe_error(error)}); check the URL and "
                          "storage_options") from None


def describe_error(error: BaseException) -> str:
    """An exception as one short line for a message: its type and its first 300 characters."""
    text = " ".join(str(error).split())[:300]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
