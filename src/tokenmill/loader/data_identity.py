"""What a saved state records of its data's content, and the check of it at resume.

A dataset's fingerprint (what a state's ``data`` field holds) is a function of its lengths and settings:
for GPT samples and blends, two corpora whose documents have the same lengths get the same one. A dataset
that knows its content (``content()``: member fingerprint -> store content identity,
:meth:`~tokenmill.data.gpt_dataset.GPTDataset.content`) has it recorded under ``contents``; a resume compares
it member by member (a blend's members that the saved state and this blend share: a retired member is not
here to compare, a new one was not there). A state saved before states recorded contents has none: it is
checked on the lengths, as when it was saved.
"""

from __future__ import annotations

from typing import Any

KEY = "contents"


def recorded(dataset: Any) -> dict[str, Any]:
    """The state's field for ``dataset``'s content (none when the dataset does not know it)."""
    content = getattr(dataset, "content", None)
    return {KEY: dict(content())} if callable(content) else {}


def content_problems(state: dict[str, Any], dataset: Any) -> list[str]:
    """Why ``state`` was saved on other data than ``dataset`` holds (empty: the same, or not recorded)."""
    saved, content = state.get(KEY), getattr(dataset, "content", None)
    if not isinstance(saved, dict) or not callable(content):
        return []
    now = content()
    changed = sorted(k for k in set(saved) & set(now) if saved[k] != now[k])
    if not changed:
        return []
    return [f"the data differ from the checkpoint's: {dataset.describe()} has the same lengths but other tokens "
            f"({len(changed)} store(s) whose content checksum changed, e.g. {str(saved[changed[0]])[:16]}... -> "
            f"{str(now[changed[0]])[:16]}...)"]


__all__ = ["KEY", "content_problems", "recorded"]
