"""The language mix of a split: the labels language ID gave each side, most frequent first.

The ``langid`` filter step counts every label it sees as ``lid_src_<label>`` / ``lid_tgt_<label>`` in the
split's ``filter`` counters (:mod:`tokenmill.text.filters.pairs`), over the lines that reached it (what the
earlier steps kept). :func:`language_mix` reads them back; :func:`mix_html` shows the top labels per side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

TOP = 10
"""Labels shown per side; the rest are summed into one row."""
SIDES = {"src": "source", "tgt": "target"}


def language_mix(clean: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per side (``src``, ``tgt``) that language ID looked at: ``{"label", "lines", "counter"}`` rows, most
    lines first (ties by label), the top :data:`TOP` then ``other`` (counter None) when there are more."""
    counters = clean.get("filter") or {}
    mix: dict[str, list[dict[str, Any]]] = {}
    for side in SIDES:
        prefix = f"lid_{side}_"
        rows = sorted(({"label": key.removeprefix(prefix), "lines": int(value), "counter": key}
                       for key, value in counters.items() if key.startswith(prefix)),
                      key=lambda row: (-row["lines"], row["label"]))
        if len(rows) > TOP:
            rest = rows[TOP:]
            rows = [*rows[:TOP], {"label": f"other ({len(rest)} labels)", "lines": sum(r["lines"] for r in rest),
                                  "counter": None}]
        if rows:
            mix[side] = rows
    return mix


def mix_html(mix: dict[str, list[dict[str, Any]]] | None, base: Sequence[str], *,
             table: Callable[..., str], num: Callable[..., str], esc: Callable[[object], str]) -> str:
    """The mix as one table (side, label, lines, share of the side); ``""`` without language ID. ``table``,
    ``num`` and ``esc`` are the page's helpers (numbers tagged with their manifest path under ``base``)."""
    if not mix:
        return ""
    rows = []
    for side, entries in mix.items():
        total = sum(row["lines"] for row in entries) or 1
        for row in entries:
            where = None if row["counter"] is None else (*base, "filter", row["counter"])
            rows.append((esc(SIDES[side]), esc(row["label"]), num(row["lines"], manifest=where),
                         f"{100.0 * row['lines'] / total:.1f}%"))
    intro = ('<p class="muted">Language mix: the labels language ID gave the lines that reached it (before it '
             "dropped any), per side.</p>")
    return intro + table(("side", "label", "lines", "share"), rows, numeric=(2, 3))


__all__ = ["SIDES", "TOP", "language_mix", "mix_html"]
