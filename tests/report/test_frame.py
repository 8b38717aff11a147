"""The charts' axes placed from measured label widths: every title, tick label, axis label and colorbar
inside the figure, nothing overlapping a neighbour, whatever the labels' lengths."""

from __future__ import annotations

import io
from typing import Any

import pytest

pytest.importorskip("matplotlib")

from matplotlib.backends.backend_svg import FigureCanvasSVG, RendererSVG

from tokenmill.report import plots

SLACK = 0.5  # points


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every figure the chart functions print, kept for the test to measure."""
    kept: list[Any] = []
    original = plots._svg

    def keep(fig: Any) -> str:
        kept.append(fig)
        return original(fig)

    monkeypatch.setattr(plots, "_svg", keep)
    return kept


def _hist(n: int, width: int = 1, top: int = 10_000) -> dict[str, Any]:
    return {"counts": [top // (i + 1) for i in range(n)], "edges": [i * width for i in range(n + 1)]}


def _texts_and_frames(fig: Any) -> tuple[list[tuple[str, Any]], list[Any]]:
    """(every title, axis label and tick label with its box; every axes' frame), measured by the SVG
    renderer the page's charts are drawn with (text as paths: glyph boxes as drawn)."""
    FigureCanvasSVG(fig)
    width, height = fig.get_size_inches() * 72
    renderer = RendererSVG(width, height, io.StringIO())
    fig.draw(renderer)
    texts, frames = [], []
    for ax in fig.axes:
        frames.append(ax.get_window_extent(renderer))
        shown = [ax.title, ax.xaxis.label, ax.yaxis.label]
        for axis in (ax.xaxis, ax.yaxis):
            shown += [t.label1 for t in axis.get_major_ticks() if t.label1.get_visible() and t.get_visible()]
            shown += [t.label2 for t in axis.get_major_ticks() if t.label2.get_visible() and t.get_visible()]
        low_x, high_x = sorted(ax.get_xlim())
        low_y, high_y = sorted(ax.get_ylim())
        for text in shown:
            x, y = text.get_position()
            outside = (text in ax.xaxis.get_ticklabels() and not low_x <= x <= high_x) or (
                text in ax.yaxis.get_ticklabels() and not low_y <= y <= high_y)
            if text.get_text() and not outside:
                texts.append((text.get_text(), text.get_window_extent(renderer)))
    return texts, frames


def _apart(a: Any, b: Any) -> bool:
    return min(a.x1, b.x1) - max(a.x0, b.x0) <= SLACK or min(a.y1, b.y1) - max(a.y0, b.y0) <= SLACK


def _check(fig: Any) -> None:
    width, height = fig.get_size_inches() * 72
    texts, frames = _texts_and_frames(fig)
    assert len(texts) >= 5
    for text, box in texts:
        assert box.x0 >= -SLACK and box.y0 >= -SLACK, (text, box)
        assert box.x1 <= width + SLACK and box.y1 <= height + SLACK, (text, box, width, height)
        for frame in frames:
            assert _apart(box, frame), (text, box, frame)
    for i, (text, box) in enumerate(texts):
        for other, second in texts[i + 1 :]:
            assert _apart(box, second), (text, box, other, second)


@pytest.mark.parametrize("label", ["x", "a much longer cleaning step label (with a reason)"])
def test_bars_with_short_and_long_labels(figures: list[Any], label: str) -> None:
    plots.funnel_chart("funnel", "train (en-de)", {
        "read": 1_000_000, "kept": 900_000, "kept_share": 0.9,
        "steps": [{"label": label, "dropped": 99_000}, {"label": "duplicate", "dropped": 1_000}],
    })
    plots.stages_chart([{"kind": label, "stages": 3, "seconds": 12.5}, {"kind": "encode", "stages": 1, "seconds": 0.1}])
    assert len(figures) == 2
    for fig in figures:
        _check(fig)


@pytest.mark.parametrize("langs", [("en", "de"), ("eng_Latn", "zho_Hans")])
def test_lengths_with_density_and_colorbar(figures: list[Any], langs: tuple[str, str]) -> None:
    bins = 20
    joint = {"counts": [[(i * j) % 97 for i in range(bins)] for j in range(bins)], "bins": bins, "width": 5,
             "limit": 100}
    plots.lengths_chart("lengths-0", f"train ({langs[0]}-{langs[1]})",
                        [(langs[0], _hist(40, 5)), (langs[1], _hist(40, 5, 30))], joint, langs)
    (fig,) = figures
    assert len(fig.axes) == 3  # two axes and the colorbar
    _check(fig)


def test_shapes_ranks_and_many_directions(figures: list[Any]) -> None:
    plots.shapes_chart({"batches": 50, "distinct": 3, "points": [[10, 400, 20], [200, 12, 1], [5000, 3, 1_000_000]]},
                       "lowpad")
    plots.ranks_chart([123_456_789, 120_000_000, 99_999_999])
    directions = [f"eng_Latn-x{i:02d}_Latn_long_direction_name" for i in range(40)]
    plots.sampling_chart([{"temperature": t, "directions": [{"direction": d, "share": 1 / 40} for d in directions]}
                          for t in (1, 5)])
    plots.documents_chart("documents-0", "train", _hist(30, 100), 2048)
    assert len(figures) == 4
    for fig in figures:
        _check(fig)
