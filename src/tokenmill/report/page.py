"""The report as one self-contained HTML page: inline styles, inline SVG charts, two tiny scripts.

Nothing is fetched: the page opens from disk in any browser, offline. Every number that comes
from the manifest carries ``data-manifest`` (its JSON path in ``manifest.json``) and
``data-value``; numbers the report computed carry ``data-key`` (their path in the report's JSON)
and ``data-value``, so a test (or a person with the dev tools) can check the page against both.
Every chart is a ``<figure class="chart" data-chart=NAME>``; after the page loads, a script writes
each chart's rendered size into ``data-rendered`` and counts them on ``<html>`` (``data-charts``,
``data-charts-rendered``), and an error hook lists any script error in ``#report-errors``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tokenmill.report.drawing import collecting, draw_all, draw_while, fill
from tokenmill.report.markup import esc
from tokenmill.report.page_assets import AUDIT, CSS, ERROR_HOOK
from tokenmill.report.sections.batching import batching_section
from tokenmill.report.sections.cleaning import cleaning_section
from tokenmill.report.sections.data import data_section
from tokenmill.report.sections.directions import directions_section
from tokenmill.report.sections.lm import lm_section
from tokenmill.report.sections.overview import overview_section


def early_charts(report: dict[str, Any], max_plots: int, busy: Callable[[], bool]) -> dict[str, str]:
    """The charts of the sections ``report`` holds before its batching, LM and blend numbers (a
    :func:`~tokenmill.report.gather.gather` ``early`` step), drawn while ``busy()`` holds; for
    :func:`render`'s ``drawn``. None for language-model data: its data section shows the LM
    numbers too, so its charts are not known early."""
    if report["kind"] == "monolingual" or not busy():
        return {}
    known = {**report, "batching": None, "lm": None, "blend": None, "seconds": 0.0}
    with collecting() as charts:
        _bodies(known, max_plots)
    return draw_while(charts, busy)


def _bodies(report: dict[str, Any], max_plots: int) -> list[tuple[str, str, str]]:
    """(anchor, title, HTML with chart placeholders) of every section the report has."""
    has_cleaning = any(p.get("cleaning") for p in report["parts"])
    sections: list[tuple[str, str, bool, Callable[[int], str]]] = [
        ("overview", "Overview", True, lambda n: overview_section(report, n)),
        ("data", "Data", True, lambda n: data_section(report, max_plots, n)),
        ("cleaning", "Cleaning", has_cleaning, lambda n: cleaning_section(report, max_plots, n)),
        ("directions", "Directions", report["directions"] is not None, lambda n: directions_section(report, n)),
        ("batching", "Batching", report["batching"] is not None, lambda n: batching_section(report, n)),
        ("lm", "LM data", report["lm"] is not None or report["blend"] is not None, lambda n: lm_section(report, n)),
    ]
    present = [(anchor, label, build) for anchor, label, shown, build in sections if shown]
    return [(anchor, label, build(i + 1)) for i, (anchor, label, build) in enumerate(present)]


def render(report: dict[str, Any], max_plots: int = 24, *, parallel: bool = True,
           drawn: dict[str, str] | None = None) -> str:
    """The whole page for a report dict from :func:`tokenmill.report.gather.gather`: the text first,
    then the charts (:mod:`~tokenmill.report.drawing`; ``parallel=False``: all drawn here, in turn;
    ``drawn``: charts drawn already, from :func:`early_charts`)."""
    with collecting() as charts:
        bodies = _bodies(report, max_plots)
    svgs = draw_all(charts, parallel, drawn)
    nav = "".join(f'<a href="#{a}">{esc(label)}</a>' for a, label, _ in bodies)
    o = report["overview"]
    name = report["directory"].rstrip("/").rsplit("/", 1)[-1]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>tokenmill report: {esc(name)}</title><style>{CSS}</style><script>{ERROR_HOOK}</script></head>"
        "<body>"
        f'<header><h1>tokenmill report: {esc(name)}</h1><div class="sub">{esc(report["directory"])} · '
        f'{esc(o["created_by"] or "")} · report by {esc(o["report_by"])}</div></header>'
        '<div id="report-errors" hidden></div>'
        f"<nav>{nav}</nav><main>{fill(''.join(body for _, _, body in bodies), svgs)}</main>"
        f'<footer>Gathered in {report["seconds"]:.2f} s. The same numbers as JSON: '
        f"<code>tokenmill report {esc(report['directory'])} --json</code></footer>"
        f"<script>{AUDIT}</script></body></html>\n"
    )



__all__ = ["early_charts", "render"]
