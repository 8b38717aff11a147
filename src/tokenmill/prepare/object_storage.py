"""Inputs and outputs of ``prepare`` on object storage: any fsspec URL (``s3://``, ``gs://``...; ``tokenmill[s3]``).

Inputs. A URL prefix (``s3://bucket/corpus/train`` with ``.en``/``.zh``, compressed variants found as for
local files) or file pattern (``s3://bucket/corpus/*.jsonl.zst``) is copied into the run's own folder,
``DESTDIR/.work/inputs/<hash of the URL>/<name>`` (temporary name, renamed when whole), with the
object's ETag and size next to it. The coordinator checks each object once per run and copies it again
only when it changed; a task (on any machine sharing the folder) reads the copies. The pipeline reads
local files from there on, so every reader, the line index and the stage keys work as for local input.
A format that reads objects itself (Parquet: footer and row groups by ranged requests) is given the URLs
instead (:meth:`StagedInputs.urls`, :meth:`StagedInputs.open`): nothing is copied.

Outputs. ``--destdir s3://bucket/data-bin`` runs in a local folder, ``$TOKENMILL_CACHE/prepare/
<name>-<hash>`` (a re-run resumes there; on a cluster, point ``TOKENMILL_CACHE`` at a shared file
system), then publishes to the bucket: the old manifest is deleted first, every file is uploaded
(s3fs sends large files as multipart uploads, and an object appears under its name only when its
upload completes), the manifest goes last, and objects of an earlier run this one did not produce are
deleted. A reader (``tokenmill.open``, ``verify``) checks files against the manifest, so it never takes
a half-published directory for a whole one.
"""

from __future__ import annotations

import glob
import json
import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import xxhash

from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.fsutil import atomic_path, cache_root, write_json
from tokenmill.prepare.state import file_identity
from tokenmill.store.manifest import MANIFEST_NAME, REPORT_NAME, data_files
from tokenmill.store.remote import is_url, url_filesystem
from tokenmill.text.io import COMPRESSED_SUFFIXES, open_local

INPUTS_DIR = "inputs"
SOURCE_SUFFIX = ".source.json"


def has_wildcards(path: str) -> bool:
    """Whether ``path`` is a pattern (``*``, ``?``, ``[...]``), as a shell or fsspec's glob reads it."""
    return any(c in path for c in "*?[")


def _digest(text: str) -> str:
    return xxhash.xxh3_64_hexdigest(text.encode("utf-8"))


def _object_version(fs: Any, remote: str, url: str) -> tuple[str, int]:
    """The version (:func:`_version`) and size of object ``remote`` of ``fs`` (``url`` names it in messages)."""
    try:
        info = fs.info(remote)
    except FileNotFoundError:
        raise TokenmillError(f"{url}: no such object; check the URL") from None
    except OSError as error:
        raise TokenmillError(f"{url}: cannot read it ({error}); check the endpoint and credentials") from None
    return _version(info), int(info.get("size") or 0)


def _version(info: Mapping[str, Any]) -> str:
    """What changes when an object is replaced: its ETag, else its modification time."""
    for key in ("ETag", "etag", "md5Hash", "LastModified", "mtime", "last_modified"):
        if info.get(key) is not None:
            return str(info[key])
    return ""


class StagedInputs:
    """URL inputs copied under ``folder`` (``DESTDIR/.work/inputs``); local paths pass through untouched.

    ``refresh``: check each object against the remote once (the coordinator); without it a copy that is
    already there is used as it is (a task: the coordinator made the copies before planning the tasks)."""

    def __init__(self, folder: Path, storage_options: Mapping[str, Any] | None = None, *, refresh: bool = False):
        self.folder = folder
        self.storage_options = dict(storage_options or {})
        self.refresh = refresh
        self._done: dict[str, str] = {}
        self._identities: dict[str, dict[str, Any]] = {}

    def _fs(self, url: str) -> tuple[Any, str]:
        return url_filesystem(url, self.storage_options)

    def _copy(self, fs: Any, remote: str, url: str, target: Path) -> None:
        """Copy one object to ``target`` unless the copy there is of the same version."""
        if url in self._done:
            return
        source = target.with_name(target.name + SOURCE_SUFFIX)
        if target.exists() and source.exists() and not self.refresh:
            self._done[url] = str(target)
            return
        version, size = _object_version(fs, remote, url)
        record = {"url": url, "version": version, "size": size}
        if not (target.exists() and source.exists() and json.loads(source.read_text()) == record
                and target.stat().st_size == record["size"]):
            target.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(target) as tmp:
                try:
                    fs.get_file(remote, str(tmp))
                except OSError as error:
                    raise TokenmillError(f"{url}: the download failed ({error}); run prepare again") from None
            write_json(source, record)
        self._done[url] = str(target)

    def _home(self, url: str) -> Path:
        return self.folder / _digest(url)

    def prefix(self, prefix: str, suffixes: list[str]) -> str:
        """The local prefix of ``{prefix}.{suffix}`` files (each copied: plain or one compressed variant)."""
        if not is_url(prefix):
            return prefix
        fs, path = self._fs(prefix)
        home = self._home(prefix)
        name = posixpath.basename(path.rstrip("/"))
        for suffix in suffixes:
            found = [c for c in (f"{path}.{suffix}", *(f"{path}.{suffix}{z}" for z in COMPRESSED_SUFFIXES))
                     if self._known(home / posixpath.basename(c)) or fs.exists(c)]
            if not found:
                raise TokenmillError(f"{prefix}.{suffix}: no such object (also tried {', '.join(COMPRESSED_SUFFIXES)})")
            if len(found) > 1:
                raise TokenmillError(f"{prefix}.{suffix}: ambiguous, several objects match; keep one")
            remote = found[0]
            self._copy(fs, remote, f"{prefix}{remote[len(path):]}", home / posixpath.basename(remote))
        return str(home / name)

    def _known(self, target: Path) -> bool:
        """A copy already there that a task may use without asking the remote."""
        return not self.refresh and target.exists() and target.with_name(target.name + SOURCE_SUFFIX).exists()

    def urls(self, pattern: str) -> list[str]:
        """The objects a URL names or its pattern matches, as URLs in name order (nothing copied: for a format
        that reads objects itself by ranged requests); a local path or pattern gives its files."""
        if not is_url(pattern):
            return self.files(pattern)
        fs, path = self._fs(pattern)
        try:
            matched = sorted(fs.glob(path)) if has_wildcards(path) else [path]
        except OSError as error:
            raise TokenmillError(f"{pattern}: cannot list it ({error}); check the endpoint and credentials") from None
        if not matched:
            raise TokenmillError(f"{pattern}: no object matches; check the URL")
        scheme = pattern.split("://", 1)[0]
        return [f"{scheme}://{m}" if "://" not in m else m for m in matched]

    def identity(self, path: str) -> dict[str, Any]:
        """What identifies an input for the stage keys: a local file's path, size and mtime; an object's URL,
        version (ETag) and size (asked once per run)."""
        if not is_url(path):
            return file_identity(path)
        if path not in self._identities:
            version, size = _object_version(*self._fs(path), path)
            self._identities[path] = {"url": path, "version": version, "bytes": size}
        return self._identities[path]

    def open(self, path: str) -> BinaryIO:
        """Open an input for random access: a local file, or an object read by ranged requests (fsspec's
        file with no read-ahead cache: a reader asks for the byte ranges it needs, e.g. Parquet's footer and
        one row group's column chunks)."""
        if not is_url(path):
            return open_local(path)
        fs, remote = self._fs(path)
        try:
            return _RangedFile(fs.open(remote, "rb", cache_type="none"), path)  # type: ignore[return-value]
        except FileNotFoundError:
            raise TokenmillError(f"{path}: no such object; check the URL") from None
        except OSError as error:
            raise TokenmillError(f"{path}: cannot open it ({error}); check the endpoint and credentials") from None

    def files(self, pattern: str) -> list[str]:
        """The local copies of the objects a URL names or its pattern (``*``, ``?``, ``[...]``) matches, in
        name order; a local path comes back as it is."""
        if not is_url(pattern):
            if not has_wildcards(pattern):
                return [pattern]
            matched = sorted(glob.glob(pattern))
            if not matched:
                raise TokenmillError(f"{pattern}: no file matches; check the pattern")
            return matched
        fs, path = self._fs(pattern)
        home = self._home(pattern)
        listing = home / "listing.json"
        if not self.refresh and listing.exists():
            names = json.loads(listing.read_text(encoding="utf-8"))
        else:
            matched = sorted(fs.glob(path)) if has_wildcards(path) else [path]
            if not matched:
                raise TokenmillError(f"{pattern}: no object matches; check the URL")
            names = [[m, posixpath.basename(m)] for m in matched]
            odd = [m for m, name in names if name in ("", ".", "..")]
            if odd:
                raise TokenmillError(f"{pattern}: the object name {odd[0]!r} cannot be copied to a file; rename it")
            if len({name for _, name in names}) != len(names):
                raise TokenmillError(f"{pattern}: objects in several folders share a name; name each folder")
            write_json(listing, names)
        scheme = pattern.split("://", 1)[0]
        for remote, name in names:
            self._copy(fs, remote, f"{scheme}://{remote}", home / name)
        return [str(home / name) for _, name in names]


class _RangedFile:
    """An fsspec file whose failed reads are ``OSError`` (an HTTP client's payload or timeout errors are not):
    a reader retries a read that failed in transit without catching every exception there is."""

    def __init__(self, handle: Any, url: str) -> None:
        self._handle = handle
        self._url = url

    def read(self, size: int = -1) -> bytes:
        try:
            return self._handle.read(size)
        except OSError:
            raise
        except Exception as error:
            raise OSError(f"{self._url}: {type(error).__name__}: {error}") from error

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


def work_folder(url: str) -> Path:
    """The local folder a run for ``--destdir URL`` works in (and resumes in)."""
    name = posixpath.basename(url.rstrip("/")) or "data-bin"
    return cache_root() / "prepare" / f"{name}-{_digest(url.rstrip('/'))[:12]}"


def _listing(fs: Any, root: str) -> set[str]:
    """Names (relative to ``root``) of every object under it."""
    return {p[len(root) + 1:] for p in fs.find(root)} if fs.exists(root) else set()


def _owned(fs: Any, root: str, existing: set[str], url: str) -> set[str]:
    """What an earlier tokenmill run published at ``url`` (its manifest's files, the manifest, the report);
    an error when the prefix holds anything else: a run never deletes or mixes with objects not its own."""
    if not existing:
        return set()
    if MANIFEST_NAME not in existing:
        raise ConfigError(
            f"--destdir {url} holds objects tokenmill did not write (e.g. {sorted(existing)[0]}); give an empty or "
            "new prefix (a prepared directory there has a manifest.json)"
        )
    try:
        manifest = json.loads(fs.cat_file(f"{root}/{MANIFEST_NAME}"))
        owned = {str(name) for name in manifest["files"]} | {MANIFEST_NAME, REPORT_NAME}
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigError(
            f"--destdir {url}: its manifest.json is not tokenmill's ({error}); give another prefix"
        ) from None
    foreign = sorted(existing - owned)
    if foreign:
        raise ConfigError(
            f"--destdir {url} holds objects its manifest does not list (e.g. {foreign[0]}): tokenmill did not write "
            "them; move them or give another prefix"
        )
    return owned


def check_destination(url: str, storage_options: Mapping[str, Any] | None = None) -> None:
    """Before any work: ``url`` is empty or holds only what an earlier run published there."""
    fs, root = url_filesystem(url, storage_options)
    root = root.rstrip("/")
    try:
        _owned(fs, root, _listing(fs, root), url)
    except OSError as error:
        raise TokenmillError(f"--destdir {url}: cannot list it ({error}); check the endpoint and credentials") from None


def publish_to(
    url: str, local: Path, storage_options: Mapping[str, Any] | None = None, *, part_bytes: int | None = None
) -> list[str]:
    """Upload the published directory ``local`` to ``url`` (see the module docstring); returns the names
    uploaded. ``part_bytes``: the multipart upload's part size (s3fs's own default: 50 MiB parts for files
    of 100 MiB and more). Only objects an earlier run published there are ever deleted."""
    sized = {"chunksize": part_bytes} if part_bytes else {}
    fs, root = url_filesystem(url, storage_options)
    root = root.rstrip("/")
    names = [*sorted(str(name) for name in data_files(local)), MANIFEST_NAME]
    manifest = f"{root}/{MANIFEST_NAME}"
    try:
        existing = _listing(fs, root)
        earlier = _owned(fs, root, existing, url) & existing
        if MANIFEST_NAME in existing:
            fs.rm_file(manifest)
        for name in names[:-1]:
            fs.put_file(str(local / name), f"{root}/{name}", **sized)
        fs.put_file(str(local / MANIFEST_NAME), manifest)
        for stale in sorted(earlier - set(names)):
            fs.rm_file(f"{root}/{stale}")
    except OSError as error:
        raise TokenmillError(
            f"{url}: publishing failed ({error}); the run is done in {local}: run prepare again to upload it"
        ) from None
    return names


def upload_file(url: str, path: Path, storage_options: Mapping[str, Any] | None = None) -> str:
    """Put one more file (the report page) next to a published directory at ``url``; returns its URL."""
    fs, root = url_filesystem(url, storage_options)
    target = f"{root.rstrip('/')}/{path.name}"
    try:
        fs.put_file(str(path), target)
    except OSError as error:
        raise TokenmillError(f"{url}: uploading {path.name} failed ({error})") from None
    return f"{url.rstrip('/')}/{path.name}"


__all__ = ["INPUTS_DIR", "StagedInputs", "check_destination", "publish_to", "upload_file", "work_folder"]
