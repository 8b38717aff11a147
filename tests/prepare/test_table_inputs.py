"""prepare on Parquet, Arrow and datasets' save_to_disk folders: the same stores as from the same text as
plain files or JSONL, byte-identical for every task count and engine, and read in place from S3 (ranged
requests, one row group at a time; a connection dropped mid-row-group is retried, then one clear error)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import tokenmill  # noqa: E402
from tests.prepare.tasks_corpus import write_corpus, write_jsonl  # noqa: E402
from tests.prepare.test_tasks import SETTINGS, assert_same_output, run_cli, write_config  # noqa: E402

KEYS = {"source_key": "translation.en", "target_key": "translation.zh"}


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def write_parquet_corpus(corpus: Path, folder: Path, group: int = 250, parts: int = 3) -> dict[str, str]:
    """The text corpus as Parquet, the Hub's translation layout (a struct column), train in ``parts`` files."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for split in ("train", "valid", "test"):
        en, zh = read_lines(corpus / f"{split}.en"), read_lines(corpus / f"{split}.zh")
        table = pa.table({"id": list(range(len(en))),
                          "translation": [{"en": a, "zh": b} for a, b in zip(en, zh, strict=True)]})
        n = parts if split == "train" else 1
        cuts = [len(en) * i // n for i in range(n + 1)]
        for i in range(n):
            pq.write_table(table.slice(cuts[i], cuts[i + 1] - cuts[i]), folder / f"{split}-{i:05d}.parquet",
                           row_group_size=group, compression="zstd")
        out[split] = str(folder / f"{split}-*.parquet")
    return out


def stores(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.suffix in (".bin", ".idx", ".txt")}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus"), pairs=2000)


@pytest.fixture(scope="module")
def parquet(corpus, tmp_path_factory) -> dict[str, str]:
    return write_parquet_corpus(corpus, tmp_path_factory.mktemp("parquet"))


def parquet_settings(parquet: dict[str, str], destdir: Path, **more) -> dict:
    return {**SETTINGS, **KEYS, "trainpref": parquet["train"], "validpref": parquet["valid"],
            "testpref": parquet["test"], "destdir": str(destdir), **more}


@pytest.fixture(scope="module")
def one_process(parquet, tmp_path_factory) -> Path:
    destdir = tmp_path_factory.mktemp("plain") / "bin"
    summary = tokenmill.prepare(parquet_settings(parquet, destdir), progress=False)
    assert summary.tasks == {} and summary.splits["train"]["clean"]["read"]["read"] == 2000
    return destdir


def test_parquet_gives_the_stores_of_the_same_text_as_plain_files(corpus, one_process, tmp_path):
    text = {**SETTINGS, "trainpref": str(corpus / "train"), "validpref": str(corpus / "valid"),
            "testpref": str(corpus / "test")}
    tokenmill.prepare(text, destdir=str(tmp_path / "text"), progress=False)
    assert stores(tmp_path / "text") == stores(one_process) and len(stores(one_process)) == 14
    manifest = json.loads((one_process / "manifest.json").read_text())
    assert manifest["settings"]["input_format"] == "parquet"  # found by content: the default was text


@pytest.mark.parametrize("tasks", [1, 2, 3, 7])
def test_every_task_count_gives_the_same_bytes(parquet, one_process, tmp_path, tasks):
    summary = tokenmill.prepare(parquet_settings(parquet, tmp_path / "bin", tasks=tasks), progress=False)
    assert len(summary.tasks["clean.train"]) == tasks
    assert sum(row["lines"] for row in summary.tasks["clean.train"]) == 2000
    assert_same_output(one_process, tmp_path / "bin")


@pytest.mark.slow
@pytest.mark.serial  # starts Ray: in the serial part (tests/conftest.py)
def test_the_ray_engine_gives_the_local_bytes(parquet, one_process, tmp_path):
    pytest.importorskip("ray")
    config = write_config(tmp_path / "ray.yaml", parquet_settings(parquet, tmp_path / "ray", tasks=3, engine="ray"))
    loopback = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    done = run_cli("-c", str(config), "-q", "--no-report", env=loopback)
    assert done.returncode == 0, done.stderr
    assert_same_output(one_process, tmp_path / "ray")
    assert not (tmp_path / "ray" / ".work" / "tasks" / "count.train").exists()  # rows counted from the footers


def test_a_null_row_is_one_error_line_or_a_counted_skip(tmp_path):
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"text": ["one doc", "another", None, "last"]}), path, row_group_size=2)
    args = ("--source-lang", "en", "--trainpref", str(path), "--json-keys", "text", "--tokenizer", "none",
            "--destdir", str(tmp_path / "bin"), "-q", "--no-report")
    failed = run_cli(*args)
    assert failed.returncode != 0 and "Traceback" not in failed.stderr
    assert f"error: {path}: row group 1, row 3: 'text' is null" in failed.stderr
    settings = {"source_lang": "en", "trainpref": str(path), "json_keys": ["text"], "tokenizer": "none",
                "on_malformed": "skip"}
    summary = tokenmill.prepare(settings, destdir=str(tmp_path / "bin"), progress=False)
    clean = summary.splits["train"]["clean"]
    assert clean["read"]["malformed_skipped"] == 1 and clean["kept"] == {"pairs": 3}


def test_megatron_input_of_arrow_and_a_save_to_disk_folder_match_jsonl(tmp_path):
    """Documents with newlines: Megatron's flags on JSONL, an Arrow IPC file and a folder written by the real
    datasets library give the same Megatron stores; the folder is read without importing datasets."""
    datasets = pytest.importorskip("datasets")
    jsonl = write_jsonl(tmp_path / "docs.jsonl", lines=800)
    docs = [json.loads(line) for line in jsonl.read_text().splitlines()]
    table = pa.Table.from_pylist(docs)
    with pa.OSFile(str(tmp_path / "docs.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=100)
    datasets.Dataset.from_list(docs).save_to_disk(str(tmp_path / "saved"), num_shards=2)
    made = {}
    for name, given in (("jsonl", jsonl), ("arrow", tmp_path / "docs.arrow"), ("saved", tmp_path / "saved")):
        out = tmp_path / f"out-{name}"
        args = ("--input", str(given), "--output-prefix", str(out / "lm"), "--json-keys", "text", "--tokenizer", "hf",
                "--vocab-size", "300", "--append-eod", "-q", "--no-report")
        done = subprocess.run([sys.executable, "-c", "import sys, tokenmill.cli as cli\n"
                               "try:\n    cli.main(sys.argv[1:])\nfinally:\n"
                               "    assert 'datasets' not in sys.modules, 'datasets was imported'\n",
                               "prepare", *args], capture_output=True, text=True, env=dict(os.environ))
        assert done.returncode == 0, done.stderr
        made[name] = stores(out)
        assert json.loads((out / "manifest.json").read_text())["settings"]["input_format"] == (
            {"jsonl": "jsonl", "arrow": "arrow", "saved": "hf-dataset"}[name])
    assert made["arrow"] == made["jsonl"] == made["saved"] and made["jsonl"]
