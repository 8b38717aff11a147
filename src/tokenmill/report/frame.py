"""Where the report's axes sit in their figure: margins measured from the labels they hold.

matplotlib's constrained layout finds the margins by drawing the figure's ticks and text twice more
(bounding boxes of every label), about a third of each chart's drawing time. The charts here are
simple (one row of axes, a title above, tick labels and an axis label below and to the left, at
most one colorbar to the right of an axes), so the margins are summed from the widths of the
strings the labels will show instead: the same font measure matplotlib draws with, one call per
string, no drawing. Tick label strings come from each axis's own locator and formatter, so the
margins follow the ticks the chart will have; a few points of slack absorb the tick pads'
rounding. Everything is in points (1/72 inch).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

EDGE = 4.0
"""Blank points at every edge of the figure, and between an axes and the next one's labels."""
LINE = 1.25
"""Height of a line of text, in font sizes (ascent, descent and a little leading)."""
TICK = 7.5
"""Tick length plus the pad between a tick and its label (3.5 + 3.5 points, and slack)."""
LABEL_PAD = 4.0
"""Pad between the tick labels and the axis label (matplotlib's ``axes.labelpad``)."""
TITLE_PAD = 6.0
"""Pad between the axes and its title (``axes.titlepad``)."""
BAR_PAD = 6.0
"""Gap between an axes and its colorbar."""
BAR_ASPECT = 20.0
"""A colorbar is this many times as tall as it is wide (matplotlib's default)."""


@lru_cache(maxsize=4096)
def _width(text: str, size: float, family: str) -> float:
    """Width in points of one line of ``text`` at ``size`` points, as matplotlib lays it out."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    if not text:
        return 0.0
    width, _, _ = text_to_path.get_text_width_height_descent(text, FontProperties(family=family, size=size), False)
    return float(width)


def text_width(text: str, size: float) -> float:
    """Width in points of the widest line of ``text`` (the font in force)."""
    import matplotlib

    family = matplotlib.rcParams["font.family"][0]
    return max((_width(line, float(size), family) for line in text.split("\n")), default=0.0)


def tick_labels(axis: Any) -> list[str]:
    """The labels ``axis`` will draw at its major ticks inside its view, as its locator and formatter
    give them (the axes' position must be set: ``nbins="auto"`` counts the room)."""
    low, high = sorted(axis.get_view_interval())
    locs = [v for v in axis.get_majorticklocs() if low - 1e-9 * abs(low) <= v <= high + 1e-9 * abs(high)]
    if not locs:
        return []
    formatter = axis.get_major_formatter()
    return [str(s) for s in formatter.format_ticks(locs)]


def _font_size(text: Any) -> float:
    return float(text.get_fontsize())


def _tick_size(axis: Any) -> float:
    """Points of ``axis``'s tick labels (``xtick.labelsize``/``ytick.labelsize``, often relative)."""
    import matplotlib
    from matplotlib.font_manager import FontProperties

    return float(FontProperties(size=matplotlib.rcParams[f"{axis.axis_name}tick.labelsize"]).get_size_in_points())


def _widest_tick(axis: Any) -> float:
    """Points of ``axis``'s widest tick label."""
    size = _tick_size(axis)
    return max((text_width(s, size) for s in tick_labels(axis)), default=0.0)


def _left(ax: Any) -> float:
    """Points left of the axes: y tick labels, the y label."""
    label = ax.yaxis.label
    return _widest_tick(ax.yaxis) + TICK + (LINE * _font_size(label) + LABEL_PAD if label.get_text() else 0.0)


def _right(ax: Any, bar: Any | None, height: float) -> float:
    """Points right of the axes: half of a last x tick label that may stick out, or the colorbar with
    its tick labels and label."""
    labels = tick_labels(ax.xaxis)
    overhang = text_width(labels[-1], _tick_size(ax.xaxis)) / 2 if labels else 0.0
    if bar is None:
        return overhang
    label = bar.ax.yaxis.label
    return max(overhang, BAR_PAD) + height / BAR_ASPECT + TICK + _widest_tick(bar.ax.yaxis) + (
        LINE * _font_size(label) + LABEL_PAD if label.get_text() else 0.0)


def _top(ax: Any) -> float:
    title = ax.title
    return LINE * _font_size(title) + TITLE_PAD if title.get_text() else 0.0


def _bottom(ax: Any) -> float:
    label = ax.xaxis.label
    size = _tick_size(ax.xaxis)
    return TICK + LINE * size + (LINE * _font_size(label) + LABEL_PAD if label.get_text() else 0.0)


def arrange(fig: Any, axes: Sequence[Any], ratios: Sequence[float] | None = None,
            bars: Sequence[Any | None] | None = None) -> None:
    """Place ``axes`` side by side in ``fig`` (their widths in ``ratios``), each with its labels, title
    and colorbar (``bars[i]``, made with :func:`colorbar_axes`'s axes) inside the figure."""
    ratios = list(ratios or [1.0] * len(axes))
    bars = list(bars or [None] * len(axes))
    fig_w, fig_h = (float(v) * 72.0 for v in fig.get_size_inches())
    top = EDGE + max(_top(ax) for ax in axes)
    bottom = EDGE + max(_bottom(ax) for ax in axes)
    height = max(fig_h - top - bottom, 1.0)
    # a first position with the final height: the y ticks (which decide the left margins) depend on it
    for ax, bar in zip(axes, bars, strict=True):
        ax.set_position((0.0, bottom / fig_h, 1.0, height / fig_h))
        if bar is not None:
            bar.ax.set_position((0.0, bottom / fig_h, height / BAR_ASPECT / fig_w, height / fig_h))
    lefts = [_left(ax) for ax in axes]
    rights = [_right(ax, bar, height) for ax, bar in zip(axes, bars, strict=True)]
    titles = np.array([text_width(ax.title.get_text(), _font_size(ax.title)) for ax in axes])
    widths = _widths(fig_w, ratios, lefts, rights)
    for _ in range(2):  # a title wider than its axes sticks out by half the difference on each side
        over = np.maximum(titles - widths, 0.0) / 2
        if not over.any():
            break
        lefts = [max(left, o - EDGE) for left, o in zip(lefts, over, strict=True)]
        rights = [max(right, o) for right, o in zip(rights, over, strict=True)]
        widths = _widths(fig_w, ratios, lefts, rights)
    x = EDGE
    for ax, bar, left, right, width in zip(axes, bars, lefts, rights, widths, strict=True):
        x += left
        ax.set_position((x / fig_w, bottom / fig_h, width / fig_w, height / fig_h))
        _place_labels(fig, ax)
        if bar is not None:
            bar.ax.set_position(((x + width + BAR_PAD) / fig_w, bottom / fig_h, height / BAR_ASPECT / fig_w,
                                 height / fig_h))
        x += width + right + EDGE


def _place_labels(fig: Any, ax: Any) -> None:
    """The axis labels where matplotlib would put them (the tick labels' far edge plus the label pad),
    from the measured widths: otherwise every draw measures every tick label's box to find them."""
    from matplotlib.transforms import ScaledTranslation

    def offset(dx: float, dy: float) -> Any:
        return ax.transAxes + ScaledTranslation(dx / 72.0, dy / 72.0, fig.dpi_scale_trans)

    size = _tick_size(ax.xaxis)
    if ax.xaxis.label.get_text():
        ax.xaxis.set_label_coords(0.5, 0.0, transform=offset(0.0, -(TICK + LINE * size + LABEL_PAD)))
    if ax.yaxis.label.get_text():
        ax.yaxis.set_label_coords(0.0, 0.5, transform=offset(-(_widest_tick(ax.yaxis) + TICK + LABEL_PAD), 0.0))


def _widths(fig_w: float, ratios: Sequence[float], lefts: Sequence[float], rights: Sequence[float]) -> np.ndarray:
    """Points of each axes' width: what the margins leave, shared in ``ratios``."""
    room = fig_w - 2 * EDGE - sum(lefts) - sum(rights) - EDGE * (len(ratios) - 1)
    return np.asarray(ratios, dtype=np.float64) / sum(ratios) * max(room, 1.0)


def colorbar_axes(fig: Any) -> Any:
    """An axes for a colorbar, placed by :func:`arrange`."""
    return fig.add_axes((0.0, 0.0, 0.01, 1.0))


__all__ = ["arrange", "colorbar_axes", "text_width", "tick_labels"]
