"""ordered_map: a function on threads, results in input order, a bounded number of items taken ahead."""

from __future__ import annotations

import threading
import time

import pytest

from tokenmill._core.ordered import ordered_map, prefetched


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("ahead", [None, 1, 2, 5])
def test_results_come_in_input_order_however_long_each_call_takes(workers, ahead):
    def slow_square(x: int) -> int:
        time.sleep((x * 7919 % 5) / 2000)  # later items often finish first
        return x * x

    assert list(ordered_map(slow_square, range(40), workers, ahead=ahead)) == [x * x for x in range(40)]


def test_calls_run_side_by_side_on_threads():
    both = threading.Barrier(2, timeout=5)  # two calls must be running at once to pass

    def meet(x: int) -> int:
        both.wait()
        return x

    assert list(ordered_map(meet, range(6), 2)) == list(range(6))


def test_no_more_than_ahead_items_are_taken_before_a_result_is_given():
    taken = []

    def items():
        for i in range(20):
            taken.append(i)
            yield i

    for result in ordered_map(lambda x: x, items(), 2, ahead=3):
        assert len(taken) - result <= 3


def test_a_failing_call_raises_in_the_caller_and_later_items_are_not_waited_for():
    started = []

    def call(x: int) -> int:
        started.append(x)
        if x == 3:
            raise ValueError("bad item 3")
        return x

    with pytest.raises(ValueError, match="bad item 3"):
        list(ordered_map(call, range(100), 2))
    assert max(started) < 10


def test_empty_input_gives_nothing():
    assert list(ordered_map(lambda x: x, [], 2)) == []


def test_prefetched_gives_every_item_in_order_and_reads_ahead_on_another_thread():
    threads = set()

    def produce():
        for i in range(30):
            threads.add(threading.get_ident())
            yield i

    seen = []
    for item in prefetched(produce(), ahead=2):
        seen.append(item)
    assert seen == list(range(30))
    assert threads and threading.get_ident() not in threads, "the producer ran on the background thread"


def test_prefetched_raises_the_producers_error_at_the_item_it_failed_on():
    def produce():
        yield 1
        yield 2
        raise ValueError("bad block 3")

    got = []
    with pytest.raises(ValueError, match="bad block 3"):
        for item in prefetched(produce()):
            got.append(item)
    assert got == [1, 2]


def test_prefetched_takes_nothing_more_once_the_caller_stops():
    taken = []

    def produce():
        for i in range(100):
            taken.append(i)
            yield i

    stream = prefetched(produce(), ahead=1)
    assert [next(stream), next(stream)] == [0, 1]
    stream.close()
    time.sleep(0.05)
    assert len(taken) <= 3, taken  # the two given, and at most the one read ahead
    assert list(prefetched([])) == []
