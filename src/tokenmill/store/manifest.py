"""``manifest.json``: what a directory tokenmill wrote holds, how it was made, and checksums to verify it.

Every file in the directory is listed with its byte size and an xxh3-128 checksum (xxhash: fast
enough to hash gigabytes at disk speed); each ``.bin``/``.idx`` store also records its layout,
dtype, item and token counts. :func:`verify_directory` recomputes all of it and returns every
mismatch. Paths in a manifest are relative and never allowed to leave the directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import xxhash

from tokenmill._version import __version__
from tokenmill.errors import FormatError, TokenmillError
from tokenmill.fsutil import TMP_MARKER, write_json
from tokenmill.store.index_file import check_store
from tokenmill.store.layout import MANIFEST_NAME
from tokenmill.store.layout import ManifestHints as ManifestHints  # re-exported: where readers found it first
from tokenmill.store.layout import read_manifest_hints as read_manifest_hints
from tokenmill.store.meaning import check_meaning, check_special_ids, vocabulary_symbols

REPORT_NAME = "report.html"
"""``tokenmill report``'s page, written into the directory it describes (not data: not listed)."""
FORMAT_VERSION = 1
CHECKSUM_ALGORITHM = "xxh3_128"
_HASH_CHUNK = 1 << 20
# Files and folders that are not data: caches rebuilt on demand, locks, the manifest itself.
_IGNORED_NAMES = {MANIFEST_NAME, REPORT_NAME, ".cache", ".lock", ".state", ".work"}


def file_checksum(path: str | os.PathLike[str]) -> str:
    """xxh3-128 hex digest of a file, read in large chunks."""
    digest = xxhash.xxh3_128()
    buffer = memoryview(bytearray(_HASH_CHUNK))  # one buffer for every read: memory flat in the file's size
    with open(path, "rb", buffering=0) as handle:
        while count := handle.readinto(buffer):
            digest.update(buffer[:count])
    return digest.hexdigest()


def _ignored(relative: PurePosixPath) -> bool:
    return any(part in _IGNORED_NAMES or part.endswith(".lock") or TMP_MARKER in part for part in relative.parts)


def data_files(directory: Path) -> list[PurePosixPath]:
    """Every file under ``directory`` the manifest should list, as sorted relative POSIX paths."""
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in _IGNORED_NAMES)
        for name in files:
            relative = PurePosixPath(Path(root, name).relative_to(directory).as_posix())
            if not _ignored(relative):
                found.append(relative)
    return sorted(found)


def safe_member(directory: Path, relative: str) -> Path:
    """Resolve a manifest path inside ``directory``; refuse absolute paths and ``..`` escapes."""
    pure = PurePosixPath(relative)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise FormatError(f"{directory / MANIFEST_NAME}: path {relative!r} leaves the directory; refusing it")
    return directory.joinpath(*pure.parts)


def describe_store(prefix: Path) -> dict[str, Any]:
    """Layout, dtype and counts of one store, fully validated block by block
    (:func:`~tokenmill.store.index_file.check_store`: memory flat in the store's size)."""
    facts = check_store(prefix)
    return {
        "layout": facts.layout.value,
        "dtype": str(facts.dtype),
        "items": facts.items,
        "tokens": facts.tokens,
        "documents": facts.documents,
    }


@dataclass
class Manifest:
    """The decoded ``manifest.json`` of a directory."""

    files: dict[str, dict[str, Any]]
    """Relative path -> {"bytes", "xxh3_128"}."""
    stores: dict[str, dict[str, Any]]
    """Relative store prefix -> {"layout", "dtype", "items", "tokens", "documents"}."""
    settings: dict[str, Any] = field(default_factory=dict)
    """The configuration that produced the directory (as given, after defaults)."""
    vocab: dict[str, Any] = field(default_factory=dict)
    """Vocabulary facts: size(s) and special ids."""
    summary: dict[str, Any] = field(default_factory=dict)
    """Job-specific figures (counts per split, filter statistics, ...)."""
    run: dict[str, Any] = field(default_factory=dict)
    """How the run went (stage wall times): the one part that is not a function of the inputs."""
    format_version: int = FORMAT_VERSION
    created_by: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "tokenmill",
            "format_version": self.format_version,
            "created_by": self.created_by,
            "files": self.files,
            "stores": self.stores,
            "settings": self.settings,
            "vocab": self.vocab,
            "summary": self.summary,
            "run": self.run,
        }

    @classmethod
    def from_json(cls, obj: Any, source: Path) -> Manifest:
        if not isinstance(obj, dict) or obj.get("format") != "tokenmill":
            raise FormatError(f"{source}: not a tokenmill manifest (no \"format\": \"tokenmill\")")
        version = obj.get("format_version")
        if version != FORMAT_VERSION:
            raise FormatError(
                f"{source}: manifest format_version {version!r} unsupported (this tokenmill reads {FORMAT_VERSION})"
            )
        files, stores = obj.get("files"), obj.get("stores")
        if not isinstance(files, dict) or not isinstance(stores, dict):
            raise FormatError(f"{source}: manifest lacks its \"files\"/\"stores\" tables")
        for table in ("files", "stores"):
            wrong = next((name for name, entry in obj[table].items() if not isinstance(entry, dict)), None)
            if wrong is not None:
                raise FormatError(f"{source}: manifest entry {table}[{wrong!r}] is not a JSON object")
        for part in ("settings", "vocab", "summary", "run"):
            if not isinstance(obj.get(part) or {}, dict):
                raise FormatError(f"{source}: manifest field {part!r} is not a JSON object")
        return cls(
            files=files,
            stores=stores,
            settings=obj.get("settings") or {},
            vocab=obj.get("vocab") or {},
            summary=obj.get("summary") or {},
            run=obj.get("run") or {},
            format_version=version,
            created_by=obj.get("created_by", ""),
        )


def store_prefixes(files: Iterable[PurePosixPath]) -> list[str]:
    """Relative prefixes that have an ``.idx`` (their ``.bin`` is checked when opened)."""
    return sorted(str(f)[: -len(".idx")] for f in files if f.suffix == ".idx")


def build_manifest(
    directory: str | os.PathLike[str],
    *,
    settings: dict[str, Any] | None = None,
    vocab: dict[str, Any] | None = None,
    summary: dict[str, Any] | None = None,
    meanings: dict[str, dict[str, Any]] | None = None,
    run: dict[str, Any] | None = None,
) -> Manifest:
    """Describe every file under ``directory`` (checksums, store counts) without writing anything.

    ``meanings``: store prefix -> :func:`~tokenmill.store.meaning.store_meaning` (its vocabulary and
    end-of-item id), checked by :func:`verify_directory`. ``run``: facts about the run that made the
    directory which are not a function of its inputs (stage wall times).
    """
    root = Path(directory)
    listed = data_files(root)
    files = {
        str(rel): {"bytes": (root / rel).stat().st_size, CHECKSUM_ALGORITHM: file_checksum(root / rel)}
        for rel in listed
    }
    stores = {prefix: describe_store(root / prefix) for prefix in store_prefixes(listed)}
    for prefix, meaning in (meanings or {}).items():
        if prefix in stores:
            stores[prefix].update(meaning)
    return Manifest(
        files=files,
        stores=stores,
        settings=settings or {},
        vocab=vocab or {},
        summary=summary or {},
        run=run or {},
        created_by=f"tokenmill {__version__}",
    )


def write_manifest(directory: str | os.PathLike[str], **kwargs: Any) -> Manifest:
    """Build the manifest of ``directory`` and write it atomically as ``manifest.json``."""
    manifest = build_manifest(directory, **kwargs)
    write_json(Path(directory) / MANIFEST_NAME, manifest.to_json())
    return manifest


def refuse_non_manifest(directory: str | os.PathLike[str]) -> None:
    """Raise what :func:`read_manifest` raises when ``directory/manifest.json`` is there but is no manifest at
    all (not JSON, or JSON that is not an object such as ``[1,2,3]``). Readers that take a partial manifest
    leniently (:func:`read_manifest_hints`: ``batches``, ``inspect``) refuse these as ``open``, ``verify``
    and ``report`` do, instead of reading the directory as if it had none."""
    path = Path(directory) / MANIFEST_NAME
    if not path.is_file():
        return
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:  # RecursionError: nested too deep
        raise FormatError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(obj, dict):
        raise FormatError(f"{path}: not a tokenmill manifest (no \"format\": \"tokenmill\")")


def read_manifest(directory: str | os.PathLike[str]) -> Manifest:
    """Load and check the shape of ``directory/manifest.json``."""
    path = Path(directory) / MANIFEST_NAME
    if not path.exists():
        raise TokenmillError(f"{path} does not exist: {directory} was not written by tokenmill (or not finished)")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:  # RecursionError: nested too deep
        raise FormatError(f"{path}: not valid JSON ({error})") from None
    return Manifest.from_json(obj, path)


def verify_directory(directory: str | os.PathLike[str]) -> list[str]:
    """Recompute sizes, checksums and store counts; return one message per mismatch (empty when all good)."""
    root = Path(directory)
    try:
        manifest = read_manifest(root)
    except TokenmillError as error:
        return [str(error)]
    problems: list[str] = []
    for relative, expected in sorted(manifest.files.items()):
        try:
            path = safe_member(root, relative)
        except FormatError as error:
            problems.append(str(error))
            continue
        if not path.is_file():
            problems.append(f"{relative}: listed in the manifest but missing")
            continue
        size = path.stat().st_size
        if size != expected.get("bytes"):
            problems.append(f"{relative}: {size} bytes, manifest says {expected.get('bytes')}")
        checksum = file_checksum(path)
        if checksum != expected.get(CHECKSUM_ALGORITHM):
            claimed = expected.get(CHECKSUM_ALGORITHM)
            problems.append(f"{relative}: {CHECKSUM_ALGORITHM} {checksum}, manifest says {claimed}")
    on_disk = {str(rel) for rel in data_files(root)}
    problems.extend(f"{rel}: present but not listed in the manifest" for rel in sorted(on_disk - set(manifest.files)))
    problems.extend(_check_stores(root, manifest))
    return problems


def _check_stores(root: Path, manifest: Manifest) -> list[str]:
    """Each store's counts, then what its ids mean: they fit its vocabulary, items end where the
    manifest says, special symbols sit at the recorded ids."""
    problems: list[str] = []
    symbols_of: dict[str, list[str]] = {}
    for prefix, expected in sorted(manifest.stores.items()):
        try:
            actual = describe_store(safe_member(root, prefix))
        except TokenmillError as error:
            problems.append(str(error))
            continue
        for key in _COUNT_KEYS:
            if key in expected and actual.get(key) != expected[key]:
                problems.append(f"{prefix}: {key} is {actual.get(key)!r}, manifest says {expected[key]!r}")
        vocab = expected.get("vocab")
        if not vocab:
            continue
        try:
            if vocab not in symbols_of:
                symbols_of[vocab] = vocabulary_symbols(
                    safe_member(root, vocab), expected.get("vocab_kind", ""), expected.get("tokenizer")
                )
                if expected.get("vocab_kind") == "fairseq":
                    problems.extend(check_special_ids(vocab, symbols_of[vocab], manifest.vocab))
            problems.extend(check_meaning(root, prefix, expected, symbols_of[vocab]))
        except (TokenmillError, OSError) as error:
            problems.append(f"{prefix}: cannot check its ids against {vocab}: {error}")
    return problems


_COUNT_KEYS = ("layout", "dtype", "items", "tokens", "documents")
