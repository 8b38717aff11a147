"""Blend members' keys: what a blend's mix, its states and its consumption ledger call each member.

A member's own fingerprint (:meth:`~tokenmill.data.gpt_dataset.GPTDataset.fingerprint`) knows its document
lengths and settings only. Two members over different corpora whose documents have the same lengths (a
corpus and a copy of it under other token ids, a text and its transliteration with the same token counts)
share it, and a mix change or the ledger would count them as one member. So a member whose store's content
identity is known (:func:`~tokenmill.store.identity.content_id`) is keyed ``<fingerprint>~<content>`` (a
short hash of the identity): members over other tokens have other keys, while the same store, also copied
elsewhere, keeps its key. A member that does not know its content is keyed by its fingerprint alone, as
every member was before keys held the content.

The same content listed twice is two members: each listing has its own samples (its own greedy
counter in the blend), so each keeps its own counts; the second listing is keyed ``<key>#2``, the third
``<key>#3``, and across a mix change the k-th listing of a content matches the k-th listing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import xxhash

CONTENT = "~"
"""Between a member's fingerprint and its content's hash."""
REPEAT = "#"
"""Before the listing number of a content listed more than once."""


def content_key(fingerprint: str, content: str) -> str:
    """The key of a member with ``fingerprint`` over a store of content identity ``content``."""
    return f"{fingerprint}{CONTENT}{xxhash.xxh3_64_hexdigest(content.encode())}"


def member_key(dataset: Any) -> str:
    """One member's key, before listings are numbered (module docstring)."""
    named = hasattr(dataset, "fingerprint")
    fingerprint = dataset.fingerprint() if named else f"{type(dataset).__name__}:{len(dataset)}"
    content = dataset.content().get(fingerprint) if callable(getattr(dataset, "content", None)) else None
    return fingerprint if content is None else content_key(fingerprint, str(content))


def numbered(keys: Sequence[str]) -> list[str]:
    """``keys`` with every repeat after the first numbered (``key#2``, ``key#3``, ...)."""
    seen: dict[str, int] = {}
    out = []
    for key in keys:
        seen[key] = seen.get(key, 0) + 1
        out.append(key if seen[key] == 1 else f"{key}{REPEAT}{seen[key]}")
    return out


def member_keys(datasets: Sequence[Any]) -> list[str]:
    """The keys of a blend's members, in member order."""
    return numbered([member_key(d) for d in datasets])


def lengths_part(key: str) -> str:
    """The member fingerprint a key starts with (its lengths and settings)."""
    return key.split(REPEAT, 1)[0].split(CONTENT, 1)[0]


def knows_content(key: str) -> bool:
    """Whether a key holds its member's content."""
    return CONTENT in key


def short(key: str) -> str:
    """A key shortened for people: the fingerprint's start, the content's start and the listing."""
    head, _, listing = key.partition(REPEAT)
    fingerprint, _, content = head.partition(CONTENT)
    return fingerprint[:12] + (f"{CONTENT}{content[:8]}" if content else "") + (f"{REPEAT}{listing}" if listing else "")


__all__ = ["content_key", "knows_content", "lengths_part", "member_key", "member_keys", "numbered", "short"]
