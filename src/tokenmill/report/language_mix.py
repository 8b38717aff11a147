"""The language mix of a split: the labels language ID gave each side, most frequent first.

The ``langid`` filter step counts every label it sees as ``lid_src_<label>`` / ``lid_tgt_<label>`` in the
split's ``filter`` counters (:mod:`tokenmill.text.filters.pairs`), over the lines that reached it (what the
earlier steps kept). :func:`language_mix` reads them back (in the order :func:`tokenmill.text.lid.language_mix`
gives); :func:`mix_html` shows the top labels per side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tokenmill.text.lid import language_mix as counted_mix
from tokenmill.text.lid import mix_counter

TOP = 10
"""Labels shown per side; the rest are summed into one row."""
SIDES = {"src": "source", "tgt": "target"}
"""How each side is named on the page."""


def language_mix(clean: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per side (``src``, ``tgt``) that language ID looked at: ``{"label", "lines", "counter"}`` rows, most
    lines first (ties by label), the top :data:`TOP` then ``other`` (counter None) when there are more."""
    mix: dict[str, list[dict[str, Any]]] = {}
    for side, counted in counted_mix(clean.get("filter") or {}).items():
        rows = [{"label": label, "lines": n, "counter": mix_counter(side, label)} for label, n in counted]
        if len(rows) > TOP:
            rest = rows[TOP:]
            rows = [*rows[:TOP], {"label": f"other ({len(rest)} labels)", "lines": sum(r["lines"] for r in rest),
                                  "counter": None}]
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
