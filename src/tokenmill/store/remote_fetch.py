"""Requests to object storage with retries, and whole files downloaded by byte ranges and checked.

A failed request is retried from where it stopped, with exponential backoff, ``retries`` times, when
the failure is one a retry can fix (a network fault); then one :class:`RemoteError` names the URL,
the file and the last error. A file is hashed as its ranges arrive and refused unless it matches the
manifest's size and checksum (unchecked tokens are never served).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import xxhash

from tokenmill.errors import TokenmillError
from tokenmill.store.manifest import CHECKSUM_ALGORITHM, MANIFEST_NAME
from tokenmill.store.remote_options import FetchLog, RemoteOptions
from tokenmill.store.remote_url import RemoteError, describe_error

_PERMANENT = (
    FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError, ImportError, TypeError, ValueError,
)
"""Errors a retry cannot fix (a missing object, a refusal, wrong storage_options); anything else a backend
raises while fetching (aiohttp's, botocore's, socket errors) is retried, a bounded number of times."""

T = TypeVar("T")


def _transient(error: BaseException) -> bool:
    if isinstance(error, (TokenmillError, *_PERMANENT)):
        return False
    return "Credential" not in type(error).__name__  # botocore's NoCredentialsError & co.: not a network fault


class RangedFetcher:
    """Reads the files of one remote directory: ``root`` in the fsspec filesystem ``fs``, shown as ``url``."""

    def __init__(self, fs: Any, root: str, url: str, options: RemoteOptions, log: FetchLog) -> None:
        self.fs = fs
        self.root = root
        self.url = url
        self.options = options
        self.log = log

    def remote(self, relative: str) -> str:
        """The file's path in the filesystem."""
        return f"{self.root}/{relative}"

    def where(self, relative: str) -> str:
        """The file's URL, for messages."""
        return f"{self.url}/{relative}"

    def request(self, call: Callable[[], T], relative: str) -> T:
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
                        f"{self.where(relative)}: cannot read it ({describe_error(error)}); check the URL, credentials "
                        "and storage_options"
                    ) from None
                failures += 1
                if failures > self.options.retries:
                    raise RemoteError(
                        f"{self.where(relative)}: the request failed {failures} times (last: {describe_error(error)}); "
                        "check the endpoint, credentials and network (storage_options, AWS_ENDPOINT_URL) and open "
                        "it again — nothing partial was kept"
                    ) from None
                self.log.retries += 1
                time.sleep(self.options.backoff * 2 ** (failures - 1))

    def _range(self, relative: str, start: int, stop: int) -> bytes:
        """Bytes ``start:stop`` of the file, retried; a missing or refused object named as such."""
        remote = self.remote(relative)

        def get() -> bytes:
            data = self.fs.cat_file(remote, start=start, end=stop)
            if len(data) != stop - start:
                raise ConnectionError(f"got {len(data)} bytes for the range {start}-{stop}")
            return data

        try:
            return self.request(get, relative)
        except FileNotFoundError:
            raise RemoteError(
                f"{self.where(relative)} is listed in {MANIFEST_NAME} but missing on the server; upload the "
                "whole directory again"
            ) from None
        except PermissionError as error:
            raise RemoteError(f"{self.where(relative)}: access denied ({describe_error(error)})") from None

    def download(self, relative: str, tmp: Path, size: int, checksum: str) -> None:
        """Stream the object into ``tmp`` by ranges, hashing as it arrives; raise unless it matches."""
        digest = xxhash.xxh3_128()
        step = self.options.chunk_bytes
        with open(tmp, "wb") as out:
            offset = 0
            while offset < size:
                end = min(offset + step, size)
                data = self._range(relative, offset, end)
                out.write(data)
                digest.update(data)
                offset = end
                self.log.bytes += len(data)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != checksum:
            raise RemoteError(
                f"{self.where(relative)}: the {size} bytes fetched have {CHECKSUM_ALGORITHM} {digest.hexdigest()} but "
                f"{MANIFEST_NAME} lists {checksum}; the object is not the file the manifest describes (corrupt, or the "
                "directory was partly re-uploaded): refusing it — upload the directory again, manifest included"
            )
