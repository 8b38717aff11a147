"""Where a part's numbers sit in manifest.json, and a part's title: shared by the page's sections."""

from __future__ import annotations

from typing import Any


def vocab_path(lang: str) -> tuple[str, ...]:
    """Where a language's vocabulary size sits in manifest.json."""
    if lang == "(shared)":
        return ("vocab", "size")
    return ("vocab", "dictionaries", "" if lang == "(all)" else lang, "size")


def summary_path(report: dict[str, Any], part: dict[str, Any]) -> tuple[str, ...]:
    """Where a part's summary (counts per language, cleaning) sits in manifest.json."""
    if report["kind"] == "multilingual" and part["direction"]:
        return ("summary", "directions", part["direction"], "splits", part["split"])
    return ("summary", "splits", part["split"])


def part_title(part: dict[str, Any]) -> str:
    """``split`` or ``split (direction)``."""
    return f'{part["split"]} ({part["direction"]})' if part["direction"] else part["split"]


def step_path(base: tuple[str, ...], step: dict[str, Any]) -> tuple[str, ...] | None:
    """Where a step's count sits in manifest.json (None: derived, e.g. items skipped while reading)."""
    return None if step.get("manifest") is None else (*base, *step["manifest"])

