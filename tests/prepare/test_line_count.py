"""The counting pass cut into byte ranges, and the index a clean task makes as it writes its part, give the
one-pass scan's line index."""

from __future__ import annotations

import gzip
import json
import random

import numpy as np
import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import assert_same_output, settings_for
from tokenmill.errors import TokenmillError
from tokenmill.prepare import line_count
from tokenmill.prepare.clean_parts import index_path, text_path
from tokenmill.prepare.engines.local import LOCAL
from tokenmill.prepare.line_count import (
    byte_ranges,
    check_pairs,
    count_range,
    file_indexes,
    newlines_before,
    range_offsets,
)
from tokenmill.prepare.part_merge import LineIndexer
from tokenmill.prepare.run.runner import PhaseDone
from tokenmill.prepare.stages import count
from tokenmill.text.readers import scan_lines


def by_tasks(paths: list[str], pieces: int, every: int) -> list[dict]:
    """Both rounds, task by task, as the engines run them."""
    ranges = byte_ranges(paths, pieces)
    counted = [count_range(paths[r["file"]], r["start"], r["stop"], every) for r in ranges]
    before = newlines_before(ranges, counted)
    offsets = [[] if r["stop"] is None else range_offsets(paths[r["file"]], r["start"], r["stop"], b, every)
               for r, b in zip(ranges, before, strict=True)]
    return file_indexes(paths, ranges, counted, offsets, every)


def one_pass(path: str, every: int) -> dict:
    index = scan_lines(path, every)
    return {"path": path, "n_lines": index.n_lines, "size": index.size, "every": every,
            "offsets": index.offsets.tolist(), "compression": index.compression}


@pytest.fixture
def files(tmp_path):
    rng = random.Random(4)
    texts = {
        "plain.txt": "".join("x" * rng.randint(0, 30) + "\n" for _ in range(500)),
        "no-final-newline.txt": "".join("y" * rng.randint(0, 9) + "\n" for _ in range(300)) + "tail",
        "empty.txt": "",
        "one-newline.txt": "\n",
        "blank-lines.txt": "\n" * 77,
    }
    paths = []
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    with gzip.open(tmp_path / "packed.txt.gz", "wt") as handle:
        handle.write(texts["plain.txt"] * 3)
    paths.append(str(tmp_path / "packed.txt.gz"))
    return paths


@pytest.mark.parametrize("pieces", [1, 2, 7, 50, 4000])
@pytest.mark.parametrize("every", [1, 3, 64])
def test_byte_ranges_give_the_one_pass_index(files, monkeypatch, pieces, every):
    monkeypatch.setattr(line_count, "MIN_RANGE_BYTES", 1)  # ranges of a few bytes: cuts mid-line
    ranges = byte_ranges(files, pieces)
    assert len(ranges) >= min(pieces, 6)
    assert by_tasks(files, pieces, every) == [one_pass(path, every) for path in files]


def test_sides_that_do_not_align_are_refused(tmp_path):
    (tmp_path / "a.en").write_text("1\n2\n3\n")
    (tmp_path / "a.zh").write_text("1\n2\n")
    states = by_tasks([str(tmp_path / "a.en"), str(tmp_path / "a.zh")], 2, 64)
    with pytest.raises(TokenmillError, match=r"line counts differ: .*a\.en has 3 lines but .*a\.zh has 2"):
        check_pairs(states)


def test_a_run_counted_by_tasks_gives_the_same_bytes(tmp_path, monkeypatch):
    """The counting rounds and the dedup partition tasks on the local engine (the Ray engine's path; one side
    gzipped): the plan and the duplicates, and so the output, are the one-process run's; the rounds' folders
    go once the plan is written."""
    corpus = write_corpus(tmp_path / "corpus", pairs=900)
    data = (corpus / "train.zh").read_bytes()
    with gzip.open(corpus / "train.zh.gz", "wb") as handle:
        handle.write(data)
    (corpus / "train.zh").unlink()
    tokenmill.prepare(settings_for(corpus, tmp_path / "plain"), progress=False)
    monkeypatch.setattr(LOCAL, "counts_in_tasks", True)
    monkeypatch.setattr(line_count, "MIN_RANGE_BYTES", 4096)  # several ranges of the plain side
    summary = tokenmill.prepare(settings_for(corpus, tmp_path / "tasks", tasks=3), progress=False)
    assert len(summary.tasks["count.train"]) == len(summary.tasks["index.train"]) > 3
    assert sum(row["lines"] for row in summary.tasks["count.train"]) == 2 * 900
    assert len(summary.tasks["dedup.train"]) == 1  # 900 pairs: one hash partition
    assert summary.splits["train"]["clean"]["dedup"]["duplicates"] > 100
    assert not (tmp_path / "tasks" / ".work" / "tasks" / "count.train").exists()
    assert_same_output(tmp_path / "plain", tmp_path / "tasks")


@pytest.mark.parametrize("every", [1, 5, 64])
def test_the_index_made_while_writing_is_the_scans(tmp_path, every):
    """Blocks of whole lines given to the indexer as they are written (what a clean task does): the index is
    the one a scan of the written file makes."""
    rng = np.random.default_rng(2)
    index = LineIndexer(every)
    path = tmp_path / "part.txt"
    with open(path, "wb") as out:
        for lines in [300, 0, 1, 250, 7]:
            block = b"".join(b"w" * int(rng.integers(0, 20)) + b"\n" for _ in range(lines))
            out.write(block)
            index.add_block(block)
    assert index.state(path) == one_pass(str(path), every)


def test_each_clean_part_keeps_the_index_of_its_text(tmp_path):
    """The clean tasks index their parts as they write them; the encode tasks take those indexes (no counting
    pass), and the joined cleaned file is never written."""
    corpus = write_corpus(tmp_path / "corpus", pairs=600)
    tokenmill.prepare(settings_for(corpus, tmp_path / "bin", tasks=2), progress=False)
    parts = tmp_path / "bin" / ".work" / "tasks" / "clean.train"
    for folder in (parts / "00000", parts / "00001"):
        for lang in ("en", "zh"):
            saved = json.loads(index_path(folder, lang).read_text())
            assert saved == one_pass(str(text_path(folder, lang)), saved["every"])
    assert not (tmp_path / "bin" / ".work" / "clean" / "train.en").exists()


def test_a_run_stopped_between_the_rounds_resumes_with_another_task_count(tmp_path, monkeypatch):
    """The first round's records are joined with the ranges of its plan, not with ranges cut again for the
    resumed run's task count (which gave an IndexError)."""
    corpus = write_corpus(tmp_path / "corpus", pairs=900)
    tokenmill.prepare(settings_for(corpus, tmp_path / "plain"), progress=False)
    monkeypatch.setattr(LOCAL, "counts_in_tasks", True)
    monkeypatch.setattr(line_count, "MIN_RANGE_BYTES", 4096)
    run = count.run_tasks

    def stop_before_round_two(ctx, tasks, *args, **kwargs):
        if tasks.stage == "index.train":  # stopped as a killed run is: what the first round did stays
            raise PhaseDone("stopped")
        return run(ctx, tasks, *args, **kwargs)

    monkeypatch.setattr(count, "run_tasks", stop_before_round_two)
    tokenmill.prepare(settings_for(corpus, tmp_path / "tasks", tasks=3), progress=False)
    assert (tmp_path / "tasks" / ".work" / "tasks" / "count.train").exists()
    monkeypatch.setattr(count, "run_tasks", run)
    tokenmill.prepare(settings_for(corpus, tmp_path / "tasks", tasks=5), progress=False)
    assert_same_output(tmp_path / "plain", tmp_path / "tasks")
