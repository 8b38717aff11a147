"""How remote directories are cached and fetched, and what this process fetched."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tokenmill.errors import ConfigError
from tokenmill.fsutil import cache_root


@dataclass(frozen=True)
class RemoteOptions:
    """How remote directories are cached and fetched."""

    cache_dir: str | os.PathLike[str] | None = None
    """Folder of cached views (None: ``$TOKENMILL_CACHE/remote`` or ``~/.cache/tokenmill/remote``)."""
    retries: int = 4
    """Retries of a failed request (after the backend's own), with exponential backoff."""
    backoff: float = 0.5
    """Seconds before the first retry; doubled for each next one."""
    chunk_bytes: int = 16 << 20
    """Bytes per ranged request."""
    workers: int = 4
    """Files fetched at once."""

    def __post_init__(self) -> None:
        for name, low in (("retries", 0), ("chunk_bytes", 1), ("workers", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ConfigError(f"RemoteOptions.{name} must be an integer >= {low}, got {value!r}")
        if not isinstance(self.backoff, int | float) or self.backoff < 0:
            raise ConfigError(f"RemoteOptions.backoff must be a number >= 0, got {self.backoff!r}")


def default_remote_cache() -> Path:
    """``<tokenmill cache>/remote``: where cached views of remote directories live."""
    return cache_root() / "remote"


@dataclass
class FetchLog:
    """What this process downloaded (tests and benchmarks read it)."""

    files: list[str] = field(default_factory=list)
    bytes: int = 0
    retries: int = 0
