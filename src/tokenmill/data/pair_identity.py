"""The content of a pair dataset's stores: what a loader state records beside the lengths fingerprint.

A pair dataset's fingerprint (:meth:`~tokenmill.data.pairs.PairDataset.fingerprint`) knows the stored
lengths and options only, so a folder whose tokens changed but whose lengths did not (a corpus
re-tokenized into ids of the same counts, another corpus copied under these names) would pass for the
checkpoint's. A state records each side's content identity (:func:`~tokenmill.store.identity.content_id`:
the checksums ``manifest.json`` lists, or the same computed) by side name, ``source``, ``target`` and
``align`` (a side read from several stores, ``{split}1``... joined, is the identities of its parts
joined), so a resume onto other tokens is refused naming the store. Stores without a file prefix (made
in memory) are left out: they are checked on the lengths, as every store was before.
"""

from __future__ import annotations

from typing import Any

from tokenmill.store.identity import content_id


def store_content(store: Any) -> str | None:
    """The content identity of one side's store (None: the store has no files to identify)."""
    parts = getattr(store, "prefixes", None)
    if parts:
        return "+".join(content_id(prefix) for prefix in parts)
    prefix = getattr(store, "prefix", None)
    return None if prefix is None else content_id(prefix)


def _sides(dataset: Any) -> dict[str, Any]:
    stores = {"source": dataset.src, "target": dataset.tgt, "align": dataset.align}
    return {side: store for side, store in stores.items() if store is not None}


def pair_content(dataset: Any) -> dict[str, str]:
    """Each side's content identity by side name (module docstring)."""
    found = {side: store_content(store) for side, store in _sides(dataset).items()}
    return {side: content for side, content in found.items() if content is not None}


def pair_stores(dataset: Any) -> dict[str, str]:
    """The store each :func:`pair_content` name stands for (for messages)."""
    return {side: str(store.prefix) for side, store in _sides(dataset).items()}


__all__ = ["pair_content", "pair_stores", "store_content"]
