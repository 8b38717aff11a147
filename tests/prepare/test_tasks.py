"""The training split cut into tasks gives the same bytes as one process, for every task count, and a
killed task is re-run alone; the Slurm script's jobs run in any order."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus, write_jsonl
from tokenmill.prepare import build_config
from tokenmill.prepare.run import write_slurm_script
from tokenmill.prepare.tasks import task_status
from tokenmill.store.manifest import verify_directory

SETTINGS = {
    "source_lang": "en",
    "target_lang": "zh",
    "vocab_size": 300,
    "character_coverage": 0.99,  # the rare characters become unknown pieces (kept as words, as fairseq does)
    "filters": {"max_tokens": 80},  # counted in pieces after encoding
    "workers": 2,
}


def output_files(directory: Path) -> dict[str, bytes]:
    """What a run leaves for users (and the drop sample the report reads), with the destdir's name and the
    manifest's record of how the run went (times, tasks) taken out."""
    out = {}
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory)
        if not path.is_file() or relative.parts[0] in (".state", ".lock") or path.name == "report.html":
            continue
        if relative.parts[0] == ".work" and relative.parts[1] != "dropped":
            continue
        data = path.read_bytes()
        if path.name == "manifest.json":
            manifest = json.loads(data)
            manifest.pop("run")
            manifest["settings"].pop("destdir")
            manifest["files"].pop("preprocess.log")
            data = json.dumps(manifest, sort_keys=True).encode()
        elif path.name == "preprocess.log":
            data = data.split(b"\n", 1)[1]  # its first line names the destdir
        out[str(relative)] = data
    return out


def assert_same_output(expected: Path, actual: Path) -> None:
    want, got = output_files(expected), output_files(actual)
    assert sorted(got) == sorted(want)
    assert [name for name in want if want[name] != got[name]] == []


@pytest.fixture(scope="module")
def corpus(tasks_corpus) -> Path:
    return tasks_corpus  # shared with test_slurm_cluster.py (tests/prepare/conftest.py)


def settings_for(corpus: Path, destdir: Path, **more) -> dict:
    return {**SETTINGS, "trainpref": str(corpus / "train"), "validpref": str(corpus / "valid"),
            "testpref": str(corpus / "test"), "destdir": str(destdir), **more}


@pytest.fixture(scope="module")
def one_process(tasks_one_process) -> Path:
    """The plain run: one process, no tasks (prepared once per session: tests/prepare/conftest.py)."""
    return tasks_one_process


@pytest.mark.parametrize("tasks", [1, 2, 3, 7])
def test_every_task_count_gives_the_same_bytes(corpus, one_process, tmp_path, tasks):
    summary = tokenmill.prepare(settings_for(corpus, tmp_path / "bin", tasks=tasks), progress=False)
    stages = ["clean.train", "sample.train.en+zh", "encode.train.en", "encode.train.zh", "binarize.train.en",
              "binarize.train.zh"]
    assert {stage: len(rows) for stage, rows in summary.tasks.items()} == dict.fromkeys(stages, tasks)
    # the encoded parts are never joined: the dictionary sums their counts, binarize runs on each
    assert not list((tmp_path / "bin" / ".work" / "ids").glob("train.*.bin"))
    assert sum(row["lines"] for row in summary.tasks["clean.train"]) == 3000
    assert_same_output(one_process, tmp_path / "bin")
    manifest = json.loads((tmp_path / "bin" / "manifest.json").read_text())
    assert manifest["run"]["tasks"]["clean.train"][0]["attempts"] == 1
    assert "tasks" not in manifest["settings"] and manifest["run"]["engine"] == "local"
    assert verify_directory(tmp_path / "bin") == []  # no problems


def test_monolingual_jsonl_documents_with_newlines(tmp_path):
    """Quoted cleaned text (documents keep their newlines), the tokenizer's own ids, dedup across tasks."""
    data = write_jsonl(tmp_path / "docs.jsonl")
    settings = {"source_lang": "en", "trainpref": [str(data)], "input_format": "jsonl", "source_key": "text",
                "tokenizer": "hf", "hf_model_type": "bpe", "vocab_size": 400, "workers": 2,
                "normalize": {"collapse_whitespace": False}}
    tokenmill.prepare(settings, destdir=str(tmp_path / "plain"), progress=False)
    summary = tokenmill.prepare(settings, destdir=str(tmp_path / "tasks"), tasks=3, progress=False)
    assert summary.splits["train"]["clean"]["dedup"]["duplicates"] > 300
    assert_same_output(tmp_path / "plain", tmp_path / "tasks")


def test_a_folder_made_without_tasks_from_the_input_as_read_takes_a_tasked_rerun(tmp_path):
    """Megatron's flags read the input as it is, with no cleaned copy; a later run cut into tasks needs the
    copy, so its clean stage runs again instead of counting as done (and the output is the tasked run's)."""
    data = write_jsonl(tmp_path / "docs.jsonl", lines=600)
    megatron = {"input": [str(data)], "output_prefix": str(tmp_path / "out" / "lm"), "tokenizer": "hf",
                "append_eod": True, "workers": 2, "vocab_size": 300}
    first = tokenmill.prepare(build_config(megatron), progress=False)
    assert "clean.train" in first.ran and not (tmp_path / "out" / ".work" / "clean" / "train.text").exists()
    again = tokenmill.prepare(build_config({**megatron, "vocab_size": 320}), tasks=2, progress=False)
    assert "clean.train" in again.ran and "binarize.train.text" in again.ran
    fresh = {**megatron, "output_prefix": str(tmp_path / "fresh" / "lm"), "vocab_size": 320}
    tokenmill.prepare(build_config(fresh), tasks=2, progress=False)
    for name in ("lm_text_document.bin", "lm_text_document.idx", "tokenizer.json"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes()


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tokenmill", "prepare", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def write_config(path: Path, settings: dict) -> Path:
    path.write_text(json.dumps(settings), encoding="utf-8")  # JSON is YAML
    return path


def test_a_killed_task_is_rerun_alone(corpus, one_process, tmp_path):
    config = write_config(tmp_path / "run.yaml", settings_for(corpus, tmp_path / "bin", tasks=4))
    killed = run_cli("-c", str(config), "-q", "--no-report", env={"TOKENMILL_CRASH_AT": "clean.train#2:midway"})
    # the task runs in a process of its own (the local engine's): its death stops the run with one error line
    assert killed.returncode == 2
    assert "task clean.train #2 was killed by signal 9 (SIGKILL)" in killed.stderr
    tasks = tmp_path / "bin" / ".work" / "tasks" / "clean.train"
    assert [(tasks / f"{i:05d}" / "done.json").exists() for i in range(4)] == [True, True, False, False]
    assert run_cli("-c", str(config), "-q", "--no-report").returncode == 0
    rows = json.loads((tmp_path / "bin" / "manifest.json").read_text())["run"]["tasks"]["clean.train"]
    assert [row["attempts"] for row in rows] == [1, 1, 2, 1]  # 0 and 1 were not run again; 2 was, alone
    # the parts are the cleaned text (read through their duplicate masks), never joined into one file
    assert (tasks / "00002" / "gone.npy").exists() and not (tmp_path / "bin" / ".work" / "clean" / "train.en").exists()
    assert_same_output(one_process, tmp_path / "bin")


def test_skipped_lines_keep_their_numbers(tmp_path):
    """Lines skipped while reading (invalid UTF-8) still count in the line numbers the drop sample shows,
    wherever chunks and tasks start."""
    corpus = write_corpus(tmp_path / "corpus", pairs=600)
    for lang in ("en", "zh"):
        path = corpus / f"train.{lang}"
        lines = path.read_bytes().splitlines(keepends=True)
        lines[100] = b"\xff\xfe broken\n"
        path.write_bytes(b"".join(lines))
    settings = settings_for(corpus, tmp_path / "plain", on_invalid_utf8="skip", chunk_lines=64)
    plain = tokenmill.prepare(settings, progress=False)
    assert plain.splits["train"]["clean"]["read"]["invalid_utf8_skipped"] == 1
    tokenmill.prepare({**settings, "destdir": str(tmp_path / "tasks"), "tasks": 3}, progress=False)
    assert_same_output(tmp_path / "plain", tmp_path / "tasks")
    sample = json.loads((tmp_path / "plain" / ".work" / "dropped" / "train.json").read_text())
    source = (corpus / "train.en").read_bytes().splitlines()
    assert any(record["line"] > 101 for record in sample["dedup"])  # lines after the skipped one
    for record in sample["dedup"]:
        assert source[record["line"] - 1].decode() == record["src"]  # the number names the input line


def test_a_finished_task_is_not_run_again(corpus, tmp_path):
    config = write_config(tmp_path / "run.yaml", settings_for(corpus, tmp_path / "bin", tasks=2, engine="slurm"))
    assert run_cli("-c", str(config), "--phase", "plan", "-q").returncode == 0
    first = run_cli("-c", str(config), "--phase", "clean", "--task", "1")
    again = run_cli("-c", str(config), "--phase", "clean", "--task", "1")
    assert first.returncode == again.returncode == 0
    marker = json.loads((tmp_path / "bin" / ".work" / "tasks" / "clean.train" / "00001" / "done.json").read_text())
    assert marker["attempt"] == 1 and first.stdout == again.stdout


FAKE_SBATCH = textwrap.dedent("""\
    #!{python}
    # Records each submission (one JSON line) and prints a job id, as `sbatch --parsable` does.
    import json, os, sys
    log = os.environ["SBATCH_LOG"]
    with open(log, "a") as handle:
        handle.write(json.dumps(sys.argv[1:]) + "\\n")
    print(sum(1 for _ in open(log)) + 1000)
""")


def submitted_jobs(log: Path) -> list[dict]:
    jobs = []
    for line in log.read_text().splitlines():
        args = json.loads(line)
        job = {"command": args[args.index("--wrap") + 1], "array": None, "after": None}
        for arg in args:
            if arg.startswith("--array=0-"):
                job["array"] = int(arg.split("-")[-1]) + 1
            if arg.startswith("--dependency=afterok:"):
                job["after"] = int(arg.split(":")[1])
        jobs.append(job)
    return jobs


def run_script_as_slurm(settings: dict, tmp_path: Path, array: int) -> list[str]:
    """Write the run's Slurm script (``settings`` with --engine slurm), submit it to a recording sbatch, then
    run every job as Slurm would start it: array tasks as separate processes at once, in shuffled order.
    ``array``: the tasks each array must have. Returns ``--status``'s lines after the clean array."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(FAKE_SBATCH.format(python=sys.executable))
    (bin_dir / "sbatch").chmod(0o755)
    made = run_cli("-c", str(write_config(tmp_path / "run.yaml", {**settings, "engine": "slurm"})))
    assert made.returncode == 0, made.stderr
    script = Path(settings["destdir"]) / ".work" / "slurm" / "submit.sh"
    assert str(script) in made.stdout
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SBATCH_LOG": str(tmp_path / "sbatch.log")}
    submitted = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert submitted.returncode == 0, submitted.stderr
    jobs = submitted_jobs(tmp_path / "sbatch.log")
    assert [job["array"] for job in jobs] == [None, array, None, array, None]
    assert [job["after"] for job in jobs] == [None, 1001, 1002, 1003, 1004]  # each waits for the one before
    shuffle = random.Random(5)
    status: list[str] = []
    for job in jobs:
        if job["array"] is None:
            done = subprocess.run(["bash", "-c", job["command"]], capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            continue
        order = list(range(job["array"]))
        shuffle.shuffle(order)
        running = [subprocess.Popen(["bash", "-c", job["command"]], env={**os.environ, "SLURM_ARRAY_TASK_ID": str(i)},
                                    stderr=subprocess.PIPE, text=True) for i in order]
        assert [p.wait() for p in running] == [0] * len(order), [p.stderr.read() for p in running]
        if job["array"] and "--phase clean" in job["command"]:
            status = run_cli("-c", str(script.parent / "config.yaml"), "--status").stdout.splitlines()
    return status


def test_slurm_script_jobs_run_in_any_order(corpus, one_process, tmp_path):
    status = run_script_as_slurm(settings_for(corpus, tmp_path / "bin", tasks=3), tmp_path, array=3)
    assert "clean.train: 3 of 3 tasks done" in status
    assert_same_output(one_process, tmp_path / "bin")


def test_phases_say_what_is_missing(corpus, tmp_path):
    config = write_config(tmp_path / "run.yaml", settings_for(corpus, tmp_path / "bin", tasks=2, engine="slurm"))
    early = run_cli("-c", str(config), "--phase", "encode", "--task", "0")
    assert early.returncode == 2 and early.stderr.startswith("error: ") and "plan" in early.stderr
    assert "Traceback" not in early.stderr
    alone = run_cli("-c", str(config), "--task", "1")
    assert alone.returncode == 2 and "--phase clean" in alone.stderr
    assert run_cli("-c", str(config), "--phase", "plan", "-q").returncode == 0
    assert run_cli("-c", str(config), "--phase", "clean", "--task", "1", "-q").returncode == 0
    merge = run_cli("-c", str(config), "--phase", "tokenizer", "-q")
    assert merge.returncode == 2 and "tasks 0 of 2 have not finished" in merge.stderr
    rows = task_status(tmp_path / "bin" / ".work" / "tasks")
    assert rows == [{"stage": "clean.train", "tasks": 2, "done": 1, "left": [0]}]
    too_far = run_cli("-c", str(config), "--phase", "clean", "--task", "2")
    assert too_far.returncode == 2 and "has tasks 0..1" in too_far.stderr


def test_slurm_script_names_the_task_count(corpus, tmp_path):
    config = build_config(settings_for(corpus, tmp_path / "bin", engine="slurm"))
    script = write_slurm_script(config)
    text = script.read_text()
    assert "--array=0-0 " in text  # a small input: one task (one per 256 MiB on a cluster)
    assert "--phase merge" in text and "SLURM_ARRAY_TASK_ID" in text


def test_relative_paths_as_a_user_types_them(corpus, one_process, tmp_path, monkeypatch):
    """Inputs named relative to the working directory: tasks get absolute paths and find the same files."""
    monkeypatch.chdir(corpus)
    settings = {**settings_for(corpus, tmp_path / "bin", tasks=2), "trainpref": "train", "validpref": "valid",
                "testpref": "test"}
    tokenmill.prepare(settings, progress=False)
    assert output_files(one_process).keys() == output_files(tmp_path / "bin").keys()
    for name in ("train.en-zh.en.bin", "train.en-zh.zh.idx", "dict.zh.txt"):
        assert (one_process / name).read_bytes() == (tmp_path / "bin" / name).read_bytes()


def test_many_parts_by_a_pattern(tmp_path):
    """JSONL parts named by a pattern are read in name order as one corpus (tasks cut across parts)."""
    docs = write_jsonl(tmp_path / "all.jsonl", lines=600)
    lines = docs.read_bytes().splitlines(keepends=True)
    for part in range(3):
        (tmp_path / f"part-{part:03d}.jsonl").write_bytes(b"".join(lines[part * 200:(part + 1) * 200]))
    settings = {"source_lang": "en", "input_format": "jsonl", "source_key": "text", "tokenizer": "hf",
                "hf_model_type": "bpe", "vocab_size": 300, "workers": 2}
    tokenmill.prepare(settings, trainpref=[str(docs)], destdir=str(tmp_path / "one"), progress=False)
    tokenmill.prepare(settings, trainpref=[str(tmp_path / "part-*.jsonl")], destdir=str(tmp_path / "parts"),
                      tasks=2, progress=False)
    assert (tmp_path / "one" / "train.bin").read_bytes() == (tmp_path / "parts" / "train.bin").read_bytes()
    with pytest.raises(tokenmill.ConfigError, match="no file matches this pattern"):
        tokenmill.prepare(settings, trainpref=[str(tmp_path / "nope-*.jsonl")], destdir=str(tmp_path / "x"))
