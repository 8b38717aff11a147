"""A/B timing of source trees: fresh processes with ``PYTHONPATH`` set to each tree, alternating in every round
(the order flips between rounds) so that the machine's load falls on all trees alike; medians over rounds."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Mapping


def load() -> str:
    """The machine's 1-minute load average, as quoted next to figures."""
    return f"{os.getloadavg()[0]:.1f}"


def alternate(
    trees: Mapping[str, str], rounds: int, run: Callable[[str, str, int], dict], show: Callable[[dict], str]
) -> tuple[dict[str, list[dict]], list[str]]:
    """``run(name, src, round)`` for every tree in every round, the order flipping between rounds; prints
    ``show(result)`` per run. Returns each tree's results and the load at each round's start."""
    rows: dict[str, list[dict]] = {name: [] for name in trees}
    loads = []
    for r in range(rounds):
        loads.append(load())
        for name in list(trees) if r % 2 == 0 else list(trees)[::-1]:
            result = run(name, trees[name], r)
            rows[name].append(result)
            print(f"round {r + 1} {name}: {show(result)}, load {load()}", flush=True)
    return rows, loads


def medians(results: list[dict], keys: tuple[str, ...]) -> dict[str, float]:
    """The median of each of ``keys`` over ``results``."""
    return {key: statistics.median(x[key] for x in results) for key in keys}
