"""Read a prepared directory from object storage (``s3://``, ``gs://``, ``https://``, any fsspec URL).

Design: the readers (:class:`~tokenmill.store.reader.IndexedDataset`, ``PairDataset.from_dir``,
``MultiPairDataset.from_dir``) stay as they are and open a *local cached view* of the remote
directory, ``<cache>/remote/<name>-<hash of the URL>/``, laid out like the original:

- ``manifest.json`` is fetched on every open (one small request: it is the root of trust, and a
  directory prepared again at the same URL must not be served from an old copy). It lists each
  file's size and xxh3-128 checksum; nothing is used that does not match it.
- every other small file (``.idx`` indices, dictionaries, tokenizer models, logs) is fetched at open,
  so the readers find every split, store and vocabulary by their usual globbing;
- a ``.bin`` (the tokens: nearly all the bytes) is fetched only for the stores the open needs: those
  of the split opened (``train`` plus fairseq's ``train1``, ``train2`` ... parts, every shard folder,
  or only the given ``shard``/``directions``/languages), or the one store a URL names. The readers
  memory-map ``.bin`` files when they open a store, so a store's ``.bin`` must be whole by then: the
  split is the unit of laziness. Other splits' ``.bin`` files are never fetched until opened.

Fetching: whole files in byte ranges of ``chunk_bytes`` (one ranged GET each, hashed as they
arrive), several files at once. Whole files because the manifest checksums whole files: a
range could not be checked before its file is complete, and unchecked tokens are never served.
A failed range is retried from where it stopped, with exponential backoff, ``retries`` times;
then one :class:`RemoteError` names the URL, the file and the last error, and says what to do.
A file is written under a temporary name, fsync'ed, and renamed into place only after its size and
checksum match the manifest, so a partial or wrong download is never visible. Wrong bytes at the
right size (a corrupt or half re-uploaded object) are refused at once, naming the file.

Sharing: one file lock per cached file (``filelock``, the OS's ``flock``: released when its holder
dies) makes ranks and processes on a machine download each file once; the others wait and find it.
After a file is checked, a stamp (checksum, size, mtime, inode) is kept under ``.cache/verified/``;
a later open trusts a file whose stamp matches the manifest and its stat without re-hashing it, and
re-hashes (then refetches if it fails) a file whose stat changed. Cached files the current manifest
does not list, or lists with another checksum, are removed at open, so a reader never sees a stale
store next to new ones.

Limits: a directory replaced at the same URL while a job reads it can make that job's later opens
(DataLoader workers re-open by path) see new files: publish a new version under a new URL. A file
changed in the cache without changing its size, mtime or inode is not noticed (only ``verify`` re-hashes).

Where: ``cache_dir`` (:class:`RemoteOptions`), else ``$TOKENMILL_CACHE/remote``, else
``~/.cache/tokenmill/remote`` (:func:`tokenmill.fsutil.cache_root`). Credentials and endpoints are
fsspec's: ``storage_options`` (e.g. ``{"client_kwargs": {"endpoint_url": ...}}`` for s3fs) or the
backend's environment (``AWS_ENDPOINT_URL``, ``AWS_PROFILE``, ``FSSPEC_S3``, ...).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import xxhash
from filelock import FileLock

from tokenmill.errors import ConfigError, FormatError, TokenmillError
from tokenmill.fsutil import TMP_MARKER, atomic_write, cache_root, fsync_dir
from tokenmill.store.layout import in_split, parse_align_name, parse_megatron_name, parse_store_name, shard_dir
from tokenmill.store.manifest import (
    CHECKSUM_ALGORITHM,
    MANIFEST_NAME,
    Manifest,
    data_files,
    file_checksum,
    safe_member,
)


def _fsspec_core() -> Any:
    """``fsspec.core``, imported when a URL is first read: it is the s3 extra, and importing it costs tens of
    milliseconds (ssl, asyncio) that ``import tokenmill`` should not pay. None when it is not installed."""
    try:
        return importlib.import_module("fsspec.core")
    except ImportError:
        return None

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*(::|://)")
_STATE = ".cache"
"""The cached view's own bookkeeping (locks, stamps): a name manifests and ``verify`` ignore."""
_PERMANENT = (
    FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError, ImportError, TypeError, ValueError,
)
"""Errors a retry cannot fix (a missing object, a refusal, wrong storage_options); anything else a backend
raises while fetching (aiohttp's, botocore's, socket errors) is retried, a bounded number of times."""
_SEARCH_UP = 3
"""How many folders above a URL to look for ``manifest.json`` (a store prefix inside a shard folder)."""

T = TypeVar("T")


class RemoteError(TokenmillError):
    """A remote directory that cannot be read (unreachable, or not what its manifest says)."""


class NoManifest(RemoteError):
    """No ``manifest.json`` at a URL (:func:`locate` then looks in the folders above)."""


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
        raise ConfigError(f"{shown}: cannot open it with fsspec ({_describe(error)}); check the URL and "
                          "storage_options") from None


def default_remote_cache() -> Path:
    """``<tokenmill cache>/remote``: where cached views of remote directories live."""
    return cache_root() / "remote"


def _transient(error: BaseException) -> bool:
    if isinstance(error, (TokenmillError, *_PERMANENT)):
        return False
    return "Credential" not in type(error).__name__  # botocore's NoCredentialsError & co.: not a network fault


def _describe(error: BaseException) -> str:
    text = " ".join(str(error).split())[:300]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


@dataclass
class FetchLog:
    """What this process downloaded (tests and benchmarks read it)."""

    files: list[str] = field(default_factory=list)
    bytes: int = 0
    retries: int = 0


class RemoteDirectory:
    """A prepared directory at a URL and its local cached view (see the module docstring)."""

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        options: RemoteOptions | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.options = options or RemoteOptions()
        self.fs, self.root = url_filesystem(self.url, storage_options, url)
        self.root = self.root.rstrip("/")
        base = Path(self.options.cache_dir) if self.options.cache_dir is not None else default_remote_cache()
        endpoint = _endpoint(storage_options)
        key = hashlib.sha256(f"{self.url}\n{endpoint}".encode()).hexdigest()[:16]
        name = re.sub(r"[^A-Za-z0-9._-]", "_", self.root.rsplit("/", 1)[-1]) or "root"
        self.local = base / f"{name}-{key}"
        self.log = FetchLog()
        self.manifest: Manifest | None = None

    # ---------------------------------------------------------------- requests
    def _remote(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    def _where(self, relative: str) -> str:
        return f"{self.url}/{relative}"

    def _request(self, call: Callable[[], T], relative: str) -> T:
        """``call()`` with retries and backoff on transient failures, then one clear error."""
        failures = 0
        while True:
            try:
                return call()
            except Exception as error:  # classified: only network-like failures are retried
                if isinstance(error, TokenmillError | FileNotFoundError | PermissionError):
                    raise  # the caller says what is missing or refused
                if not _transient(error):
                    raise RemoteError(
                        f"{self._where(relative)}: cannot read it ({_describe(error)}); check the URL, credentials "
                        "and storage_options"
                    ) from None
                failures += 1
                if failures > self.options.retries:
                    raise RemoteError(
                        f"{self._where(relative)}: the request failed {failures} times (last: {_describe(error)}); "
                        "check the endpoint, credentials and network (storage_options, AWS_ENDPOINT_URL) and open "
                        "it again — nothing partial was kept"
                    ) from None
                self.log.retries += 1
                time.sleep(self.options.backoff * 2 ** (failures - 1))

    # ---------------------------------------------------------------- manifest and small files
    def sync(self) -> Manifest:
        """Fetch the manifest, drop stale cached files, fetch every file but the ``.bin`` token data."""
        try:
            raw = self._request(lambda: self.fs.cat_file(self._remote(MANIFEST_NAME)), MANIFEST_NAME)
        except FileNotFoundError:
            raise NoManifest(
                f"{self._where(MANIFEST_NAME)} does not exist: a URL must name a directory written by tokenmill "
                "prepare (its manifest lists the checksums every fetched file is checked against), or a store in one"
            ) from None
        except PermissionError as error:
            raise RemoteError(f"{self._where(MANIFEST_NAME)}: access denied ({_describe(error)}); check the "
                              "credentials (storage_options or the backend's environment)") from None
        return self._adopt(raw)

    def _adopt(self, raw: bytes) -> Manifest:
        try:
            manifest = Manifest.from_json(json.loads(raw), Path(MANIFEST_NAME))
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise FormatError(f"{self._where(MANIFEST_NAME)}: not valid JSON ({error})") from None
        except FormatError as error:  # its message names the file: name the URL instead
            raise FormatError(f"{self.url}/{error}") from None
        for relative, entry in manifest.files.items():
            pure = PurePosixPath(relative)  # no path may leave the cached view or touch its bookkeeping
            if pure.is_absolute() or not pure.parts or any(p in ("..", _STATE) or TMP_MARKER in p for p in pure.parts):
                raise FormatError(f"{self._where(MANIFEST_NAME)}: path {relative!r} is not a file inside the "
                                  "directory; refusing it")
            if not isinstance(entry, dict) or not isinstance(entry.get("bytes"), int) or not entry.get(
                CHECKSUM_ALGORITHM
            ):
                raise FormatError(f"{self._where(MANIFEST_NAME)}: entry {relative!r} lacks bytes/{CHECKSUM_ALGORITHM}")
        self.manifest = manifest
        try:
            (self.local / _STATE).mkdir(parents=True, exist_ok=True)
            with FileLock(str(self.local / _STATE / "view.lock")):
                self._write_source()
                if not (self.local / MANIFEST_NAME).is_file() or (self.local / MANIFEST_NAME).read_bytes() != raw:
                    with atomic_write(self.local / MANIFEST_NAME, "wb") as handle:
                        handle.write(raw)
                self._prune()
        except OSError as error:
            raise self._cache_error(error) from None
        lazy = self.lazy_files()
        self.fetch(rel for rel in manifest.files if rel not in lazy)
        return manifest

    def _write_source(self) -> None:
        source = self.local / _STATE / "source.json"
        if not source.exists():
            with atomic_write(source) as handle:
                json.dump({"url": self.url}, handle)

    def _prune(self) -> None:
        """Remove cached data files the manifest does not list or lists with another checksum."""
        assert self.manifest is not None
        for relative in data_files(self.local):
            text = str(relative)
            if text not in self.manifest.files or not self._valid(text):
                self._path(text).unlink(missing_ok=True)
                self._stamp(text).unlink(missing_ok=True)

    def lazy_files(self) -> set[str]:
        """The ``.bin`` files of the manifest's stores: fetched only when a store is opened."""
        assert self.manifest is not None
        return {f"{store}.bin" for store in self.manifest.stores if f"{store}.bin" in self.manifest.files}

    # ---------------------------------------------------------------- cached files
    def _path(self, relative: str) -> Path:
        return safe_member(self.local, relative)

    def _stamp(self, relative: str) -> Path:
        return self.local / _STATE / "verified" / f"{relative}.json"

    def _expected(self, relative: str) -> tuple[int, str]:
        assert self.manifest is not None
        entry = self.manifest.files[relative]
        return int(entry["bytes"]), str(entry[CHECKSUM_ALGORITHM])

    def _valid(self, relative: str) -> bool:
        """The cached file matches the manifest by its stamp (no hashing)."""
        try:
            stamp = json.loads(self._stamp(relative).read_text(encoding="utf-8"))
            st = self._path(relative).stat()
        except (OSError, ValueError):
            return False
        size, checksum = self._expected(relative)
        return stamp == {"checksum": checksum, "bytes": size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino} and (
            st.st_size == size
        )

    def _write_stamp(self, relative: str, path: Path) -> None:
        size, checksum = self._expected(relative)
        st = path.stat()
        with atomic_write(self._stamp(relative)) as handle:
            json.dump({"checksum": checksum, "bytes": size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}, handle)

    def fetch(self, relatives: Iterable[str]) -> list[str]:
        """Make each listed file present and checked in the cached view; returns those downloaded."""
        todo = sorted(set(relatives))
        missing = [rel for rel in todo if self.manifest is None or rel not in self.manifest.files]
        if missing:
            raise RemoteError(f"{self.url}: {missing[0]} is not listed in {MANIFEST_NAME}")
        todo = [rel for rel in todo if not self._valid(rel)]
        if not todo:
            return []
        workers = min(self.options.workers, len(todo))
        if workers == 1:
            done = [self._fetch_one(rel) for rel in todo]
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="tokenmill-fetch") as pool:
                done = list(pool.map(self._fetch_one, todo))
        return [rel for rel, fetched in zip(todo, done, strict=True) if fetched]

    def _fetch_one(self, relative: str) -> bool:
        final = self._path(relative)
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            self._stamp(relative).parent.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(self._stamp(relative)) + ".lock")
            lock.acquire()
        except OSError as error:
            raise self._cache_error(error) from None
        try:
            if self._valid(relative):
                return False  # another process fetched it while we waited
            if self._adopt_existing(relative, final):
                return False
            for stale in final.parent.glob(f"{final.name}{TMP_MARKER}*"):  # a dead fetcher's (we hold the lock)
                stale.unlink(missing_ok=True)
            tmp = final.with_name(f"{final.name}{TMP_MARKER}{os.getpid()}-{uuid.uuid4().hex[:8]}")
            try:
                self._download(relative, tmp)
                self._write_stamp(relative, tmp)  # stat survives the rename: the stamp matches the final file
                os.replace(tmp, final)
                fsync_dir(final.parent)
            except OSError as error:
                raise self._cache_error(error) from None
            finally:
                tmp.unlink(missing_ok=True)
            self.log.files.append(relative)
            return True
        finally:
            lock.release()

    def _adopt_existing(self, relative: str, final: Path) -> bool:
        """A cached file without a matching stamp (changed on disk): keep it if it hashes right, else drop it."""
        if not final.is_file():
            return False
        size, checksum = self._expected(relative)
        if final.stat().st_size == size and file_checksum(final) == checksum:
            self._write_stamp(relative, final)
            return True
        final.unlink()
        return False

    def _download(self, relative: str, tmp: Path) -> None:
        """Stream the object into ``tmp`` by ranges, hashing as it arrives; raise unless it matches."""
        size, checksum = self._expected(relative)
        remote = self._remote(relative)
        digest = xxhash.xxh3_128()
        step = self.options.chunk_bytes
        with open(tmp, "wb") as out:
            offset = 0
            while offset < size:
                end = min(offset + step, size)

                def get(start: int = offset, stop: int = end) -> bytes:
                    data = self.fs.cat_file(remote, start=start, end=stop)
                    if len(data) != stop - start:
                        raise ConnectionError(f"got {len(data)} bytes for the range {start}-{stop}")
                    return data

                try:
                    data = self._request(get, relative)
                except FileNotFoundError:
                    raise RemoteError(
                        f"{self._where(relative)} is listed in {MANIFEST_NAME} but missing on the server; upload the "
                        "whole directory again"
                    ) from None
                except PermissionError as error:
                    raise RemoteError(f"{self._where(relative)}: access denied ({_describe(error)})") from None
                out.write(data)
                digest.update(data)
                offset = end
                self.log.bytes += len(data)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != checksum:
            raise RemoteError(
                f"{self._where(relative)}: the {size} bytes fetched have {CHECKSUM_ALGORITHM} {digest.hexdigest()} but "
                f"{MANIFEST_NAME} lists {checksum}; the object is not the file the manifest describes (corrupt, or the "
                "directory was partly re-uploaded): refusing it — upload the directory again, manifest included"
            )

    def _cache_error(self, error: OSError) -> TokenmillError:
        return TokenmillError(
            f"cannot write the cached copy of {self.url} under {self.local} ({error.strerror or error}); free space "
            "there or choose another cache (RemoteOptions(cache_dir=...) or TOKENMILL_CACHE)"
        )


def _endpoint(storage_options: Mapping[str, Any] | None) -> str:
    options = dict(storage_options or {})
    client = options.get("client_kwargs") or {}
    return str(options.get("endpoint_url") or client.get("endpoint_url") or "")


def split_stores(
    manifest: Manifest,
    split: str,
    *,
    folder: str = "",
    shard: int | None = None,
    directions: Sequence[str] | None = None,
    langs: tuple[str, str] | None = None,
) -> list[str]:
    """The stores an open of ``split`` reads: ``{split}``, ``{split}N`` (fairseq's extra parts), their
    alignments, in every shard folder under ``folder`` (or shard ``shard``), of the given directions or
    language pair; and Megatron's ``*_document`` stores, which carry no split in their names."""
    pairs = set(directions or ())
    if langs is not None:
        pairs |= {f"{langs[0]}-{langs[1]}", f"{langs[1]}-{langs[0]}"}
    chosen = []
    for prefix in sorted(manifest.stores):
        path = PurePosixPath(prefix)
        if folder and not prefix.startswith(f"{folder}/"):
            continue
        if shard is not None and path.parent.name != shard_dir(shard):
            continue
        if parse_megatron_name(path.name) is not None:
            chosen.append(prefix)
            continue
        name = parse_store_name(path.name) or parse_align_name(path.name)
        if name is None or not in_split(name.split, split):
            continue
        if pairs and name.direction is not None and name.direction not in pairs:
            continue
        chosen.append(prefix)
    return chosen


def locate(
    url: str, storage_options: Mapping[str, Any] | None = None, options: RemoteOptions | None = None
) -> tuple[RemoteDirectory, str]:
    """The remote directory holding ``url`` (its own ``manifest.json``, else the nearest one above, for a
    store prefix or a shard folder) and ``url``'s path inside it ("" for the directory itself)."""
    text = url.rstrip("/")
    for suffix in (".bin", ".idx"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
    inner: list[str] = []
    first_error: NoManifest | None = None
    for _ in range(_SEARCH_UP + 1):
        directory = RemoteDirectory(text, storage_options, options)
        try:
            directory.sync()
            return directory, "/".join(reversed(inner))
        except NoManifest as error:
            first_error = first_error or error
        head, _, tail = text.rpartition("/")
        if not head or head.endswith(":/") or head.endswith(":") or "/" not in directory.root:
            break
        inner.append(tail)
        text = head
    assert first_error is not None
    raise first_error


def open_remote(
    url: str,
    split: str = "train",
    storage_options: Mapping[str, Any] | None = None,
    options: RemoteOptions | None = None,
    *,
    shard: int | None = None,
    directions: Sequence[str] | None = None,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
) -> Path:
    """The local path to open for ``url``: its cached view, with the ``.bin`` files of ``split`` (or of
    the store it names) fetched and checked. The other arguments narrow which stores are fetched."""
    directory, inner = locate(url, storage_options, options)
    manifest = directory.manifest
    assert manifest is not None
    if inner in manifest.stores:
        directory.fetch([f"{inner}.bin"] if f"{inner}.bin" in manifest.files else [])
        return directory.local / inner
    if inner and not any(name.startswith(f"{inner}/") for name in manifest.files):
        raise RemoteError(
            f"{url}: neither a store nor a folder of {directory.url} (its {MANIFEST_NAME} lists no such path)"
        )
    langs = (src_lang, tgt_lang) if src_lang and tgt_lang else None
    stores = split_stores(manifest, split, folder=inner, shard=shard, directions=directions, langs=langs)
    directory.fetch(f"{store}.bin" for store in stores if f"{store}.bin" in manifest.files)
    return directory.local / inner if inner else directory.local


def fetch_all(
    url: str, storage_options: Mapping[str, Any] | None = None, options: RemoteOptions | None = None
) -> Path:
    """The cached view of the directory at ``url`` with every file fetched and checked (for ``verify``)."""
    directory = RemoteDirectory(url, storage_options, options)
    directory.sync()
    directory.fetch(directory.lazy_files())
    return directory.local


__all__ = [
    "FetchLog",
    "NoManifest",
    "RemoteDirectory",
    "RemoteError",
    "RemoteOptions",
    "default_remote_cache",
    "fetch_all",
    "is_url",
    "locate",
    "open_remote",
    "split_stores",
]
