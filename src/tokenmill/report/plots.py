"""The report's charts, drawn with matplotlib and returned as inline SVG text.

matplotlib draws offline with no browser-side code, its SVG has every glyph as a path (the page
looks the same without any font installed) and a fixed ``svg.hashsalt`` makes the output
byte-for-byte reproducible. Figures use ``matplotlib.figure.Figure`` directly (no pyplot state);
:func:`~tokenmill.report.frame.arrange` places their axes from the measured widths of their labels
(matplotlib's constrained layout gave the same room for about a third more drawing time).
Each function takes the numbers the report gathered (plain lists and dicts) and returns one
``<svg>`` element without a fixed size, so the page can scale it to its column.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from tokenmill.report.frame import arrange, colorbar_axes

COLORS = ("#2f6db5", "#e07b39", "#3a9d5d", "#8e5cb5", "#b5473a", "#7f7f7f", "#c9a227", "#2aa1b3")
_STYLE = {
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.titleweight": "bold",
    "axes.labelsize": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e3e3e3",
    "grid.linewidth": 0.6,
    "legend.fontsize": 8.0,
    "legend.frameon": False,
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "axes.titley": 1.0,  # fixed above the axes (nothing sits on top): no search for overlaps at each draw
}
_WIDTH = 10.0  # inches; the page scales every chart to its column


def _figure_class() -> Any:
    from matplotlib.figure import Figure

    return Figure


def warm_up() -> None:
    """Import what the charts use and draw one small figure (fonts loaded, caches filled), so that
    this cost is paid once, before any chart, and can overlap other work (see ``gather``'s
    ``meanwhile``); cheap when done already."""
    global _WARM
    if _WARM:
        return
    from matplotlib import colors, ticker  # noqa: F401 - imported for the charts' sake

    with _style("warm-up"):
        fig = _figure_class()(figsize=(2.0, 1.0))
        ax = fig.add_subplot(1, 1, 1)
        ax.set_title("0.5 s")
        ax.set_xlabel("tokens")
        ax.set_ylabel("items")
        arrange(fig, [ax])
        _svg(fig)
    _WARM = True


_WARM = False


@contextmanager
def _style(name: str) -> Iterator[None]:
    import matplotlib

    with matplotlib.rc_context({**_STYLE, "svg.hashsalt": f"tokenmill-{name}"}):
        yield


def _svg(fig: Any) -> str:
    """The figure as an ``<svg>`` element sized by its viewBox only (no XML prologue).

    Printed by the SVG canvas itself rather than ``savefig``: the figure is drawn once (its axes are
    placed already, see :func:`~tokenmill.report.frame.arrange`)."""
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    buffer = io.StringIO()
    FigureCanvasSVG(fig).print_svg(buffer, metadata={"Date": None, "Creator": "tokenmill report (matplotlib)"})
    text = buffer.getvalue()
    svg = text[text.index("<svg") :]
    head_end = svg.index(">")
    head = re.sub(r'\s(width|height)="[^"]*"', "", svg[:head_end])
    return head + svg[head_end:]


def compact(value: float) -> str:
    """Short tick labels: 950, 12k, 3.4M, 1.2B."""
    value = float(value)
    for limit, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            scaled = value / limit
            return f"{scaled:.0f}{suffix}" if scaled >= 10 or scaled == int(scaled) else f"{scaled:.1f}{suffix}"
    return f"{value:g}"


def _compact_axis(axis: Any) -> None:
    """Plain short tick labels and no minor ticks (log axes' mathtext labels and minor ticks are
    most of a chart's drawing time)."""
    from matplotlib.ticker import FuncFormatter, NullLocator

    axis.set_major_formatter(FuncFormatter(lambda v, _: compact(v)))
    axis.set_minor_locator(NullLocator())


def _integer_axis(axis: Any) -> None:
    """Ticks on whole numbers only (token counts, rows, items)."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(nbins="auto", integer=True))


def _count_norm(largest: float) -> Any:
    """Colour scale of a count: logarithmic from 1 when counts reach 20, else plain."""
    from matplotlib.colors import LogNorm, Normalize

    return LogNorm(vmin=1, vmax=largest) if largest >= 20 else Normalize(vmin=1, vmax=max(largest, 2))


def _colorbar(fig: Any, image: Any, label: str) -> Any:
    """A colorbar with plain labels (1, 10, 100, 1k), no minor ticks, whole numbers on a plain scale;
    :func:`~tokenmill.report.frame.arrange` places it beside its axes."""
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    bar = fig.colorbar(image, cax=colorbar_axes(fig), format=FuncFormatter(lambda v, _: compact(v)))
    bar.minorticks_off()
    bar.ax.grid(False)
    if not isinstance(image.norm, LogNorm):
        bar.locator = MaxNLocator(integer=True)
        bar.update_ticks()
        label = label.replace(" (log scale)", "")
    bar.set_label(label)
    return bar


def _one_axes(height: float) -> tuple[Any, Any]:
    """A figure of the page's width and ``height`` inches with one plot (inside a chart's :func:`_style`)."""
    fig = _figure_class()(figsize=(_WIDTH, height))
    return fig, fig.add_subplot(1, 1, 1)


def _bars_svg(fig: Any, ax: Any, labels: Sequence[str], xlabel: str, title: str, *, legend: bool = False) -> str:
    """A chart of horizontal bars finished as SVG: one row per label from the top, the axis and chart titles,
    the legend (bottom right) when asked, no horizontal grid lines."""
    ax.set_yticks(np.arange(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    if legend:
        ax.legend(loc="lower right")
    ax.grid(axis="y", visible=False)
    arrange(fig, [ax])
    return _svg(fig)


def _percent_axis(axis: Any, digits: int = 0) -> None:
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{100 * v:.{digits}f}%"))


def _hist_axes(ax: Any, histograms: Sequence[tuple[str, dict[str, Any]]], title: str, xlabel: str, ylabel: str) -> None:
    """Length histograms as outlined steps, on a log count axis (a plain one below 20 items per bin)."""
    top = max([max(h["counts"], default=0) for _, h in histograms] + [1])
    log = top >= 20
    floor = 0.5 if log else 0.0  # where empty bins and the fill's baseline sit
    for i, (label, hist) in enumerate(histograms):
        counts = np.asarray(hist["counts"], dtype=np.float64)
        edges = np.asarray(hist["edges"], dtype=np.float64)
        if not len(counts):
            continue
        color = COLORS[i % len(COLORS)]
        shown = np.where(counts > 0, counts, floor)
        ax.stairs(shown, edges, baseline=floor, fill=True, color=color, alpha=0.18)
        ax.stairs(shown, edges, baseline=floor, color=color, linewidth=1.2, label=label)
    if log:
        ax.set_yscale("log")
        ax.set_ylim(0.8, top * 2.0)
    else:
        ax.set_ylim(0, top * 1.15)
        _integer_axis(ax.yaxis)
        ylabel = ylabel.replace(" (log scale)", "")
    ax.set_xlim(left=0)
    _integer_axis(ax.xaxis)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    _compact_axis(ax.yaxis)
    if len(histograms) > 1:
        ax.legend(loc="upper right")


def lengths_chart(name: str, title: str, sides: Sequence[tuple[str, dict[str, Any]]],
                  joint: dict[str, Any] | None, langs: Sequence[str]) -> str:
    """Length histograms of each side (log counts) and, for pairs, the source-vs-target density."""

    with _style(name):
        Figure = _figure_class()
        if joint is None:
            fig = Figure(figsize=(_WIDTH, 3.0))
            ax = fig.add_subplot(1, 1, 1)
            _hist_axes(ax, sides, f"{title}: item lengths", "tokens per item (</s> included)", "items (log scale)")
            arrange(fig, [ax])
            return _svg(fig)
        fig = Figure(figsize=(_WIDTH, 3.6))
        grid = fig.add_gridspec(1, 2, width_ratios=(1.35, 1.0))
        ax = fig.add_subplot(grid[0, 0])
        _hist_axes(ax, sides, f"{title}: lengths per side", "tokens per sentence (</s> included)",
                   "sentences (log scale)")
        ax2 = fig.add_subplot(grid[0, 1])
        counts = np.asarray(joint["counts"], dtype=np.float64)
        extent_max = joint["bins"] * joint["width"]
        masked = np.ma.masked_less(counts, 1)
        image = ax2.imshow(
            masked, origin="lower", extent=(0, extent_max, 0, extent_max), aspect="auto", cmap="viridis",
            norm=_count_norm(counts.max()), interpolation="nearest",
        )
        ax2.plot([0, extent_max], [0, extent_max], color="#d62728", linewidth=0.8, linestyle="--", label="equal length")
        ax2.grid(False)
        ax2.set_title(f"{title}: {langs[1]} vs {langs[0]} length")
        ax2.set_xlabel(f"{langs[0]} tokens (capped at {joint['limit']})")
        ax2.set_ylabel(f"{langs[1]} tokens")
        ax2.legend(loc="upper left")
        _integer_axis(ax2.xaxis)
        _integer_axis(ax2.yaxis)
        arrange(fig, [ax, ax2], (1.35, 1.0), [None, _colorbar(fig, image, "pairs per cell (log scale)")])
        return _svg(fig)


def stages_chart(groups: Sequence[dict[str, Any]]) -> str:
    """Wall time of each pipeline step (all its stages together)."""
    with _style("stages"):
        fig, ax = _one_axes(0.5 + 0.32 * max(len(groups), 1))
        labels = [f"{g['kind']} ({g['stages']} stage{'s' if g['stages'] != 1 else ''})" for g in groups]
        seconds = [g["seconds"] for g in groups]
        y = np.arange(len(groups))
        ax.barh(y, seconds, color=COLORS[0], height=0.6)
        for yi, s in zip(y, seconds, strict=True):
            ax.annotate(f"{s:.2f} s", (s, yi), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
        ax.set_xlim(0, max(max(seconds, default=0.0), 1e-3) * 1.18)
        return _bars_svg(fig, ax, labels, "wall time (seconds)", "Stage wall times of the last prepare run")


def funnel_chart(name: str, title: str, funnel: dict[str, Any]) -> str:
    """Items dropped by each cleaning step (bars, with the share of items read), read and kept in the title."""
    steps = funnel["steps"]
    with _style(name):
        fig, ax = _one_axes(0.8 + 0.3 * max(len(steps), 1))
        read = max(funnel["read"], 1)
        y = np.arange(len(steps))
        dropped = [s["dropped"] for s in steps]
        ax.barh(y, dropped, color=COLORS[1], height=0.6)
        for yi, n in zip(y, dropped, strict=True):
            ax.annotate(f"{n:,} ({n / read:.2%})", (n, yi), xytext=(3, 0), textcoords="offset points", va="center",
                        fontsize=8)
        ax.set_xlim(0, max(max(dropped, default=0), 1) * 1.3)
        _compact_axis(ax.xaxis)
        _integer_axis(ax.xaxis)
        return _bars_svg(fig, ax, [s["label"] for s in steps], "items dropped",
                         f"{title}: {funnel['read']:,} read → {funnel['kept']:,} kept ({funnel['kept_share']:.2%})")


def drops_by_direction_chart(train: Sequence[tuple[str, dict[str, Any]]], reasons: Sequence[str],
                             labels: dict[str, str], limit: int = 40) -> str:
    """Many directions: the share of each direction's train pairs that every cleaning step dropped."""
    train = list(train)[:limit]
    with _style("cleaning-directions"):
        fig, ax = _one_axes(1.0 + 0.34 * len(train))
        y = np.arange(len(train))
        left = np.zeros(len(train))
        for i, reason in enumerate(reasons):
            shares = np.array([
                next((s["dropped"] for s in info["steps"] if s["reason"] == reason), 0) / max(info["read"], 1)
                for _, info in train
            ])
            if not shares.any():
                continue
            ax.barh(y, shares, left=left, height=0.6, color=COLORS[i % len(COLORS)],
                    label=labels.get(reason, reason))
            left += shares
        for yi, total in zip(y, left, strict=True):
            ax.annotate(f"{total:.2%}", (total, yi), xytext=(3, 0), textcoords="offset points", va="center",
                        fontsize=8)
        ax.set_xlim(0, max(float(left.max()), 1e-4) * 1.25)
        _percent_axis(ax.xaxis, 2)
        return _bars_svg(fig, ax, [name for name, _ in train], "share of the train pairs read",
                         "Train pairs dropped per direction, by cleaning step", legend=True)


def sampling_chart(sampling: Sequence[dict[str, Any]], limit: int = 40) -> str:
    """Each direction's share of an epoch at every temperature, beside its share of the data (T = 1)."""
    names = [d["direction"] for d in sampling[0]["directions"]][:limit]
    with _style("sampling"):
        fig, ax = _one_axes(1.0 + 0.42 * len(names))
        y = np.arange(len(names))
        height = 0.8 / len(sampling)
        for i, entry in enumerate(sampling):
            shares = [d["share"] for d in entry["directions"]][:limit]
            ax.barh(y + (i - (len(sampling) - 1) / 2) * height, shares, height=height * 0.95,
                    color=COLORS[i % len(COLORS)], label=f"T = {entry['temperature']:g}")
        _percent_axis(ax.xaxis)
        return _bars_svg(fig, ax, names, "share of the sampled epoch",
                         "Sampled share per direction at each temperature (T = 1: proportional to size)", legend=True)


def padding_chart(modes: dict[str, Any]) -> str:
    """Padding share of the epoch's batches in every batching mode."""
    items = [(m, v) for m, v in modes.items() if v is not None and "padding_fraction" in v]
    with _style("padding"):
        fig, ax = _one_axes(0.6 + 0.36 * max(len(items), 1))
        y = np.arange(len(items))
        values = [v["padding_fraction"] for _, v in items]
        ax.barh(y, values, color=[COLORS[i % len(COLORS)] for i in range(len(items))], height=0.6)
        for yi, value, (_, v) in zip(y, values, items, strict=True):
            ax.annotate(f"{value:.2%} of {v['padded_tokens']:,} slots, {v['batches']:,} batches", (value, yi),
                        xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
        ax.set_xlim(0, max(max(values, default=0.0), 0.01) * 1.9)
        _percent_axis(ax.xaxis, 1)
        return _bars_svg(fig, ax, [m for m, _ in items], "padding (share of batch slots, both sides)",
                         "Padding per batching mode, epoch 1")


def shapes_chart(shapes: dict[str, Any], mode: str) -> str:
    """How many batches have each shape (rows against the longest row): one dot per distinct shape
    when there are few, else a density of cells."""

    with _style("shapes"):
        fig, ax = _one_axes(3.4)
        if shapes.get("points"):
            points = np.asarray(shapes["points"], dtype=np.float64)
            image = ax.scatter(points[:, 0], points[:, 1], c=points[:, 2], s=18, cmap="viridis",
                               norm=_count_norm(points[:, 2].max()), edgecolors="none")
            ax.set_xlim(0, points[:, 0].max() * 1.05 + 1)
            ax.set_ylim(0, points[:, 1].max() * 1.08 + 1)
        else:
            grid = shapes["grid"]
            counts = np.asarray(grid["counts"], dtype=np.float64)
            ny, nx = counts.shape
            image = ax.imshow(
                np.ma.masked_less(counts, 1), origin="lower", aspect="auto", cmap="viridis", interpolation="nearest",
                extent=(0, nx * grid["x_width"], 0, ny * grid["y_width"]),
                norm=_count_norm(counts.max()),
            )
            ax.grid(False)
        _integer_axis(ax.xaxis)
        _integer_axis(ax.yaxis)
        ax.set_xlabel("longest row of the batch (tokens, either side)")
        ax.set_ylabel("rows per batch")
        ax.set_title(f"Batch shapes, mode {mode}: {shapes['batches']:,} batches, "
                     f"{shapes['distinct']:,} distinct shapes")
        arrange(fig, [ax], bars=[_colorbar(fig, image, "batches (log scale)")])
        return _svg(fig)


def ranks_chart(tokens: Sequence[int]) -> str:
    """Real tokens each rank processes in the epoch."""
    from matplotlib.ticker import MaxNLocator

    with _style("ranks"):
        fig, ax = _one_axes(2.6)
        x = np.arange(len(tokens))
        ax.bar(x, tokens, color=COLORS[0], width=0.7)
        ax.set_xticks(x, [str(i) for i in x] if len(tokens) <= 32 else None)
        if len(tokens) > 32:
            ax.xaxis.set_major_locator(MaxNLocator(16, integer=True))
        low, high = min(tokens), max(tokens)
        ax.set_ylim(0, high * 1.15)
        _compact_axis(ax.yaxis)
        ax.set_xlabel("rank")
        ax.set_ylabel("tokens (source + target)")
        spread = (high - low) / high if high else 0.0
        ax.set_title(f"Tokens per rank, epoch 1 (max - min = {spread:.2%} of max)")
        ax.grid(axis="x", visible=False)
        arrange(fig, [ax])
        return _svg(fig)


def documents_chart(name: str, title: str, histogram: dict[str, Any], seq_length: int) -> str:
    """Document lengths (log counts) with the GPT sample length marked."""
    with _style(name):
        fig, ax = _one_axes(3.0)
        _hist_axes(ax, [("documents", histogram)], f"{title}: document lengths", "tokens per document",
                   "documents (log scale)")
        if histogram["edges"] and seq_length <= histogram["edges"][-1]:
            ax.axvline(seq_length, color="#d62728", linestyle="--", linewidth=0.9, label=f"seq_length {seq_length}")
            ax.legend(loc="upper right")
        arrange(fig, [ax])
        return _svg(fig)


def blend_chart(blend: dict[str, Any]) -> str:
    """Requested weight against the realised share of every dataset of a blend."""
    datasets = blend["datasets"]
    with _style("blend"):
        fig, ax = _one_axes(0.9 + 0.5 * len(datasets))
        y = np.arange(len(datasets))
        ax.barh(y - 0.2, [d["weight"] for d in datasets], height=0.38, color=COLORS[0], label="weight (normalized)")
        ax.barh(y + 0.2, [d["share"] for d in datasets], height=0.38, color=COLORS[1], label="realised share")
        _percent_axis(ax.xaxis)
        return _bars_svg(fig, ax, [d["prefix"].rsplit("/", 1)[-1] for d in datasets],
                         f"share of {blend['samples']:,} samples", "Blend: requested weight vs realised share",
                         legend=True)


__all__ = [
    "blend_chart",
    "compact",
    "documents_chart",
    "drops_by_direction_chart",
    "funnel_chart",
    "lengths_chart",
    "padding_chart",
    "ranks_chart",
    "sampling_chart",
    "shapes_chart",
    "stages_chart",
    "warm_up",
]
