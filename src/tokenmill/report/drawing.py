"""The page's charts drawn after its text, half of them in a forked child.

While :func:`tokenmill.report.page.render` builds the page, each chart is only noted
(:func:`later` returns a placeholder); :func:`drawn` then draws them all: with a second core,
a forked child (:mod:`~tokenmill.report.forked`) draws about half of the drawing work while this
process draws the rest, both with matplotlib already imported and warmed up. Every chart is a pure
function of its numbers (with a fixed SVG hash salt), so the page's bytes do not depend on which
process drew what, nor on which were drawn early (:func:`draw_while`, while a forked child of
``gather`` still computes the batching numbers) and which with the rest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from tokenmill.report import plots
from tokenmill.report.forked import Forked, _plain, can_fork

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


def key(call: Call) -> str:
    """What a chart is drawn from (its function and numbers): equal keys draw equal SVG."""
    return f"{call[0].__name__}:{json.dumps(call[1], default=_plain, sort_keys=True, ensure_ascii=False)}"


def draw_while(calls: list[Call], busy: Callable[[], bool]) -> dict[str, str]:
    """Draw ``calls``, heaviest first, while ``busy()`` (checked before each) holds; their SVG by
    :func:`key`, for :func:`draw_all` to reuse."""
    drawn: dict[str, str] = {}
    order = sorted(range(len(calls)), key=lambda i: -_WEIGHTS.get(calls[i][0].__name__, 1))
    for i in order:
        if not busy():
            break
        plots.warm_up()
        drawn[key(calls[i])] = calls[i][0](*calls[i][1])
    return drawn


def draw_all(calls: list[Call], parallel: bool = True, drawn: dict[str, str] | None = None) -> list[str]:
    """The SVG of every noted chart, in order: those in ``drawn`` (by :func:`key`, see
    :func:`draw_while`) as they are, the others drawn now (a forked child draws a share where it can)."""
    if not calls:
        return []
    svgs: dict[int, str] = {}
    if drawn:
        svgs = {i: drawn[k] for i, k in enumerate(map(key, calls)) if k in drawn}
    todo = [i for i in range(len(calls)) if i not in svgs]
    if not todo:
        return [svgs[i] for i in range(len(calls))]
    plots.warm_up()
    rest = [calls[i] for i in todo]
    mine, theirs = split(rest) if parallel and len(rest) > 1 and can_fork() else (list(range(len(rest))), [])
    child = Forked(lambda: [rest[i][0](*rest[i][1]) for i in theirs], parallel=bool(theirs))
    try:
        svgs.update((todo[i], rest[i][0](*rest[i][1])) for i in mine)
    except BaseException:
        child.cancel()
        raise
    svgs.update(zip((todo[i] for i in theirs), child.result() if theirs else [], strict=True))
    return [svgs[i] for i in range(len(calls))]


def fill(text: str, svgs: list[str]) -> str:
    """``text`` with every chart placeholder replaced by its SVG."""
    return _PLACE.sub(lambda m: svgs[int(m.group(1))], text)


__all__ = ["collecting", "draw_all", "draw_while", "fill", "key", "later", "split"]
