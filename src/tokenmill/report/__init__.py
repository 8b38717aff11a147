"""``tokenmill report``: one self-contained HTML page (and JSON) on what a prepared directory holds.

Modules, one job each:

* :mod:`~tokenmill.report.layout` — which splits, directions, languages and shards the manifest lists;
* :mod:`~tokenmill.report.overview`, :mod:`~tokenmill.report.corpus`, :mod:`~tokenmill.report.cleaning`,
  :mod:`~tokenmill.report.mix`, :mod:`~tokenmill.report.batching`, :mod:`~tokenmill.report.lm` — the
  numbers of each section;
* :mod:`~tokenmill.report.gather` — all of them as one JSON-able dict;
* :mod:`~tokenmill.report.plots` — the charts (matplotlib, inline SVG);
* :mod:`~tokenmill.report.page` — the HTML page.

``write_report(directory)`` is what the command (and ``prepare`` at its end) calls.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tokenmill.fsutil import atomic_write
from tokenmill.report.cleaning import dropped_path, read_dropped
from tokenmill.report.gather import gather
from tokenmill.report.options import ReportOptions
from tokenmill.report.page import early_charts, render
from tokenmill.report.plots import warm_up
from tokenmill.store.manifest import REPORT_NAME


def default_output(directory: str | os.PathLike[str]) -> Path:
    """``<directory>/report.html``: the page travels with the data (``verify`` and the manifest leave it
    out, like the work folders: it is about the data, not part of it)."""
    return Path(directory) / REPORT_NAME


def to_json(report: dict[str, Any]) -> str:
    """The report's numbers as JSON text (numpy scalars made plain)."""

    def plain(value: Any) -> Any:
        if hasattr(value, "tolist"):
            return value.tolist()
        raise TypeError(f"not JSON-able: {type(value).__name__}")

    return json.dumps(report, default=plain, ensure_ascii=False, sort_keys=True)


def render_html(report: dict[str, Any], options: ReportOptions | None = None, *, parallel: bool = True,
                drawn: dict[str, str] | None = None) -> str:
    """The HTML page of a gathered report (needs matplotlib: ``pip install 'tokenmill[report]'``);
    ``parallel`` and ``drawn``: see :func:`tokenmill.report.page.render`."""
    options = options or ReportOptions()
    return render(report, max_plots=options.max_plotted_parts, parallel=parallel, drawn=drawn)


def gather_for_page(
    directory: str | os.PathLike[str], options: ReportOptions
) -> tuple[dict[str, Any], dict[str, str]]:
    """:func:`gather` for a page: matplotlib is imported and warmed up, and the charts of the sections
    known early are drawn, while a forked child computes the batching numbers (the two cores stay
    busy); returns (numbers, charts drawn so far) for :func:`render_html`. The page is the same bytes
    as one rendered from ``gather`` alone: only which process drew which chart, and when, differs."""
    drawn: dict[str, str] = {}

    def early(known: dict[str, Any], busy: Callable[[], bool]) -> None:
        try:
            drawn.update(early_charts(known, options.max_plotted_parts, busy))
        except ImportError:  # no matplotlib: rendering says so
            pass

    return gather(directory, options, meanwhile=warm_up_charts, early=early), drawn


def warm_up_charts() -> None:
    """Import and warm up matplotlib for the charts (what :func:`gather`'s ``meanwhile`` is given when
    a page follows); nothing when matplotlib is missing (rendering then says so)."""
    try:
        warm_up()
    except ImportError:
        pass


def write_report(
    directory: str | os.PathLike[str],
    output: str | os.PathLike[str] | None = None,
    options: ReportOptions | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Gather the numbers of ``directory``, write the page atomically to ``output`` (default
    :func:`default_output`) and return (page path, numbers)."""
    options = options or ReportOptions()
    report, drawn = gather_for_page(directory, options)
    page = render_html(report, options, drawn=drawn)
    path = Path(output) if output is not None else default_output(directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as handle:
        handle.write(page)
    return path, report


__all__ = [
    "ReportOptions",
    "default_output",
    "dropped_path",
    "gather",
    "gather_for_page",
    "read_dropped",
    "render_html",
    "to_json",
    "warm_up_charts",
    "write_report",
]
