"""Atomic file writes: a killed process never leaves a file that looks finished.

Every output is written under a temporary name in the target's own directory, flushed and
fsync'ed, then renamed over the final name with ``os.replace`` (atomic on POSIX), and the
directory entry is fsync'ed so the rename survives a crash.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

TMP_MARKER = ".tmp-"


CACHE_VARIABLE = "TOKENMILL_CACHE"
OLD_CACHE_VARIABLE = "TOKENMILL_CACHE_DIR"
"""The name the cache folder had before; still read when ``TOKENMILL_CACHE`` is not set."""


def cache_root() -> Path:
    """Where tokenmill keeps what it can rebuild or fetch again: ``$TOKENMILL_CACHE`` (or its older name
    ``$TOKENMILL_CACHE_DIR``), else ``$XDG_CACHE_HOME/tokenmill``, else ``~/.cache/tokenmill`` (each user
    of it takes a subfolder)."""
    configured = os.environ.get(CACHE_VARIABLE) or os.environ.get(OLD_CACHE_VARIABLE)
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tokenmill"


def temp_name(path: Path) -> Path:
    """A sibling name unique to this process; never confused with a finished file."""
    return path.with_name(f"{path.name}{TMP_MARKER}{os.getpid()}")


def fsync_dir(directory: Path) -> None:
    """Persist the directory entry after a rename (no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def commit(tmp: Path, final: Path) -> None:
    """Flush ``tmp`` to disk and rename it to ``final`` atomically."""
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, final)
    fsync_dir(final.parent)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces ``path``, on error it is removed."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(final)
    try:
        yield tmp
        commit(tmp, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file for writing that atomically becomes ``path`` when the block ends cleanly."""
    binary = "b" in mode
    with atomic_path(path) as tmp, open(tmp, mode, encoding=None if binary else encoding) as handle:
        yield handle
        handle.flush()


def write_json(path: str | os.PathLike[str], obj: Any, *, sort_keys: bool = True) -> None:
    """Write ``obj`` as pretty JSON atomically (keys sorted unless their order carries meaning)."""
    with atomic_write(path) as handle:
        json.dump(obj, handle, indent=2, sort_keys=sort_keys, ensure_ascii=False)
        handle.write("\n")


def remove_stale_temps(directory: str | os.PathLike[str]) -> int:
    """Delete temporaries a killed run left in ``directory``; returns how many were removed."""
    removed = 0
    for entry in Path(directory).glob(f"*{TMP_MARKER}*"):
        if entry.is_file():
            entry.unlink(missing_ok=True)
            removed += 1
    return removed
