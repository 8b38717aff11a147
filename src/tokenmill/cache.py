"""The one on-disk cache of computed arrays: epoch plans, sampling plans, GPT indices, blends.

An entry is a folder ``<kind>-<key>[-e<epoch>]/`` of ``.npy`` files and ``meta.json``. The key is a
hash of the entry's kind, the cache format and EVERY setting that changes the arrays (a data
fingerprint included), so a changed setting or store never loads stale arrays; ``meta.json`` keeps
those settings and is checked on load. Entries are read memory-mapped and shared by every process.

Building: a process takes the entry's file lock (the OS's ``flock``, released the moment its holder
exits, so a builder that dies leaves no stale lock), re-checks, builds into a private temporary
folder, fsyncs, and renames it into place; the others wake when the lock is free and map the
finished entry. Readers take no lock: an entry folder exists only once complete. No pickle anywhere.

Where: ``cache=True`` (the default everywhere) is ``$TOKENMILL_CACHE/arrays``, else
``~/.cache/tokenmill/arrays`` (:func:`tokenmill.fsutil.cache_root`); a path is that folder;
``False``/``None`` keeps nothing and computes every time.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import numpy as np
import xxhash
from filelock import FileLock

from tokenmill.errors import ConfigError, FormatError, TokenmillError
from tokenmill.fsutil import cache_root, fsync_dir

CACHE_FORMAT = 2
"""Bump when the arrays' meaning or the entry layout changes, so old entries stop matching."""
META = "meta.json"
_TMP_MARKER = ".tmp-"

Arrays = Mapping[str, np.ndarray]
Built = Arrays | tuple[Arrays, Mapping[str, Any]]
"""What a build function returns: the arrays, or the arrays and a JSON-able ``info`` dict kept with them."""


def fingerprint(obj: Any) -> str:
    """A short stable hash of a JSON-able object (sorted keys): identities of settings and data."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def fingerprint_array(array: np.ndarray) -> str:
    """A fast content hash (xxh3-128) of an array's dtype, shape and bytes; no copy for contiguous arrays."""
    array = np.ascontiguousarray(array)
    digest = xxhash.xxh3_128()
    digest.update(f"{array.dtype.str}{array.shape}".encode())
    digest.update(memoryview(array).cast("B"))
    return digest.hexdigest()


def default_cache_dir() -> Path:
    """Where ``cache=True`` keeps entries: ``$TOKENMILL_CACHE/arrays``, else ``~/.cache/tokenmill/arrays``."""
    return cache_root() / "arrays"


def release_heap() -> None:
    """Give freed heap memory back to the OS (glibc's ``malloc_trim``; a no-op elsewhere).

    Building a plan frees hundreds of MB of temporaries that glibc would otherwise keep in the
    process's resident memory; the arrays themselves are read back memory-mapped.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


@dataclass(frozen=True)
class CacheEntry:
    """One entry's arrays (memory-mapped, read-only), its build ``info`` and whether this call built it."""

    arrays: dict[str, np.ndarray]
    info: dict[str, Any] = field(default_factory=dict)
    built: bool = True
    path: Path | None = None
    """The entry's folder (None when nothing is cached)."""


CacheLike = Union["ArrayCache", str, os.PathLike, bool, None]
"""What a ``cache=`` argument takes: an :class:`ArrayCache`, a folder, True (default folder) or False/None (off)."""


def array_cache(cache: CacheLike = True) -> ArrayCache:
    """The :class:`ArrayCache` a ``cache=`` argument names."""
    if isinstance(cache, ArrayCache):
        return cache
    if cache is True:
        return ArrayCache(default_cache_dir())
    if cache is False or cache is None:
        return ArrayCache(None)
    if not isinstance(cache, str | os.PathLike):
        raise ConfigError(f"cache= takes True (the default folder), a folder, or False (keep nothing); got {cache!r}")
    return ArrayCache(cache)


def _write_npy(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as handle:
        np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
        handle.flush()
        os.fsync(handle.fileno())


@contextlib.contextmanager
def _locked(entry: Path) -> Iterator[None]:
    """Hold ``entry``'s lock file while the block runs (one builder per entry across processes)."""
    lock = FileLock(str(entry) + ".lock")
    try:
        lock.acquire()  # blocks until the holder finishes or dies; no timeout to expire
    except OSError as error:
        raise TokenmillError(f"cannot lock {entry}.lock ({error}); choose a writable cache") from None
    try:
        yield
    finally:
        lock.release()


class ArrayCache:
    """Memory-mapped ``.npy`` entries under ``directory`` (None: keep nothing, build every time)."""

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        # absolute, so in-place builds compare equal to numpy's (absolute) memory-map file names and
        # a worker that changes directory still finds the entries
        self.directory = Path(directory).expanduser().resolve() if directory is not None else None

    def __repr__(self) -> str:
        return f"ArrayCache({None if self.directory is None else str(self.directory)!r})"

    def state(self) -> str | None:
        """The folder as a string (what travels to DataLoader workers; ``array_cache`` turns it back)."""
        return None if self.directory is None else str(self.directory)

    @staticmethod
    def key(kind: str, settings: Mapping[str, object]) -> str:
        """SHA-256 prefix of the canonical JSON of ``kind``, the cache format and ``settings``."""
        payload = json.dumps({"kind": kind, "format": CACHE_FORMAT, "settings": settings}, sort_keys=True,
                             separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()[:40]

    def entry_path(self, kind: str, settings: Mapping[str, object], epoch: int | None = None) -> Path:
        """Where the entry for these settings (and epoch) lives, whether or not it exists yet."""
        if self.directory is None:
            raise TokenmillError("this cache keeps nothing: it has no entry paths")
        suffix = "" if epoch is None else f"-e{int(epoch)}"
        return self.directory / f"{kind}-{self.key(kind, settings)}{suffix}"

    def load(self, kind: str, settings: Mapping[str, object], epoch: int | None = None) -> CacheEntry | None:
        """The finished entry, memory-mapped, or None when there is none."""
        if self.directory is None:
            return None
        path = self.entry_path(kind, settings, epoch)
        meta_file = path / META
        if not meta_file.is_file():
            return None
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
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
            try:  # plain ndarray views over the maps: np.memmap's per-slice Python hooks are slow
                array = np.load(file, mmap_mode="r", allow_pickle=False).view(np.ndarray)
            except (OSError, ValueError) as error:
                raise FormatError(f"{file}: unreadable cached array ({error}); delete {path} to rebuild") from None
            if list(array.shape) != spec["shape"] or array.dtype.str != spec["dtype"]:
                raise FormatError(
                    f"{file}: shape {array.shape} / dtype {array.dtype.str} differ from its description "
                    f"{spec}; delete {path} to rebuild"
                )
            arrays[name] = array
        return CacheEntry(arrays, dict(meta.get("info", {})), False, path)

    def get_or_build(
        self,
        kind: str,
        settings: Mapping[str, object],
        build: Callable[[], Built],
        *,
        epoch: int | None = None,
        keep_epochs: int | None = None,
        description: Mapping[str, object] | None = None,
        scratch: bool = False,
    ) -> CacheEntry:
        """The entry for ``settings`` (and ``epoch``); if missing, exactly one of the processes asking builds it.

        ``settings`` must name every input that changes the arrays (including a data fingerprint);
        ``description`` is human-readable context kept in ``meta.json`` (not hashed). With ``epoch``
        and ``keep_epochs``, building epoch e removes this kind/settings' entries of epochs before
        ``e - keep_epochs + 1`` (a long run keeps a bounded cache). With ``scratch``, ``build`` is
        called with the entry's private temporary folder (None when nothing is cached) and may return
        arrays it wrote there itself (``.npy`` memory maps named ``<name>.npy``), so arrays larger
        than memory go to disk as they are built.
        """
        found = self.load(kind, settings, epoch)
        if found is not None:
            return found
        if self.directory is None:
            arrays, info = _split(build(None) if scratch else build())  # type: ignore[call-arg]
            return CacheEntry({k: np.asarray(v) for k, v in arrays.items()}, dict(info), True, None)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise TokenmillError(
                f"cannot create the cache folder {self.directory} ({error}); choose a writable cache"
            ) from None
        final = self.entry_path(kind, settings, epoch)
        with _locked(final):
            found = self.load(kind, settings, epoch)
            if found is not None:
                return found
            for stale in self.directory.glob(f"{final.name}{_TMP_MARKER}*"):  # an interrupted builder's
                shutil.rmtree(stale, ignore_errors=True)
            started = time.perf_counter()
            tmp = final.with_name(f"{final.name}{_TMP_MARKER}{os.getpid()}-{uuid.uuid4().hex[:8]}")
            tmp.mkdir()
            try:
                arrays, info = _split(build(tmp) if scratch else build())  # type: ignore[call-arg]
                self._publish(tmp, final, kind, settings, arrays, info, time.perf_counter() - started, description)
                del arrays
            finally:
                with contextlib.suppress(OSError):
                    shutil.rmtree(tmp)
        release_heap()
        if epoch is not None and keep_epochs is not None and epoch > keep_epochs:
            self.prune(kind, settings, older_than=epoch - keep_epochs + 1)
        entry = self.load(kind, settings, epoch)
        assert entry is not None
        return CacheEntry(entry.arrays, entry.info, True, entry.path)

    def prune(self, kind: str, settings: Mapping[str, object], *, older_than: int) -> None:
        """Delete this kind/settings' entries of epochs before ``older_than`` (lock files stay: another
        process may hold one)."""
        if self.directory is None or not self.directory.exists():
            return
        base = f"{kind}-{self.key(kind, settings)}-e"
        for folder in self.directory.glob(f"{base}*"):
            suffix = folder.name[len(base):]
            if folder.is_dir() and suffix.isdigit() and int(suffix) < older_than:
                shutil.rmtree(folder, ignore_errors=True)

    def _publish(
        self,
        tmp: Path,
        final: Path,
        kind: str,
        settings: Mapping[str, object],
        arrays: Arrays,
        info: Mapping[str, Any],
        seconds: float,
        description: Mapping[str, object] | None,
    ) -> None:
        assert self.directory is not None
        specs = {}
        for name, array in arrays.items():
            path = tmp / f"{name}.npy"
            in_place = isinstance(array, np.memmap) and array.filename is not None and path.exists()
            if in_place and os.path.samefile(array.filename, path):
                array.flush()  # written in place by the build
                with open(path, "rb+") as handle:
                    os.fsync(handle.fileno())
            else:
                _write_npy(path, array)
            specs[name] = {"shape": list(np.shape(array)), "dtype": np.asarray(array).dtype.str}
        meta = {
            "kind": kind,
            "format": CACHE_FORMAT,
            "settings": dict(settings),
            "arrays": specs,
            "info": dict(info),
            "build_seconds": round(seconds, 3),
            "description": dict(description or {}),
        }
        with open(tmp / META, "w", encoding="utf-8") as handle:
            json.dump(meta, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        fsync_dir(tmp)
        if final.exists():  # a folder without meta.json is never a finished entry (we hold its lock)
            shutil.rmtree(final)
        os.rename(tmp, final)
        fsync_dir(self.directory)


def _split(built: Built) -> tuple[Arrays, Mapping[str, Any]]:
    if isinstance(built, tuple):
        return built[0], built[1]
    return built, {}


__all__ = [
    "CACHE_FORMAT",
    "ArrayCache",
    "CacheEntry",
    "CacheLike",
    "array_cache",
    "default_cache_dir",
    "fingerprint",
    "fingerprint_array",
    "release_heap",
]
