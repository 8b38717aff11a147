"""A function over items on threads, results in input order, with a bounded number in flight.

For calls that let go of the GIL (tokenizers' batch encodes, numpy sorts and gathers): prepare's encode
stage and the block-wise epoch plans both run their independent pieces this way.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


def ordered_map(
    function: Callable[[Item], Result], items: Iterable[Item], workers: int, *, ahead: int | None = None
) -> Iterator[Result]:
    """``function(item)`` for every item on ``workers`` threads, results in input order.

    For calls that let go of the GIL (the tokenizers' batch encodes): while one batch's last long lines
    finish, or its ids are turned into arrays, the next batch keeps the cores busy. At most ``ahead``
    items (default ``workers + 1``) are taken from ``items`` before their result is yielded, so memory
    stays bounded. ``workers <= 1`` runs everything in the calling thread.
    """
    if workers <= 1:
        yield from map(function, items)
        return
    limit = max(workers, ahead if ahead is not None else workers + 1)
    with ThreadPoolExecutor(workers) as pool:
        pending: deque[Future] = deque()
        try:
            for item in items:
                pending.append(pool.submit(function, item))
                if len(pending) >= limit:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:  # the caller stopped early or a call failed: drop what has not started
                future.cancel()


__all__ = ["ordered_map"]
