"""Section 3 of the report: the cleaning funnel of each split and samples of what each step dropped.

The counts are the manifest's (``summary.splits[split].clean``, per direction for many
directions): pairs read, then the drops of each step in pipeline order (reading, the filters,
leakage, dedup), then what was kept. The samples are the ``DESTDIR/.work/dropped/{split}.json``
files prepare leaves (``.work/dropped/{direction}/{split}.json`` for many directions), each
``{reason: [{"line", "src", "tgt"}, ...]}`` (see :mod:`tokenmill.text.drop_sample`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenmill.report.language_mix import language_mix
from tokenmill.store.layout import dropped_path
from tokenmill.text.filters import FILTER_STEPS, RULES

REASON_LABELS = {
    "read": "skipped while reading (invalid UTF-8 or malformed)",
    "empty": "empty side",
    "chars": "too short / too long (characters)",
    "tokens": "too short / too long (tokens)",
    "ratio": "length ratio",
    "identical": "source = target",
    "nonletter": "mostly non-letters",
    "script": "wrong script",
    "langid": "wrong language (language ID)",
    **{name: rule.label for name, rule in RULES.items()},
    "decontaminate": "shares an n-gram with --decontaminate files",
    "leakage": "also in valid/test (leakage)",
    "dedup": "duplicate",
    "near_dedup": "near-duplicate (MinHash + LSH)",
}


def read_dropped(root: str | Path, split: str, direction: str | None = None) -> dict[str, list[dict[str, Any]]] | None:
    """The drop samples of a split as ``{reason: [{"line", "src", "tgt"}, ...]}``; None when prepare
    kept none (an older run, or the work files were removed). Malformed records are skipped."""
    path = dropped_path(root, split, direction)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    out: dict[str, list[dict[str, Any]]] = {}
    for reason, records in data.items():
        if not isinstance(reason, str) or not isinstance(records, list):
            continue
        kept = [
            {"line": r["line"], "src": str(r.get("src", "")), "tgt": None if r.get("tgt") is None else str(r["tgt"])}
            for r in records
            if isinstance(r, dict) and isinstance(r.get("line"), int)
        ]
        out[reason] = sorted(kept, key=lambda r: r["line"])
    return out


_TEXT_STEPS = ("read", "normalize", "filter", "decontaminate", "leakage", "dedup", "near_dedup", "kept")
LATER_STEP_LABELS = {"pieces": "counted in tokenizer pieces"}


_ONE_COUNTER = (("decontaminate", "contaminated"), ("leakage", "leaked"), ("dedup", "duplicates"),
                ("near_dedup", "near_duplicates"))
"""Text clean-up steps recorded as one counter each: (step, its counter of dropped items)."""


class _Steps:
    """The funnel's steps as they are added, each with what remains after it."""

    def __init__(self, remaining: int) -> None:
        self.remaining = remaining
        self.steps: list[dict[str, Any]] = []

    def add(self, reason: str, label: str, dropped: int, manifest: list[str] | None) -> None:
        self.remaining -= dropped
        self.steps.append({"reason": reason, "label": label, "dropped": dropped, "remaining": self.remaining,
                           "manifest": manifest})


def funnel(clean: dict[str, Any]) -> dict[str, Any]:
    """The funnel of one split from its recorded step counts.

    Returns ``read`` (items read); ``steps``, one ``{"reason", "label", "dropped", "remaining",
    "manifest"}`` per step that can drop, in pipeline order (``manifest``: the counter's path inside
    the split's ``clean`` record); ``cleaned`` (kept by the text clean-up), ``kept`` (what is left
    after the steps that run later on the encoded items, e.g. length filters counted in tokenizer
    pieces, whose reasons are ``pieces.tokens`` ...) and whether the counts add up."""
    read_counts = clean.get("read") or {}
    read = int(read_counts.get("read", read_counts.get("yielded", 0)))
    steps = _Steps(read)
    yielded = read_counts.get("yielded")
    if yielded is not None and int(yielded) != read:
        steps.add("read", REASON_LABELS["read"], read - int(yielded), None)
    _text_steps(clean, steps)
    kept_counts = clean.get("kept") or {}
    kept_key = next(iter(kept_counts), None)
    cleaned = int(kept_counts[kept_key]) if kept_key is not None else steps.remaining
    adds_up = steps.remaining == cleaned
    steps.remaining = cleaned  # the later steps start from what the text clean-up kept
    kept_manifest = ["kept", kept_key] if kept_key is not None else None
    kept, kept_manifest, later_add_up = _later_steps(clean, steps, cleaned, kept_manifest)
    normalize = clean.get("normalize") or {}
    return {
        "read": read,
        "steps": steps.steps,
        "cleaned": cleaned,
        "kept": kept,
        "kept_manifest": kept_manifest,
        "kept_share": kept / read if read else 0.0,
        "adds_up": adds_up and later_add_up,
        "normalized_changed": int(normalize.get("changed", 0)),
        "normalized_lines": int(normalize.get("lines", 0)),
    }


def _text_steps(clean: dict[str, Any], steps: _Steps) -> None:
    """The text clean-up's steps: each filter (known ones in pipeline order, newer ones after), then the
    one-counter steps."""
    filters = clean.get("filter") or {}
    known = [name for name in FILTER_STEPS if f"dropped_{name}" in filters]
    unknown = [k.removeprefix("dropped_") for k in filters if k.startswith("dropped_")]  # newer steps, kept
    for name in known + [n for n in unknown if n not in known]:
        steps.add(name, REASON_LABELS.get(name, name), int(filters[f"dropped_{name}"]), ["filter", f"dropped_{name}"])
    for name, counter in _ONE_COUNTER:
        if name in clean:
            steps.add(name, REASON_LABELS[name], int((clean.get(name) or {}).get(counter, 0)), [name, counter])


def _later_steps(
    clean: dict[str, Any], steps: _Steps, kept: int, kept_manifest: list[str] | None
) -> tuple[int, list[str] | None, bool]:
    """The steps that run on the encoded items (any record with ``dropped_*`` counters beyond the text
    clean-up's); returns (kept after them, where that count sits, whether each one's ``kept`` adds up)."""
    adds_up = True
    for later, counts in clean.items():
        if later in _TEXT_STEPS or not isinstance(counts, dict):
            continue
        drops = [k for k in counts if k.startswith("dropped_")]
        if not drops:
            continue
        where = LATER_STEP_LABELS.get(later, later)
        for key in drops:
            name = key.removeprefix("dropped_")
            steps.add(f"{later}.{name}", f"{REASON_LABELS.get(name, name)}, {where}", int(counts[key]), [later, key])
        if "kept" in counts:
            kept, kept_manifest = int(counts["kept"]), [later, "kept"]
            adds_up = adds_up and steps.remaining == kept
    return kept, kept_manifest, adds_up


def cleaning(root: Path, summary: dict[str, Any], split: str, direction: str | None) -> dict[str, Any] | None:
    """Funnel and drop samples of one split (None when the manifest records no cleaning for it)."""
    scope = summary
    if direction and isinstance(summary.get("directions"), dict):
        scope = summary["directions"].get(direction) or {}
    clean = ((scope.get("splits") or {}).get(split) or {}).get("clean")
    if not isinstance(clean, dict):
        return None
    out = funnel(clean)
    out["samples"] = read_dropped(root, split, direction)
    out["samples_path"] = str(dropped_path(root, split, direction))
    out["language_mix"] = language_mix(clean)
    return out


__all__ = ["REASON_LABELS", "cleaning", "dropped_path", "funnel", "read_dropped"]
