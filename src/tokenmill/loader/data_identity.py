"""What a saved state records of its data's content, and the check of it at resume.

A dataset's fingerprint (what a state's ``data`` field holds) is a function of its lengths and settings:
two corpora whose items have the same lengths get the same one. A dataset that knows its content
(``content()``: a name per store -> the store's content identity, :func:`~tokenmill.store.identity.content_id`)
has it recorded under ``contents``: a GPT dataset's store by its fingerprint, a blend's members by key
(:mod:`~tokenmill.data.blend_members`), a pair dataset's sides by name, a multilingual dataset's sides by
direction and shard. A resume compares the names the state and the data share (``content_stores()``
says which file each is, for the message). A state saved before states recorded contents has none: it is
checked on the lengths, as when it was saved.

A blend's members are keyed by content, so a member whose store now holds other tokens is another
member: :func:`refuse_swapped_members` refuses it by name unless the mix may change (then the checkpoint's
member is retired and this one starts at its first sample).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokenmill.data.blend_members import knows_content, lengths_part, short
from tokenmill.errors import TokenmillError

KEY = "contents"
SHOWN = 3
"""Changed stores named in a message (the rest are counted)."""


def recorded(dataset: Any) -> dict[str, Any]:
    """The state's field for ``dataset``'s content (none when the dataset does not know it)."""
    content = getattr(dataset, "content", None)
    return {KEY: dict(content())} if callable(content) else {}


def _stores(dataset: Any) -> dict[str, str]:
    """The file each content name stands for (empty where the dataset does not say)."""
    stores = getattr(dataset, "content_stores", None)
    return dict(stores()) if callable(stores) else {}


def content_problems(state: dict[str, Any], dataset: Any) -> list[str]:
    """Why ``state`` was saved on other tokens than ``dataset`` holds (empty: the same, or not recorded)."""
    saved, content = state.get(KEY), getattr(dataset, "content", None)
    if not isinstance(saved, dict) or not callable(content):
        return []
    now = content()
    changed = sorted(k for k in set(saved) & set(now) if saved[k] != now[k])
    if not changed:
        return []
    stores = _stores(dataset)
    named = ", ".join(f"{stores.get(k, k)} (content checksum {str(saved[k])[:16]}... -> {str(now[k])[:16]}...)"
                      for k in changed[:SHOWN])
    more = f" and {len(changed) - SHOWN} more store(s)" if len(changed) > SHOWN else ""
    where = f"{dataset.describe()}: " if not stores else ""
    return [f"the data differ from the checkpoint's: {where}the same lengths but other tokens in {named}{more}"]


def swapped_members(state: dict[str, Any], dataset: Any) -> list[str]:
    """The members of a blend ``dataset`` whose store holds other tokens than the checkpoint's member of the
    same lengths and settings (empty for anything but a blend)."""
    mix = getattr(dataset, "mix", None)
    selection = (state.get("config") or {}).get("selection")
    saved = selection.get("datasets") if isinstance(selection, Mapping) else None
    if not isinstance(mix, Mapping) or not isinstance(saved, list):
        return []
    now = [str(k) for k in mix["datasets"]]
    saved = [str(k) for k in saved]
    gone = {lengths_part(k): k for k in saved if k not in now and knows_content(k)}
    return [f"blend member {i + 1} ({dataset.datasets[i].describe()}) has the same lengths but other tokens than "
            f"the checkpoint's member (key {short(gone[lengths_part(key)])} -> {short(key)})"
            for i, key in enumerate(now)
            if key not in saved and knows_content(key) and lengths_part(key) in gone]


def refuse_swapped_members(state: dict[str, Any], dataset: Any) -> None:
    """Refuse a resume of a blend whose member's store now holds other tokens (:func:`swapped_members`)."""
    swapped = swapped_members(state, dataset)
    if swapped:
        raise TokenmillError(
            "cannot resume: " + "; ".join(swapped) + ". Put back the store(s) the checkpoint was saved on; or, "
            "if this is another corpus on purpose, pass allow_mix_change=True (--allow-mix-change): the "
            "checkpoint's member is then retired and this one starts at its first sample")


__all__ = ["KEY", "content_problems", "recorded", "refuse_swapped_members", "swapped_members"]
