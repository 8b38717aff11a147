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
import json
import os
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any

from filelock import FileLock

from tokenmill.errors import FormatError, TokenmillError
from tokenmill.fsutil import TMP_MARKER, atomic_write, fsync_dir
from tokenmill.store.manifest import (
    CHECKSUM_ALGORITHM,
    MANIFEST_NAME,
    Manifest,
    data_files,
    file_checksum,
    safe_member,
)
from tokenmill.store.remote_fetch import RangedFetcher
from tokenmill.store.remote_options import FetchLog, RemoteOptions, default_remote_cache
from tokenmill.store.remote_select import split_stores
from tokenmill.store.remote_url import NoManifest, RemoteError, describe_error, is_url, url_filesystem

_STATE = ".cache"
"""The cached view's own bookkeeping (locks, stamps): a name manifests and ``verify`` ignore."""
_SEARCH_UP = 3
"""How many folders above a URL to look for ``manifest.json`` (a store prefix inside a shard folder)."""


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
        self.fetcher = RangedFetcher(self.fs, self.root, self.url, self.options, self.log)

    def _remote(self, relative: str) -> str:
        return self.fetcher.remote(relative)

    def _where(self, relative: str) -> str:
        return self.fetcher.where(relative)

    # ---------------------------------------------------------------- manifest and small files
    def sync(self) -> Manifest:
        """Fetch the manifest, drop stale cached files, fetch every file but the ``.bin`` token data."""
        try:
            raw = self.fetcher.request(lambda: self.fs.cat_file(self._remote(MANIFEST_NAME)), MANIFEST_NAME)
        except FileNotFoundError:
            raise NoManifest(
                f"{self._where(MANIFEST_NAME)} does not exist: a URL must name a directory written by tokenmill "
                "prepare (its manifest lists the checksums every fetched file is checked against), or a store in one"
            ) from None
        except PermissionError as error:
            raise RemoteError(f"{self._where(MANIFEST_NAME)}: access denied ({describe_error(error)}); check the "
                              "credentials (storage_options or the backend's environment)") from None
        return self._adopt(raw)

    def _adopt(self, raw: bytes) -> Manifest:
        try:
            manifest = Manifest.from_json(json.loads(raw), Path(MANIFEST_NAME))
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise FormatError(f"{self._where(MANIFEST_NAME)}: not valid JSON ({error})") from None
        except FormatError as error:  # its message names the file: name the URL instead
            raise FormatError(f"{self.url}/{error}") from None
        self._check_entries(manifest)
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

    def _check_entries(self, manifest: Manifest) -> None:
        """Refuse a manifest entry that is not a file inside the view, or lacks its size or checksum."""
        for relative, entry in manifest.files.items():
            pure = PurePosixPath(relative)  # no path may leave the cached view or touch its bookkeeping
            if pure.is_absolute() or not pure.parts or any(p in ("..", _STATE) or TMP_MARKER in p for p in pure.parts):
                raise FormatError(f"{self._where(MANIFEST_NAME)}: path {relative!r} is not a file inside the "
                                  "directory; refusing it")
            if not isinstance(entry, dict) or not isinstance(entry.get("bytes"), int) or not entry.get(
                CHECKSUM_ALGORITHM
            ):
                raise FormatError(f"{self._where(MANIFEST_NAME)}: entry {relative!r} lacks bytes/{CHECKSUM_ALGORITHM}")

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
                self.fetcher.download(relative, tmp, *self._expected(relative))
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

    def _cache_error(self, error: OSError) -> TokenmillError:
        return TokenmillError(
            f"cannot write the cached copy of {self.url} under {self.local} ({error.strerror or error}); free space "
            "there or choose another cache (RemoteOptions(cache_dir=...) or TOKENMILL_CACHE)"
        )


def _endpoint(storage_options: Mapping[str, Any] | None) -> str:
    options = dict(storage_options or {})
    client = options.get("client_kwargs") or {}
    return str(options.get("endpoint_url") or client.get("endpoint_url") or "")


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
