"""An engine is a registered part: one added from this module (no edit to tokenmill) runs a whole prepare,
and its output is the local engine's, byte for byte."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import output_files, settings_for
from tokenmill.errors import ConfigError
from tokenmill.prepare import build_config
from tokenmill.prepare.engines import EnginePart, engine_part, register_engine
from tokenmill.prepare.engines import base as engines_base

RAN: list[tuple[str, int]] = []
"""(stage, task index) of every task the toy engine ran, in the order it ran them."""


class BackwardsEngine:
    """Runs the tasks in this process, last task first (the output must not depend on the order)."""

    name = "backwards"

    def run(self, function: Any, calls: Sequence[tuple[Any, ...]], on_done: Any = None) -> list[dict[str, Any]]:
        results: dict[int, dict[str, Any]] = {}
        for position in reversed(range(len(calls))):
            settings, stage, index, workers = calls[position]
            RAN.append((stage, index))
            results[position] = function(settings, stage, index, workers)
            if on_done is not None:
                on_done(results[position])
        return [results[position] for position in range(len(calls))]


@pytest.fixture(autouse=True, scope="module")
def registered() -> Iterator[None]:
    """The toy engine, registered for this module's tests only (other tests see the built-in engines)."""
    register_engine(EnginePart("backwards", lambda config: BackwardsEngine(), describe="in-process, last task first"))
    yield
    del engines_base._ENGINES["backwards"]  # no public way to retire an engine: tests only


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus"), pairs=900)


def test_a_registered_engine_runs_prepare_with_the_local_engines_bytes(corpus, tmp_path):
    RAN.clear()
    local = tokenmill.prepare(settings_for(corpus, tmp_path / "local", tasks=2), progress=False)
    toy = tokenmill.prepare(settings_for(corpus, tmp_path / "toy", tasks=2, engine="backwards"), progress=False)
    assert ("clean.train", 1) in RAN and ("encode.train.en", 0) in RAN and ("binarize.train.zh", 1) in RAN
    assert RAN.index(("clean.train", 1)) < RAN.index(("clean.train", 0)), "the toy engine ran them backwards"
    assert sorted(toy.tasks) == sorted(local.tasks)
    assert toy.splits == local.splits
    local_files, toy_files = output_files(tmp_path / "local"), output_files(tmp_path / "toy")
    assert sorted(toy_files) == sorted(local_files)
    assert [name for name in local_files if local_files[name] != toy_files[name]] == []


def test_an_unknown_engine_is_one_clear_error_naming_the_engines(corpus, tmp_path):
    with pytest.raises(ConfigError, match=r"--engine backward: no such engine.*backwards.*local.*ray.*slurm"):
        build_config(settings_for(corpus, tmp_path / "x", engine="backward"))


def test_the_core_asks_the_engine_part_what_it_is():
    assert not engine_part("local").is_cluster and engine_part("ray").is_cluster and engine_part("slurm").is_cluster
    assert engine_part("ray").counts_in_tasks and not engine_part("slurm").counts_in_tasks
    assert engine_part("slurm").scheduled and not engine_part("local").scheduled
    assert engine_part("ray").options == ("ray_address",)
