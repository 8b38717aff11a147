"""A function over items on threads, results in input order, with a bounded number in flight; and an
iterator read ahead on a thread.

For calls that let go of the GIL (tokenizers' batch encodes, numpy sorts and gathers, file reads and
writes): prepare's encode stage and the block-wise epoch plans run their independent pieces this way,
and binarize reads and maps the next block of ids while the current one is written.
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


def prefetched(items: Iterable[Item], ahead: int = 1) -> Iterator[Item]:
    """The items of ``items`` in order, the next ``ahead`` of them made on one background thread while the
    caller works on the current one.

    For a producer and a consumer that both let go of the GIL (reading and mapping blocks of ids, then
    writing them). One thread advances the iterator, one ``next`` at a time, so a generator is never
    entered twice; its exception reaches the caller at the item it failed on. When the caller stops early,
    nothing more is taken from ``items`` once the ``next`` already running returns.
    """
    iterator = iter(items)
    with ThreadPoolExecutor(1) as pool:
        pending: deque[Future] = deque(pool.submit(next, iterator, _END) for _ in range(max(1, ahead)))
        try:
            while True:
                item = pending.popleft().result()
                if item is _END:
                    return
                pending.append(pool.submit(next, iterator, _END))
                yield item
        finally:
            for future in pending:
                future.cancel()


_END: object = object()


__all__ = ["ordered_map", "prefetched"]
