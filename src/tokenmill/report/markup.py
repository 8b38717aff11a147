"""Small HTML pieces of the report page: escaped text, formatted and tagged numbers, tables, charts, facts.

A number from the manifest carries ``data-manifest`` (its JSON path in ``manifest.json``), one the report
computed carries ``data-key`` (its path in the report's JSON); both carry ``data-value`` (see
:mod:`tokenmill.report.page`).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import Any


def esc(value: object) -> str:
    """``value`` as HTML text (quotes escaped too: safe in attributes)."""
    return html.escape(str(value), quote=True)


def fmt(value: Any, digits: int = 2) -> str:
    """Integers with thousands separators, floats to ``digits`` places, None as a dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def pct(share: float | None, digits: int = 2) -> str:
    """A share (0..1) as a percentage; None as a dash."""
    return "–" if share is None else f"{100 * share:.{digits}f}%"


def num(value: Any, *, key: str | None = None, manifest: Sequence[str] | None = None, text: str | None = None) -> str:
    """A number on the page, tagged with where it comes from (see the module docstring)."""
    attrs = [f'data-value="{esc(json.dumps(value))}"']
    if key is not None:
        attrs.append(f'data-key="{esc(key)}"')
    if manifest is not None:
        attrs.append(f'data-manifest="{esc(json.dumps(list(manifest)))}"')
    return f'<span class="num" {" ".join(attrs)}>{esc(fmt(value) if text is None else text)}</span>'


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Iterable[int] = ()) -> str:
    """An HTML table; cells are HTML already; columns in ``numeric`` are right-aligned."""
    right = set(numeric)
    head = "".join(f'<th{" class=n" if i in right else ""}>{esc(h)}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td{" class=n" if i in right else ""}>{c}</td>' for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def chart(name: str, svg: str, caption: str = "") -> str:
    """A ``<figure class="chart">`` around an SVG (or a chart placeholder), with an optional caption."""
    cap = f'<figcaption class="muted small">{caption}</figcaption>' if caption else ""
    return f'<figure class="chart" data-chart="{esc(name)}">{svg}{cap}</figure>'


def fact(label: str, value_html: str) -> str:
    """One labelled fact of a facts grid (``value_html`` is HTML already)."""
    return f'<div class="fact"><div class="label">{esc(label)}</div><div class="value">{value_html}</div></div>'


def byte_size(n: int) -> str:
    """A byte count in B, KiB, MiB, GiB or TiB."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{n} B"

