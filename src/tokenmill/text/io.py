"""Open input files: compression by magic bytes, decompressed blocks, and the opener of URL inputs.

* Files are opened by magic bytes first and name second: plain, gzip, bzip2, xz, zstd (several zstd
  frames or gzip members in one file are read through). A name that promises compression on a file
  without the magic is an error (truncated, corrupt or misnamed), never a guess.
* :data:`Opener` is how a source opens a path for random access (Parquet footers and row groups):
  :func:`open_local` for files; the prepare stage hands a ranged-request opener for ``s3://`` and
  other fsspec URLs (this layer does not know object storage).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from tokenmill.errors import TokenmillError

PathLike = str | os.PathLike
Opener = Callable[[str], BinaryIO]
"""Opens one input (a path or URL) for binary random access (``seek``/``read``)."""

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
_EXTENSIONS = {".gz": "gzip", ".gzip": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd", ".zstd": "zstd"}
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")
READ_ERRORS: tuple[type[BaseException], ...] = (EOFError, OSError, zlib.error, lzma.LZMAError)
"""What a decompressing read raises on a truncated or corrupt file."""
try:  # zstandard is a declared dependency; stay importable if an environment lacks it
    import zstandard

    READ_ERRORS = (*READ_ERRORS, zstandard.ZstdError)
except ImportError:  # pragma: no cover - exercised only in broken environments
    zstandard = None  # type: ignore[assignment]


def open_local(path: str) -> BinaryIO:
    """The default :data:`Opener`: a local file, or one clear error naming it."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise TokenmillError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TokenmillError(f"{path}: is a directory, expected a file") from None


def read_head(path: PathLike, size: int = 16) -> bytes:
    """The first ``size`` bytes of a local file (b"" for an empty one)."""
    with open_local(str(path)) as f:
        return f.read(size)


def detect_compression(path: PathLike) -> str | None:
    """``"gzip" | "bz2" | "xz" | "zstd"`` or None for plain text; magic bytes win over the name.

    A name that promises compression (``.gz``...) on a non-empty file without the matching magic is
    an error: such a file is truncated, corrupt or misnamed, and reading it as text would be a guess.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(10)
    except FileNotFoundError:
        raise TokenmillError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TokenmillError(f"{path}: is a directory, expected a text file") from None
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head.startswith(b"BZh") and head[3:4].isdigit() and head[4:10] == b"1AY&SY":
        return "bz2"
    by_name = _EXTENSIONS.get(path.suffix.lower())
    if by_name and head:
        raise TokenmillError(
            f"{path}: the name says {by_name} but the file does not start with {by_name} magic bytes; "
            f"it is corrupt or misnamed. Recompress it, or drop {path.suffix!r} from the name "
            "if it is plain text"
        )
    return None


def open_binary(path: PathLike) -> BinaryIO:
    """Open ``path`` for reading decompressed bytes, whatever its compression."""
    kind = detect_compression(path)
    if kind is None:
        return open(path, "rb")
    if kind == "gzip":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if kind == "bz2":
        return bz2.open(path, "rb")  # type: ignore[return-value]
    if kind == "xz":
        return lzma.open(path, "rb")  # type: ignore[return-value]
    if zstandard is None:  # pragma: no cover
        raise TokenmillError(f"{path}: is zstd-compressed; install the 'zstandard' package to read it")
    raw = open(path, "rb")
    return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=True)  # type: ignore[return-value]


def corrupt_file(path: PathLike, exc: BaseException) -> TokenmillError:
    """The error for a file whose decompression failed part way."""
    return TokenmillError(
        f"{path}: cannot read: {exc or type(exc).__name__}. The file is truncated or corrupt; "
        "recompress or re-download it"
    )


def read_blocks(f: BinaryIO, path: PathLike, size: int) -> Iterator[bytes]:
    """Decompressed blocks of at most ``size`` bytes until EOF; decoder errors become TokenmillError."""
    while True:
        try:
            data = f.read(size)
        except READ_ERRORS as exc:
            raise corrupt_file(path, exc) from exc
        if not data:
            return
        yield data


def count_lines(path: PathLike, block_bytes: int = 1 << 22) -> int:
    """Lines in a file: ``\\n`` count plus one for a final line without ``\\n``. Never decodes."""
    n, last = 0, b"\n"
    with open_binary(path) as f:
        for data in read_blocks(f, path, block_bytes):
            n += data.count(b"\n")
            last = data[-1:]
    return n + (last != b"\n")


def resolve_prefix(prefix: PathLike, lang: str) -> str:
    """``{prefix}.{lang}``, or the one compressed variant of it (``.gz``, ``.bz2``, ``.xz``, ``.zst``)."""
    base = f"{prefix}.{lang}"
    found = [p for p in (base, *(base + s for s in COMPRESSED_SUFFIXES)) if os.path.isfile(p)]
    if not found:
        raise TokenmillError(
            f"{base}: no such file (also tried {', '.join(COMPRESSED_SUFFIXES)}); "
            "check the prefix and the language code"
        )
    if len(found) > 1:
        raise TokenmillError(f"{base}: ambiguous, several files match: {', '.join(found)}; keep one")
    return found[0]


__all__ = [
    "COMPRESSED_SUFFIXES",
    "READ_ERRORS",
    "Opener",
    "PathLike",
    "corrupt_file",
    "count_lines",
    "detect_compression",
    "open_binary",
    "open_local",
    "read_blocks",
    "read_head",
    "resolve_prefix",
]
