"""A token store's content identity: which tokens it holds, not only how long its items are.

A loader state records it so that a resume is checked against the data, not only their lengths (two corpora
whose documents have the same lengths make the same sample index, and would otherwise pass as one). It is
read, not computed, where it can be: the xxh3-128 checksums of the store's ``.bin`` and ``.idx`` that the
``manifest.json`` of its folder (or of the folder above, for ``shardNNN/`` stores) lists, which
``tokenmill verify`` checks against the files. A store no manifest lists (written with ``IndexedWriter``, or
copied out of its folder) is identified by the hash of its ``.idx`` and of its ``.bin``: the whole file up to
:data:`WHOLE_FILE_LIMIT` bytes, beyond that its size and :data:`SAMPLED_BLOCKS` blocks spread evenly over it
(bounded time at any size; a different corpus differs in nearly every block).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import xxhash

from tokenmill.store.layout import MANIFEST_NAME
from tokenmill.store.manifest import CHECKSUM_ALGORITHM, file_checksum

WHOLE_FILE_LIMIT = 64 << 20
"""A ``.bin`` up to this size (bytes) is hashed whole when no manifest lists it."""
SAMPLED_BLOCKS = 64
BLOCK = 64 << 10


def _listed(prefix: Path) -> list[str] | None:
    """The manifest's checksums of the store's ``.bin`` and ``.idx``, from its folder or the one above (None:
    no manifest lists them)."""
    for folder in (prefix.parent, prefix.parent.parent):
        manifest = folder / MANIFEST_NAME
        if not manifest.is_file():
            continue
        try:
            files = json.loads(manifest.read_text(encoding="utf-8")).get("files") or {}
            relative = prefix.resolve().relative_to(folder.resolve()).as_posix()
        except (OSError, ValueError, AttributeError):
            return None
        sums = [(files.get(f"{relative}{suffix}") or {}).get(CHECKSUM_ALGORITHM) for suffix in (".bin", ".idx")]
        return sums if all(isinstance(s, str) for s in sums) else None
    return None


def _sampled(path: Path) -> str:
    """The hash of a large file's size and :data:`SAMPLED_BLOCKS` evenly spread blocks."""
    size = path.stat().st_size
    digest = xxhash.xxh3_128(str(size).encode())
    stride = max((size - BLOCK) // (SAMPLED_BLOCKS - 1), 1)
    with open(path, "rb") as handle:
        for k in range(SAMPLED_BLOCKS):
            handle.seek(min(k * stride, max(size - BLOCK, 0)))
            digest.update(handle.read(BLOCK))
    return digest.hexdigest()


def content_id(prefix: str | os.PathLike[str]) -> str:
    """The content identity of the store at ``prefix`` (module docstring): the checksums of its ``.bin`` and
    ``.idx``, the same whether the manifest lists them or they are computed (a sampled large ``.bin`` aside)."""
    path = Path(prefix)
    listed = _listed(path)
    if listed is not None:
        return ":".join(listed)
    data = Path(f"{path}.bin")
    body = file_checksum(data) if data.stat().st_size <= WHOLE_FILE_LIMIT else "sampled-" + _sampled(data)
    return f"{body}:{file_checksum(f'{path}.idx')}"


__all__ = ["content_id"]
