"""A shared on-disk cache of index arrays: built once, then memory-mapped by every process.

An entry is a folder ``<kind>-<key>/`` holding one ``.npy`` per array and ``meta.json``. The key is
a hash of EVERY setting that changes the arrays plus a fingerprint of the data they were built
from, so a changed setting or a changed store can never load stale arrays.

When several processes (ranks) start together on an empty cache, each takes a file lock for the
key and re-checks; the first builds the arrays into a private temporary folder, fsyncs them and
renames the folder into place (atomic), then releases the lock; the others wake as soon as the
lock is free and find the finished entry. Nobody polls or waits on a timeout: the lock is the
operating system's ``flock``, released the moment its holder exits, so a builder that dies leaves
no stale lock and no half-written entry (its temporary folder is swept by the next builder).
Readers need no lock at all: an entry folder exists only once it is complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xxhash
from filelock import FileLock

from tokenmill.errors import FormatError, TokenmillError
from tokenmill.fsutil import fsync_dir

CACHE_FORMAT = 1
"""Bump when the arrays' meaning changes, so old entries stop matching."""
_TMP_MARKER = ".tmp-"


def fingerprint_array(array: np.ndarray) -> str:
    """A fast content hash (xxh3-128) of an array's dtype, shape and bytes; no copy for contiguous arrays."""
    array = np.ascontiguousarray(array)
    digest = xxhash.xxh3_128()
    digest.update(f"{array.dtype.str}{array.shape}".encode())
    digest.update(memoryview(array).cast("B"))
    return digest.hexdigest()


def cache_key(kind: str, settings: Mapping[str, object]) -> str:
    """SHA-256 of the canonical JSON of ``kind``, the cache format and ``settings``."""
    payload = json.dumps(
        {"kind": kind, "format": CACHE_FORMAT, "settings": settings}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    """Arrays of one entry (memory-mapped read-only) and whether this call built them."""

    path: Path
    arrays: dict[str, np.ndarray]
    built: bool
    meta: dict


def _write_npy(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as handle:
        np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
        handle.flush()
        os.fsync(handle.fileno())


class IndexCache:
    """Memory-mapped ``.npy`` entries under ``directory``, keyed by settings + data fingerprint."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def entry_path(self, kind: str, settings: Mapping[str, object]) -> Path:
        """Where the entry for these settings lives (whether or not it exists yet)."""
        return self.directory / f"{kind}-{cache_key(kind, settings)[:40]}"

    def load(self, kind: str, settings: Mapping[str, object]) -> CacheEntry | None:
        """The finished entry for these settings, memory-mapped, or None when there is none."""
        path = self.entry_path(kind, settings)
        meta_file = path / "meta.json"
        if not meta_file.is_file():
            return None
        try:
            meta = json.loads(meta_file.read_text())
        except (OSError, ValueError) as error:
            raise FormatError(
                f"{meta_file}: unreadable cache description ({error}); delete {path} to rebuild"
            ) from None
        expected = json.loads(json.dumps(dict(settings)))
        if meta.get("kind") != kind or meta.get("settings") != expected or meta.get("format") != CACHE_FORMAT:
            raise FormatError(
                f"{path}: cache entry does not describe the requested settings (a hash collision or a "
                f"hand-edited cache); delete {path} to rebuild"
            )
        arrays = {}
        for name, spec in meta["arrays"].items():
            file = path / f"{name}.npy"
            try:
                array = np.load(file, mmap_mode="r", allow_pickle=False)
            except (OSError, ValueError) as error:
                raise FormatError(f"{file}: unreadable cached array ({error}); delete {path} to rebuild") from None
            if list(array.shape) != spec["shape"] or array.dtype.str != spec["dtype"]:
                raise FormatError(
                    f"{file}: shape {array.shape} / dtype {array.dtype.str} differ from its description "
                    f"{spec}; delete {path} to rebuild"
                )
            arrays[name] = array
        return CacheEntry(path, arrays, False, meta)

    def get_or_build(
        self,
        kind: str,
        settings: Mapping[str, object],
        build: Callable[[], Mapping[str, np.ndarray]],
        *,
        description: Mapping[str, object] | None = None,
    ) -> CacheEntry:
        """The entry for ``settings``; if missing, exactly one of the processes asking runs ``build``.

        ``settings`` must name every input that changes the arrays (including a data fingerprint);
        ``description`` is extra, human-readable context stored in ``meta.json`` (not hashed).
        """
        found = self.load(kind, settings)
        if found is not None:
            return found
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise TokenmillError(
                f"cannot create the index cache folder {self.directory} ({error}); choose a writable cache_dir"
            ) from None
        final = self.entry_path(kind, settings)
        lock = FileLock(str(final) + ".lock")
        try:
            lock.acquire()  # blocks until the holder finishes or dies; no timeout to expire
        except OSError as error:
            raise TokenmillError(f"cannot lock {final}.lock ({error}); choose a writable cache_dir") from None
        try:
            found = self.load(kind, settings)
            if found is not None:
                return found
            self._sweep_temporaries(final)
            started = time.perf_counter()
            arrays = dict(build())
            seconds = time.perf_counter() - started
            self._publish(final, kind, settings, arrays, seconds, description)
        finally:
            lock.release()
        entry = self.load(kind, settings)
        assert entry is not None
        return CacheEntry(entry.path, entry.arrays, True, entry.meta)

    def _sweep_temporaries(self, final: Path) -> None:
        """Remove temporary folders an interrupted builder of this entry left (we hold its lock)."""
        for stale in self.directory.glob(f"{final.name}{_TMP_MARKER}*"):
            shutil.rmtree(stale, ignore_errors=True)

    def _publish(
        self,
        final: Path,
        kind: str,
        settings: Mapping[str, object],
        arrays: Mapping[str, np.ndarray],
        seconds: float,
        description: Mapping[str, object] | None,
    ) -> None:
        tmp = final.with_name(f"{final.name}{_TMP_MARKER}{os.getpid()}-{uuid.uuid4().hex[:8]}")
        tmp.mkdir()
        try:
            specs = {}
            for name, array in arrays.items():
                _write_npy(tmp / f"{name}.npy", array)
                specs[name] = {"shape": list(np.shape(array)), "dtype": np.asarray(array).dtype.str}
            meta = {
                "kind": kind,
                "format": CACHE_FORMAT,
                "settings": dict(settings),
                "arrays": specs,
                "build_seconds": round(seconds, 3),
                "description": dict(description or {}),
            }
            with open(tmp / "meta.json", "w", encoding="utf-8") as handle:
                json.dump(meta, handle, indent=2, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            fsync_dir(tmp)
            if final.exists():
                # A folder without meta.json is never a finished entry (we hold its lock): replace it.
                shutil.rmtree(final)
            os.rename(tmp, final)
            fsync_dir(self.directory)
        except BaseException:
            with contextlib.suppress(OSError):
                shutil.rmtree(tmp)
            raise


__all__ = ["CACHE_FORMAT", "CacheEntry", "IndexCache", "cache_key", "fingerprint_array"]
