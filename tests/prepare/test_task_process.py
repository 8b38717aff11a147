"""The local engine runs each task in a process of its own (forked from a helper), so the coordinator
keeps none of a task's memory; results, exceptions and deaths come back as if the task ran here."""

from __future__ import annotations

import operator
import os

import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import settings_for
from tokenmill.errors import FormatError, TokenmillError
from tokenmill.prepare import task_process
from tokenmill.prepare.engines import LocalEngine
from tokenmill.prepare.task_process import TaskRunner, function_name, one_helper_per_run
from tokenmill.prepare.tasks import TaskKilled


def test_tasks_run_in_other_processes_and_return_their_results():
    with TaskRunner() as runner:
        pids = [runner.run(os.getpid, ()) for _ in range(3)]
        assert runner.run(operator.add, (2, 3)) == 5
    assert os.getpid() not in pids and len(set(pids)) == 3  # a fresh child for every task


class MisreadFile(FormatError):
    """A tokenmill error the coordinator has no entry for: raised there as its nearest known class."""


def raise_format_error() -> dict:
    raise FormatError("data/train.idx: garbled index")


def raise_unlisted_error() -> dict:
    raise MisreadFile("data/train.idx: misread")


def raise_value_error(settings: dict, stage: str, index: int) -> dict:
    raise ValueError(f"no line {index} in {settings['input']}")


def raise_keyboard_interrupt() -> dict:
    raise KeyboardInterrupt


def return_a_tuple() -> tuple:
    return (1, "two", {"three": 3.0})


def return_a_set() -> set:
    return {1, 2}


def test_a_task_s_tokenmill_error_is_raised_in_the_coordinator_as_itself():
    with TaskRunner() as runner:
        with pytest.raises(FormatError) as raised:
            runner.run(raise_format_error, ())
        assert str(raised.value) == "data/train.idx: garbled index"
        assert any("in task process" in note and "raise_format_error" in note for note in raised.value.__notes__)
        with pytest.raises(FormatError) as raised:
            runner.run(raise_unlisted_error, ())
        assert str(raised.value) == "data/train.idx: misread"
        assert type(raised.value) is FormatError  # the nearest class of the table: nothing is unpickled
        assert runner.run(operator.mul, (6, 7)) == 42  # the helper goes on after a failed task


def test_any_other_exception_becomes_an_error_naming_the_task_and_the_original():
    with TaskRunner() as runner:
        with pytest.raises(TokenmillError) as raised:
            runner.run(raise_value_error, ({"input": "a.txt"}, "clean.train", 3))
        assert type(raised.value) is TokenmillError
        assert str(raised.value) == "task clean.train #3 failed: ValueError: no line 3 in a.txt"
        with pytest.raises(TokenmillError) as raised:
            runner.run(operator.truediv, (1, 0))
        assert str(raised.value) == "task failed: ZeroDivisionError: division by zero"


def test_ctrl_c_in_a_task_stays_a_keyboard_interrupt():
    """Not an error: a run stopped by hand keeps what it finished."""
    with TaskRunner() as runner, pytest.raises(KeyboardInterrupt):
        runner.run(raise_keyboard_interrupt, ())


def test_results_come_back_as_json():
    with TaskRunner() as runner:
        assert runner.run(return_a_tuple, ()) == [1, "two", {"three": 3.0}]  # JSON has lists, not tuples
        with pytest.raises(TokenmillError, match="TypeError: Object of type set is not JSON serializable"):
            runner.run(return_a_set, ())


def test_a_killed_task_stops_the_run_with_an_error_naming_it():
    with TaskRunner() as runner, pytest.raises(TaskKilled, match=r"was killed by signal 6 \(SIGABRT\)"):
        runner.run(os.abort, ())


def test_a_dead_helper_stops_the_run_with_an_error():
    with TaskRunner() as runner:
        runner._process.kill()
        runner._process.wait()
        with pytest.raises(TaskKilled, match="the process running the tasks stopped"):
            runner.run(operator.add, (1, 2))


def test_the_local_engine_reports_each_task_as_it_finishes():
    done = []
    assert LocalEngine().run(operator.add, [(1, 2), (3, 4)], done.append) == [3, 7]  # type: ignore[arg-type]
    assert done == [3, 7]
    assert LocalEngine().run(operator.add, []) == []  # no helper started for nothing


def test_a_task_function_that_cannot_be_imported_is_an_error_not_a_dead_helper(monkeypatch):
    monkeypatch.setattr(task_process, "function_name", lambda function: "tokenmill.nowhere:run")
    with TaskRunner() as runner:
        with pytest.raises(TokenmillError, match=r"cannot run tokenmill\.nowhere:run"):
            runner.run(operator.add, (1, 2))
        monkeypatch.undo()
        assert runner.run(operator.add, (1, 2)) == 3


def test_a_task_function_must_be_importable():
    def local() -> dict:
        return {}

    with pytest.raises(ValueError, match="top level"):
        function_name(local)


def test_the_stages_of_one_run_share_one_helper_and_it_stops_at_the_end():
    """Inside ``one_helper_per_run`` (a prepare run) every engine run forks its tasks from the same helper
    (the tasks' parent), started once; outside, each engine run has a helper of its own."""
    with one_helper_per_run():
        parents = LocalEngine().run(os.getppid, [(), ()]) + LocalEngine().run(os.getppid, [()])
        helper = task_process._RUN.helper
        assert len(set(parents)) == 1 and parents[0] != os.getpid() and not helper.stopped
    assert helper.stopped and task_process._RUN.helper is None
    apart = LocalEngine().run(os.getppid, [()]) + LocalEngine().run(os.getppid, [()])
    assert len(set(apart)) == 2 and parents[0] not in apart


def test_a_stage_that_fails_stops_the_runs_helper_and_the_next_stage_starts_another():
    with one_helper_per_run():
        first = LocalEngine().run(os.getppid, [()])
        with pytest.raises(TaskKilled, match="SIGABRT"):
            LocalEngine().run(os.abort, [()])
        assert task_process._RUN.helper is None  # stopped as a helper of its own would be
        assert LocalEngine().run(os.getppid, [()]) != first


def test_a_tasked_prepare_starts_one_helper(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(task_process, "TaskRunner", lambda: started.append(1) or TaskRunner())
    corpus = write_corpus(tmp_path / "corpus", pairs=200)
    summary = tokenmill.prepare(settings_for(corpus, tmp_path / "bin", tasks=2), progress=False)
    assert len(summary.tasks) >= 3 and started == [1]  # clean, encode and binarize tasks: one helper
