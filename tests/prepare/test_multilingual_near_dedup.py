"""--near-dedup in a many-direction run: each direction's training pairs are compared among themselves (a
direction is cleaned as tasks of its own, in ``.work/tasks/{direction}/``), planted near-duplicate pairs in
held-out text are dropped and counted per direction, and the output is byte-identical for any task count."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.prepare.test_tasks import assert_same_output, run_cli, run_script_as_slurm, write_config
from tests.text.near_dup_text import docstrings, near_copy
from tokenmill.prepare import build_config, prepare
from tokenmill.prepare.tasks import task_status

DIRECTIONS = ("eng_Latn-deu_Latn", "eng_Latn-fra_Latn")


def write_direction(raw: Path, name: str, texts: list[str], seed: int) -> set[int]:
    """A direction whose target side is its source reversed word by word (a stand-in translation), with
    near-copies of earlier pairs planted (a few characters edited on the source side); returns the 0-based
    positions of the planted copies."""
    rng = random.Random(seed)
    pairs = [(text, " ".join(reversed(text.split()))) for text in texts]
    planted: set[int] = set()
    for _ in range(len(texts) // 5):
        source = rng.randrange(len(pairs))
        at = rng.randrange(source + 1, len(pairs) + 1)
        planted = {p + (p >= at) for p in planted} | {at}
        pairs.insert(at, (near_copy(rng, pairs[source][0], "characters"), pairs[source][1]))
    src, tgt = name.split("-")
    (raw / f"train.{name}.{src}").write_text("".join(p[0] + "\n" for p in pairs), encoding="utf-8")
    (raw / f"train.{name}.{tgt}").write_text("".join(p[1] + "\n" for p in pairs), encoding="utf-8")
    return planted


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, dict[str, set[int]]]:
    raw = tmp_path_factory.mktemp("raw")
    texts = list(docstrings(240))
    planted = {name: write_direction(raw, name, texts[k * 120:(k + 1) * 120], k)
               for k, name in enumerate(DIRECTIONS)}
    return raw, planted


def many_directions(raw: Path, destdir: Path, **extra) -> dict:
    """The settings of a run over :data:`DIRECTIONS` with --near-dedup (``extra`` added or replaced)."""
    return {"destdir": str(destdir), "directions": list(DIRECTIONS), "trainpref": str(raw / "train"),
            "vocab_size": 300, "character_coverage": 1.0, "workers": 1, "near_dedup": True, "dedup": False, **extra}


def run(raw: Path, destdir: Path, **extra):
    return prepare(build_config(many_directions(raw, destdir, **extra)), progress=False)


def test_each_direction_drops_its_planted_near_duplicates(corpus, tmp_path):
    raw, planted = corpus
    summary = run(raw, tmp_path / "bin")
    for name in DIRECTIONS:
        clean = summary.directions[name].splits["train"]["clean"]
        near = clean["near_dedup"]
        print(f"\n{name}: {len(planted[name])} planted, {near['near_duplicates']} dropped")
        assert near["items"] == 120 + len(planted[name])
        assert len(planted[name]) * 0.85 <= near["near_duplicates"] <= len(planted[name])
        assert clean["kept"]["pairs"] == near["items"] - near["near_duplicates"]
    rows = {row["stage"]: row for row in task_status(tmp_path / "bin" / ".work" / "tasks")}
    for name in DIRECTIONS:  # --status names each direction's tasks
        assert rows[f"{name}.clean.train"]["tasks"] == rows[f"{name}.clean.train"]["done"] == 1


@pytest.fixture(scope="module")
def one_task(corpus, tmp_path_factory) -> Path:
    """The corpus prepared in one task, once: what every task count must write."""
    destdir = tmp_path_factory.mktemp("one") / "bin"
    run(corpus[0], destdir, tasks=1)
    return destdir


@pytest.mark.parametrize("tasks", [2, 3])
def test_any_task_count_gives_the_same_bytes(corpus, one_task, tmp_path, tasks):
    raw, _ = corpus
    run(raw, tmp_path / "many", tasks=tasks)
    assert_same_output(one_task, tmp_path / "many")


def test_without_near_dedup_tasks_give_the_one_piece_bytes(corpus, tmp_path):
    """A many-direction run cut into tasks (each direction's clean and encode) writes what the one-process run
    writes."""
    raw, _ = corpus
    run(raw, tmp_path / "one", near_dedup=False)
    run(raw, tmp_path / "many", near_dedup=False, tasks=3)
    assert_same_output(tmp_path / "one", tmp_path / "many")


@pytest.mark.parametrize("near_dedup", [True, False])
def test_slurm_script_jobs_give_the_one_process_bytes(corpus, tmp_path, near_dedup):
    """--directions with --engine slurm: each array holds every direction's tasks (3 for each), run in any
    order as separate processes; the phases plan, merge and encode every direction; the output is the
    one-process run's."""
    raw, _ = corpus
    run(raw, tmp_path / "one", near_dedup=near_dedup, dedup=not near_dedup)
    settings = many_directions(raw, tmp_path / "bin", tasks=3, near_dedup=near_dedup, dedup=not near_dedup)
    status = run_script_as_slurm(settings, tmp_path, array=3 * len(DIRECTIONS))
    assert [f"{name}.clean.train: 3 of 3 tasks done" for name in DIRECTIONS] == status
    assert_same_output(tmp_path / "one", tmp_path / "bin")


def test_a_task_past_the_arrays_end_is_refused(corpus, tmp_path):
    raw, _ = corpus
    config = write_config(tmp_path / "run.yaml", many_directions(raw, tmp_path / "bin", tasks=3, engine="slurm"))
    past = run_cli("-c", str(config), "--phase", "clean", "--task", "6")
    assert past.returncode == 2 and "Traceback" not in past.stderr
    assert past.stderr.startswith("error: --task 6: this run has tasks 0..5 (3 for each of its 2 directions)")
