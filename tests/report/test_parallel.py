"""The report's work split over a forked child gives the numbers and the page bytes of one process."""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from tokenmill.report import ReportOptions, drawing, gather, gather_for_page, plots, render_html, to_json
from tokenmill.report.forked import Forked, can_fork
from tokenmill.report.page import early_charts

gather_module = importlib.import_module("tokenmill.report.gather")
forked_module = importlib.import_module("tokenmill.report.forked")  # the package's name is the function
page_module = importlib.import_module("tokenmill.report.page")
report_package = importlib.import_module("tokenmill.report")  # gather_for_page calls its early_charts


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forks allowed in this test process: the suite imports Ray (collecting its tests) and may have run
    ``tokenizers``, which keep a real run from forking; the children here use neither."""
    monkeypatch.setattr(forked_module, "_FORK_SHY", ())
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", os.environ.get("TOKENIZERS_PARALLELISM", "false"))
    if not can_fork():
        pytest.skip("no fork or a single CPU: everything runs in one process")

OPTIONS = {
    "pairs_dir": ReportOptions(max_tokens=256, world_size=2),
    "sharded_dir": ReportOptions(max_tokens=256),
    "multi_dir": ReportOptions(max_tokens=256),
    "lm_dir": ReportOptions(seq_length=64, blend=((1.0, "train"), (2.0, "train"))),
}


def _without_clocks(report: dict) -> dict:
    """The numbers with every wall time taken out (they differ between any two runs)."""
    numbers = json.loads(to_json(report))
    numbers.pop("timings")
    numbers.pop("seconds")
    if numbers["overview"]["verify"]:
        numbers["overview"]["verify"].pop("seconds")
    batching = numbers.get("batching") or {}
    for mode in [*(batching.get("modes") or {}).values(), batching.get("packed")]:
        if mode:
            mode.pop("plan_seconds", None)
    return numbers


@pytest.mark.parametrize("kind", list(OPTIONS))
def test_forked_gather_and_page_equal_one_process(kind: str, request: pytest.FixtureRequest, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch, forking: None) -> None:
    directory = request.getfixturevalue(kind)
    options = OPTIONS[kind]
    pids = tmp_path / "pids"
    real = gather_module._background

    def noting(*args):
        with open(pids, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
        return real(*args)

    monkeypatch.setattr(gather_module, "_background", noting)
    forked = gather(directory, options, parallel=True, meanwhile=plots.warm_up)
    assert pids.read_text().split() != [str(os.getpid())]  # the child computed its sections
    pids.unlink()
    alone = gather(directory, options, parallel=False)
    assert pids.read_text().split() == [str(os.getpid())]
    assert _without_clocks(forked) == _without_clocks(alone)
    assert {"meanwhile", "wait"} <= set(forked["timings"])
    fixed = json.loads(to_json(forked))
    page = render_html(fixed, options, parallel=True)
    assert page == render_html(fixed, options, parallel=False)
    assert "<!--chart" not in page and page.count("<svg") == page.count('<figure class="chart"') > 0


@pytest.mark.parametrize("kind", list(OPTIONS))
def test_charts_drawn_early_are_the_pages_charts(kind: str, request: pytest.FixtureRequest) -> None:
    options = OPTIONS[kind]
    report = gather(request.getfixturevalue(kind), options, parallel=False)
    assert early_charts(report, options.max_plotted_parts, lambda: False) == {}
    drawn = early_charts(report, options.max_plotted_parts, lambda: True)
    assert bool(drawn) == (kind != "lm_dir")  # LM data: its data section waits for the LM numbers
    page = render_html(report, options, parallel=False)
    assert render_html(report, options, drawn=drawn) == page
    assert all(svg in page for svg in drawn.values())
    marked = {k: f'<svg id="early-{i}"></svg>' for i, k in enumerate(drawn)}  # reused, not drawn again
    again = render_html(report, options, parallel=False, drawn=marked)
    assert all(svg in again for svg in marked.values())
    assert again.count("<svg") == page.count("<svg")


def test_charts_are_drawn_while_the_child_computes_batching(pairs_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                              forking: None, tmp_path: Path) -> None:
    """The child computes until the parent's early step is over (a file the step leaves, not a clock: the
    parent may be slow on a loaded machine), so every early chart is drawn while it is busy."""
    options = OPTIONS["pairs_dir"]
    real, real_early = gather_module._background, page_module.early_charts
    done, seen = tmp_path / "early-done", tmp_path / "child-saw-early-done"

    def slow(*args):
        deadline = time.monotonic() + 120  # bounded: a page that never runs the early step fails, not hangs
        while not done.exists() and time.monotonic() < deadline:  # in the forked child
            time.sleep(0.05)
        seen.write_text(str(done.exists()))
        return real(*args)

    def early(*args):
        try:
            return real_early(*args)
        finally:
            done.touch()

    monkeypatch.setattr(gather_module, "_background", slow)
    monkeypatch.setattr(report_package, "early_charts", early)
    numbers, drawn = gather_for_page(pairs_dir, options)
    assert seen.read_text() == "True", "the child finished before the page's early step was over"
    assert drawn and "early" in numbers["timings"]
    page = render_html(numbers, options, drawn=drawn)
    assert page == render_html(numbers, options, parallel=False)
    assert "<!--chart" not in page and page.count("<svg") == page.count('<figure class="chart"')


def test_charts_split_by_weight() -> None:
    calls = [(plots.stages_chart, ()), (plots.lengths_chart, ()), (plots.lengths_chart, ()), (plots.funnel_chart, ()),
             (plots.padding_chart, ()), (plots.shapes_chart, ())]
    mine, theirs = drawing.split(calls)
    assert sorted(mine + theirs) == list(range(len(calls)))
    weight = {i: drawing._WEIGHTS.get(f.__name__, 1) for i, (f, _) in enumerate(calls)}
    assert abs(sum(weight[i] for i in mine) - sum(weight[i] for i in theirs)) <= 1
    assert (1 in mine) != (2 in mine)  # the two heaviest on different sides


def test_text_that_spells_a_placeholder_stays_text(pairs_dir: Path) -> None:
    report = json.loads(to_json(gather(pairs_dir, OPTIONS["pairs_dir"], parallel=False)))
    report["overview"]["warnings"] = ["<!--chart 0-->"]
    page = render_html(report, OPTIONS["pairs_dir"])
    assert "&lt;!--chart 0--&gt;" in page and "<!--chart" not in page
    assert page.count("<svg") == page.count('<figure class="chart"')


def test_a_child_runs_apart_and_its_json_comes_back(forking: None) -> None:
    child = Forked(lambda: {"pid": os.getpid(), "values": [1, 2.5, "x"]})
    assert child.forked
    result = child.result()
    assert result["pid"] != os.getpid() and result["values"] == [1, 2.5, "x"]
    assert not Forked(lambda: os.getpid(), parallel=False).forked
    assert Forked(lambda: os.getpid(), parallel=False).result() == os.getpid()


def test_a_failing_child_is_computed_again_here_and_raises_here(tmp_path: Path, forking: None) -> None:
    calls = tmp_path / "calls"

    def build() -> int:
        with open(calls, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
        raise ValueError("bad data")

    child = Forked(build)
    with pytest.raises(ValueError, match="bad data"):
        child.result()
    pids = calls.read_text().split()
    assert len(pids) == 2 and pids[1] == str(os.getpid()) and pids[0] != pids[1]
    late = Forked(lambda: 1)
    late.cancel()  # a child no longer wanted is stopped and reaped
    assert not late.forked


def test_no_fork_where_a_loaded_library_minds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked_module.sys, "platform", "linux")
    monkeypatch.setattr(forked_module.os, "sched_getaffinity", lambda _: {0, 1}, raising=False)
    for name in ("tokenizers", "ray", "grpc"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    assert can_fork()
    monkeypatch.setitem(sys.modules, "tokenizers", types.ModuleType("tokenizers"))
    assert not can_fork()  # its threads may have run: a fork would print its warning
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    assert can_fork()
    monkeypatch.setitem(sys.modules, "grpc", types.ModuleType("grpc"))
    assert not can_fork()
    monkeypatch.setattr(forked_module.os, "sched_getaffinity", lambda _: {0}, raising=False)
    monkeypatch.delitem(sys.modules, "grpc")
    assert not can_fork()  # one CPU: nothing to gain


def test_a_child_stuck_on_a_lock_held_at_the_fork_is_killed_and_computed_here(
        monkeypatch: pytest.MonkeyPatch, forking: None) -> None:
    """A lock another thread held when the child forked stays held in the child forever (only the
    forking thread is copied): the parent must not wait for that child forever."""
    monkeypatch.setattr(forked_module, "STALL_SECONDS", 0.5)
    lock, taken, release = threading.Lock(), threading.Event(), threading.Event()

    def holder() -> None:
        with lock:
            taken.set()
            release.wait()

    thread = threading.Thread(target=holder)
    thread.start()
    taken.wait()

    def build() -> int:
        with lock:
            return os.getpid()

    child = Forked(build)
    release.set()
    thread.join()
    assert child.forked
    pid = child._pid
    assert pid is not None

    def waited_too_long(*_: object) -> None:
        os.kill(pid, signal.SIGKILL)  # the parent may be in waitpid: let it return, then fail
        pytest.fail("the parent waited for a stuck child")

    previous = signal.signal(signal.SIGALRM, waited_too_long)
    signal.alarm(60)
    try:
        assert child.result() == os.getpid()  # computed here once the child was found stuck
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert not child.forked


def test_a_slow_child_that_works_is_waited_for(monkeypatch: pytest.MonkeyPatch, forking: None) -> None:
    monkeypatch.setattr(forked_module, "STALL_SECONDS", 0.5)

    def build() -> int:
        end = time.process_time() + 2.0  # busy well past the stall limit: it uses CPU all along
        while time.process_time() < end:
            pass
        return os.getpid()

    child = Forked(build)
    assert child.result() != os.getpid()
