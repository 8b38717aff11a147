"""The page's charts drawn after its text, half of them in a forked child.

While :func:`tokenmill.report.page.render` builds the page, each chart is only noted
(:func:`later` returns a placeholder); :func:`drawn` then draws them all: with a second core,
a forked child (:mod:`~tokenmill.report.forked`) draws about half of the drawing work while this
process draws the rest, both with matplotlib already imported and warmed up. Every chart is a pure
function of its numbers (with a fixed SVG hash salt), so the page's bytes do not depend on which
process drew what.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from tokenmill.report import plots
from tokenmill.report.forked import Forked, can_fork

Call = tuple[Callable[..., str], tuple[Any, ...]]

_PENDING: ContextVar[list[Call]] = ContextVar("tokenmill_report_charts")
_PLACE = re.compile(r"<!--chart (\d+)-->")
_WEIGHTS = {"lengths_chart": 3, "shapes_chart": 2, "documents_chart": 2}
"""Relative drawing time of the heavier charts (the others count 1), to split the work evenly."""


@contextmanager
def collecting() -> Iterator[list[Call]]:
    """Within it, :func:`later` notes charts in the list it yields."""
    pending: list[Call] = []
    token = _PENDING.set(pending)
    try:
        yield pending
    finally:
        _PENDING.reset(token)


def later(draw: Callable[..., str], *args: Any) -> str:
    """Note the chart ``draw(*args)`` and return its place in the page (an HTML comment: escaped
    text can never spell one)."""
    pending = _PENDING.get()
    pending.append((draw, args))
    return f"<!--chart {len(pending) - 1}-->"


def split(calls: list[Call]) -> tuple[list[int], list[int]]:
    """Indices of the charts this process draws and of those the child draws: heaviest first, each
    to the side with less work so far."""
    loads, shares = [0, 0], ([], [])  # type: tuple[list[int], list[int]]
    order = sorted(range(len(calls)), key=lambda i: -_WEIGHTS.get(calls[i][0].__name__, 1))
    for i in order:
        side = 0 if loads[0] <= loads[1] else 1
        shares[side].append(i)
        loads[side] += _WEIGHTS.get(calls[i][0].__name__, 1)
    return sorted(shares[0]), sorted(shares[1])


def draw_all(calls: list[Call], parallel: bool = True) -> list[str]:
    """The SVG of every noted chart, in order (a forked child draws a share where it can)."""
    if not calls:
        return []
    plots.warm_up()
    mine, theirs = split(calls) if parallel and len(calls) > 1 and can_fork() else (list(range(len(calls))), [])
    child = Forked(lambda: [calls[i][0](*calls[i][1]) for i in theirs], parallel=bool(theirs))
    try:
        svgs = {i: calls[i][0](*calls[i][1]) for i in mine}
    except BaseException:
        child.cancel()
        raise
    svgs.update(zip(theirs, child.result() if theirs else [], strict=True))
    return [svgs[i] for i in range(len(calls))]


def fill(text: str, svgs: list[str]) -> str:
    """``text`` with every chart placeholder replaced by its SVG."""
    return _PLACE.sub(lambda m: svgs[int(m.group(1))], text)


__all__ = ["collecting", "draw_all", "fill", "later", "split"]
