"""prepare with inputs and outputs on S3 (moto's server on 127.0.0.1): the same stores as from local disk,
checked there with ``tokenmill verify``; big files go up as multipart uploads, the manifest last."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

import tokenmill
from tests.prepare.tasks_corpus import write_corpus, write_jsonl
from tests.prepare.test_tasks import SETTINGS

pytest.importorskip("s3fs")
from tests.s3server import FlakyProxy, S3Server
from tokenmill.prepare.object_storage import publish_to


@pytest.fixture(scope="module")
def s3() -> S3Server:
    """moto's S3 server on 127.0.0.1 (a thread), one bucket, for this module."""
    with S3Server() as server:
        yield server


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKENMILL_CACHE", str(tmp_path / "cache"))


def download(s3: S3Server, prefix: str, into: Path) -> Path:
    client = s3.client()
    for item in client.list_objects_v2(Bucket=s3.bucket, Prefix=prefix + "/").get("Contents", []):
        target = into / item["Key"][len(prefix) + 1:]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(s3.get(item["Key"]))
    return into


def stores_of(directory: Path) -> dict[str, bytes]:
    """The stores, dictionaries and models (what a trainer reads) of a directory."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and p.suffix in (".bin", ".idx", ".txt", ".model", ".vocab")
            and not p.relative_to(directory).parts[0].startswith(".")}


def test_s3_in_s3_out_gives_the_local_stores(s3, private_cache, tmp_path):
    corpus = write_corpus(tmp_path / "corpus", pairs=1500)
    for path in corpus.iterdir():
        s3.put(f"corpus/{path.name}", path.read_bytes())
    local = {**SETTINGS, "trainpref": str(corpus / "train"), "validpref": str(corpus / "valid"), "tasks": 2}
    tokenmill.prepare(local, destdir=str(tmp_path / "local"), progress=False)
    remote = {**SETTINGS, "trainpref": s3.url("corpus/train"), "validpref": s3.url("corpus/valid"),
              "tasks": 2, "storage_options": s3.storage_options}
    tokenmill.prepare(remote, destdir=s3.url("data-bin"), progress=False)
    published = download(s3, "data-bin", tmp_path / "published")
    assert stores_of(published) == stores_of(tmp_path / "local")
    manifest = json.loads((published / "manifest.json").read_text())
    assert manifest["settings"]["trainpref"] == [s3.url("corpus/train")]
    env = {**os.environ, "AWS_ENDPOINT_URL": s3.endpoint_url}
    verified = subprocess.run([sys.executable, "-m", "tokenmill", "verify", s3.url("data-bin")],
                              capture_output=True, text=True, env=env)
    assert verified.returncode == 0, verified.stderr

    # again, unchanged: nothing is copied again and every stage is up to date
    summary = tokenmill.prepare(remote, destdir=s3.url("data-bin"), progress=False)
    assert summary.ran == []


def test_jsonl_zst_parts_by_pattern(s3, private_cache, tmp_path):
    docs = write_jsonl(tmp_path / "docs.jsonl", lines=900)
    lines = docs.read_bytes().splitlines(keepends=True)
    for part in range(3):  # three compressed parts, read in name order as one corpus
        body = zstandard.ZstdCompressor().compress(b"".join(lines[part * 300:(part + 1) * 300]))
        s3.put(f"docs/part-{part:05d}.jsonl.zst", body)
    settings = {"source_lang": "en", "input_format": "jsonl", "source_key": "text", "tokenizer": "hf",
                "hf_model_type": "bpe", "vocab_size": 300, "workers": 2}
    tokenmill.prepare(settings, trainpref=[str(docs)], destdir=str(tmp_path / "local"), progress=False)
    tokenmill.prepare(settings, trainpref=[s3.url("docs/part-*.jsonl.zst")], tasks=2,
                      storage_options=s3.storage_options, destdir=str(tmp_path / "remote"), progress=False)
    assert stores_of(tmp_path / "remote") == stores_of(tmp_path / "local")


def test_a_missing_object_is_one_clear_error(s3, private_cache, tmp_path):
    settings = {**SETTINGS, "trainpref": s3.url("nowhere/train"), "storage_options": s3.storage_options}
    with pytest.raises(tokenmill.TokenmillError, match=r"nowhere/train\.en: no such object"):
        tokenmill.prepare(settings, destdir=str(tmp_path / "out"), progress=False)
    assert not (tmp_path / "out").exists()  # a failed first run leaves nothing


def test_large_files_go_up_in_parts_and_the_manifest_last(s3, tmp_path):
    folder = tmp_path / "made"
    folder.mkdir()
    (folder / "train.bin").write_bytes(os.urandom(12 << 20))
    (folder / "manifest.json").write_text("{}")
    with FlakyProxy(s3.endpoint_url) as proxy:
        publish_to(s3.url("parts"), folder, s3.options_via(proxy), part_bytes=5 << 20)
        requests = list(proxy.requests)  # (method, path with query)
    posts = [path for method, path in requests if method == "POST"]
    puts = [path for method, path in requests if method == "PUT"]
    assert any(path.endswith("train.bin?uploads") for path in posts)  # CreateMultipartUpload
    assert sum("partNumber=" in path for path in puts) == 3  # 12 MiB in 5 MiB parts
    assert any("uploadId=" in path for path in posts)  # CompleteMultipartUpload: only now is the object there
    assert "manifest.json" in puts[-1]  # after every data file
    assert s3.get("parts/train.bin") == (folder / "train.bin").read_bytes()


def test_a_destination_holding_other_objects_is_refused(s3, private_cache, tmp_path):
    """A prefix holding objects tokenmill did not publish is refused before any work: nothing is deleted."""
    s3.put("mixed/train.en", b"hello\n")
    s3.put("mixed/notes.txt", b"keep me")
    settings = {**SETTINGS, "trainpref": s3.url("mixed/train"), "storage_options": s3.storage_options}
    with pytest.raises(tokenmill.ConfigError, match="holds objects tokenmill did not write"):
        tokenmill.prepare(settings, destdir=s3.url("mixed"), progress=False)
    assert s3.get("mixed/notes.txt") == b"keep me"
