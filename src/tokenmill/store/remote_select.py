"""Which stores of a remote directory's manifest an open of a split reads (their ``.bin`` files are fetched)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from tokenmill.store.layout import in_split, parse_align_name, parse_megatron_name, parse_store_name, shard_dir
from tokenmill.store.manifest import Manifest


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
