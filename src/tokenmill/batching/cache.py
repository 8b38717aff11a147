"""On-disk cache of computed batch plans: a folder of ``.npy`` arrays, memory-mapped when read.

An entry is the folder ``<cache>/<key>/`` holding one ``.npy`` file per array and ``meta.json``.
It is written under a temporary folder name, every file fsync'ed, and renamed into place in one
step, so a reader sees a complete entry or none. A file lock per key makes concurrent processes
(ranks on one node, DataLoader workers) compute an entry once: the others wait, then map it.
Keys are fingerprints of data and settings; no pickle anywhere (``allow_pickle=False``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from tokenmill.errors import TokenmillError
from tokenmill.fsutil import fsync_dir

META = "meta.json"


def default_cache_dir() -> Path:
    """``$TOKENMILL_CACHE_DIR``, else ``$XDG_CACHE_HOME/tokenmill/plans``, else ``~/.cache/tokenmill/plans``."""
    configured = os.environ.get("TOKENMILL_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tokenmill" / "plans"


def fingerprint(obj: Any) -> str:
    """A short stable hash of a JSON-able object (sorted keys)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


Entry = tuple[dict[str, np.ndarray], dict[str, Any]]


def release_heap() -> None:
    """Give freed heap memory back to the OS (glibc's ``malloc_trim``; a no-op elsewhere).

    Computing a plan frees hundreds of MB of temporaries; glibc keeps them in its heap (counted in
    the process's resident memory) unless asked to trim. The plan itself is read back memory-mapped.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


class PlanCache:
    """Read and write cache entries under ``directory`` (None: keep nothing, compute every time)."""

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        self.directory = Path(directory) if directory is not None else None

    def _folder(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key

    def load(self, key: str) -> Entry | None:
        """The entry's arrays (memory-mapped, read-only) and metadata, or None when absent."""
        if self.directory is None:
            return None
        folder = self._folder(key)
        meta_file = folder / META
        if not meta_file.exists():
            return None
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
            arrays = {  # plain ndarray views over the maps: np.memmap's per-slice Python hooks are slow
                name: np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False).view(np.ndarray)
                for name in meta["arrays"]
            }
        except (OSError, ValueError, KeyError) as error:
            raise TokenmillError(
                f"batch plan cache entry {folder} is unreadable ({error}); delete that folder and start again"
            ) from None
        return arrays, meta

    def store(self, key: str, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Write an entry atomically (a concurrent identical entry that lands first wins)."""
        if self.directory is None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self._folder(key)
        tmp = self.directory / f"{key}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            for name, array in arrays.items():
                path = tmp / f"{name}.npy"
                with open(path, "wb") as handle:
                    np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
                    handle.flush()
                    os.fsync(handle.fileno())
            with open(tmp / META, "w", encoding="utf-8") as handle:
                json.dump({**meta, "arrays": sorted(arrays)}, handle, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            fsync_dir(tmp)
            try:
                os.rename(tmp, final)
            except OSError:
                if not (final / META).exists():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        fsync_dir(self.directory)

    def get_or_build(self, key: str, build: Callable[[], Entry]) -> tuple[Entry, bool]:
        """The cached entry, or ``build()`` stored then returned; the flag says it came from the cache."""
        found = self.load(key)
        if found is not None:
            return found, True
        if self.directory is None:
            return build(), False
        self.directory.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.directory / f"{key}.lock")):
            found = self.load(key)
            if found is not None:
                return found, True
            arrays, meta = build()
            self.store(key, arrays, meta)
            del arrays
        release_heap()
        loaded = self.load(key)
        assert loaded is not None
        return loaded, False

    def epoch_arrays(
        self, base_key: str, key_epoch: int, build: Callable[[], Any], keep_epochs: int
    ) -> tuple[Any, bool]:
        """An epoch's entry ``{base_key}-e{key_epoch}`` mapped or built; building a new epoch drops the
        entries of epochs more than ``keep_epochs`` behind it (a long run keeps a bounded cache)."""
        result, cached = self.get_or_build(f"{base_key}-e{key_epoch}", build)
        if not cached and key_epoch > keep_epochs:
            self.prune(base_key, older_than=key_epoch - keep_epochs + 1)
        return result, cached

    def prune(self, base: str, *, older_than: int) -> None:
        """Delete the entries ``<base>-e<k>`` with ``k < older_than`` (past epochs of one plan)."""
        if self.directory is None or not self.directory.exists():
            return
        for folder in self.directory.glob(f"{base}-e*"):
            suffix = folder.name[len(base) + 2 :]
            if folder.is_dir() and suffix.isdigit() and int(suffix) < older_than:
                shutil.rmtree(folder, ignore_errors=True)  # lock files stay: another process may hold one
