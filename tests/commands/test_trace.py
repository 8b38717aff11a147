"""``tokenmill trace DIR``: a batch's rows as input file:line and text, and an input line's (epoch, step,
rank, row), on the command line as a user runs it (``python -m tokenmill``: errors as one ``error:`` line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tokenmill
from tests.loader.trace_corpus import write_data_bin
from tokenmill.batching import BatchConfig
from tokenmill.cli import cli
from tokenmill.commands.schedule_flag import parse_schedule
from tokenmill.data import SamplingConfig
from tokenmill.loader import multilingual_batches

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"
PLAN = ["--max-tokens", "300", "--world-size", "2", "--seed", "4"]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    destdir = tmp_path_factory.mktemp("trace") / "bin"
    tokenmill.prepare(source_lang="en", target_lang="zh", trainpref=str(SAMPLE / "train"),
                      validpref=str(SAMPLE / "valid"), tokenizer="none", destdir=str(destdir), progress=False)
    return destdir


def tokenmill_cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tokenmill", "trace", *args], capture_output=True, text=True,
                          check=False, env={"TOKENMILL_CACHE": str(cache), "PATH": "", "PYTHONPATH": ":".join(
                              p for p in sys.path if p)})


def test_step_rows_name_their_line_and_text_and_source_finds_them_there(prepared, tmp_path):
    lines = (SAMPLE / "train.en").read_text(encoding="utf-8").splitlines()
    shown = tokenmill_cli(str(prepared), "--epoch", "2", "--step", "1", "--rank", "1", *PLAN, cache=tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = [line.split("\t") for line in shown.stdout.splitlines()]
    assert rows and all(len(row) == 4 for row in rows)
    for row, (number, where, source, _target) in enumerate(rows):
        file, line = where.rsplit(":", 1)
        assert int(number) == row and file.endswith("train.en") and lines[int(line) - 1] == source
    file_line = rows[-1][1]
    found = tokenmill_cli(str(prepared), "--source", file_line, "--epochs", "3", "--json", *PLAN, cache=tmp_path)
    assert found.returncode == 0, found.stderr
    served = [json.loads(line) for line in found.stdout.splitlines()]
    assert [s["epoch"] for s in served] == [1, 2, 3], "each epoch serves a kept line once"
    assert {"epoch": 2, "step": 1, "rank": 1, "row": len(rows) - 1} == {k: served[1][k] for k in
                                                                     ("epoch", "step", "rank", "row")}


def test_bad_requests_are_one_error_line(prepared, tmp_path):
    cases = {
        ("--step", "0", "--source", "train.en:1"): "give --step S",
        ("--source", "train.en:0"): "FILE:LINE",
        ("--source", "nowhere.en:3"): "no store of this dataset was made from a file named nowhere.en",
        ("--step", "100000"): "--step 100000: epoch 1 has",
        ("--source", f"train.en:{10**6}"): "train.en has 345 lines",
    }
    for args, message in cases.items():
        done = tokenmill_cli(str(prepared), *args, cache=tmp_path)
        assert done.returncode != 0 and "Traceback" not in done.stderr, (args, done.stderr)
        assert done.stderr.startswith("error:") and message in done.stderr, (args, done.stderr)


def test_packed_rows_name_each_pair_with_its_position_and_source_finds_it_there(prepared, tmp_path):
    lines = (SAMPLE / "train.en").read_text(encoding="utf-8").splitlines()
    packed = [*PLAN, "--pack-length", "64"]
    shown = tokenmill_cli(str(prepared), "--epoch", "1", "--step", "2", "--rank", "0", *packed, cache=tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = [line.split("\t") for line in shown.stdout.splitlines()]
    assert rows and all(len(row) == 5 for row in rows)
    places = [(int(row), int(position)) for row, position, *_ in rows]
    assert places == sorted(places) and len({row for row, _ in places}) < len(places), "several pairs a row"
    for _row, _position, where, source, _target in rows:
        assert lines[int(where.rsplit(":", 1)[1]) - 1] == source
    row, position, where, *_ = rows[-1]
    found = tokenmill_cli(str(prepared), "--source", where, *packed, cache=tmp_path)
    assert found.returncode == 0, found.stderr
    assert f"epoch 1\tstep 2\trank 0\trow {row}\tposition {position}" in found.stdout.splitlines()
    as_json = tokenmill_cli(str(prepared), "--source", where, "--json", *packed, cache=tmp_path)
    assert {"epoch": 1, "step": 2, "rank": 0, "row": int(row), "position": int(position)} in [
        {k: v for k, v in json.loads(line).items() if k != "sample"} for line in as_json.stdout.splitlines()]


@pytest.fixture(scope="module")
def two_directions(tmp_path_factory) -> Path:
    return write_data_bin(tmp_path_factory.mktemp("raw"))


DEU, RUS = "eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl"
SCHEDULE = f"0:{DEU}=1,{RUS}=0;4:{DEU}=1,{RUS}=6"
SCHEDULED = ["--max-tokens", "120", "--world-size", "2", "--weights-schedule", SCHEDULE, "--schedule-every", "2"]


def in_process(*args: str) -> list[dict]:
    """``tokenmill trace ARGS --json`` run in this process (many calls: no interpreter start each), its rows."""
    result = CliRunner().invoke(cli, ["trace", *args, "--json"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return [json.loads(line) for line in result.output.splitlines()]


def test_a_trace_under_a_weights_schedule_is_what_the_scheduled_iterator_serves(two_directions):
    sampling = SamplingConfig(weights_schedule=parse_schedule(SCHEDULE), schedule_every=2, seed=1)
    ranks = [multilingual_batches(str(two_directions), BatchConfig(max_tokens=120, seed=1), sampling, rank=r,
                                  world_size=2, collate=None) for r in range(2)]
    assert len(ranks[0].plan(1).parts) > 2, "the mix is re-drawn within the epoch"
    russian, traced_back = 0, False
    for epoch in (1, 2):
        for step, batches in enumerate(zip(*ranks, strict=True)):
            for rank, served in enumerate(batches):
                if epoch == 2 and step > 3:
                    continue
                rows = in_process(str(two_directions), "--epoch", str(epoch), "--step", str(step), "--rank",
                                  str(rank), "--no-text", *SCHEDULED)
                assert [r["sample"] for r in rows] == np.asarray(served).tolist(), (epoch, step, rank)
                russian += sum(r["direction"] == RUS for r in rows)
                if epoch == 1 and step == 6 and rank == 1:
                    where = f"{rows[-1]['file']}:{rows[-1]['line']}"
                    found = in_process(str(two_directions), "--source", where, *SCHEDULED)
                    assert {"epoch": 1, "step": 6, "rank": 1, "row": len(rows) - 1} in [
                        {k: v for k, v in x.items() if k in ("epoch", "step", "rank", "row")} for x in found]
                    traced_back = True
    assert traced_back, "--source found the line of a step after the mix changed"
    assert russian > 0, "the direction the schedule switches on is served"
