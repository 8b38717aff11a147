"""Parquet on S3 (moto's server on 127.0.0.1) read in place: footers and row groups by ranged requests, no
copy under .work/inputs; a connection dropped in the middle of a row group is retried (every row once),
a link that stays down is one error naming the file and the row group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("s3fs")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import tokenmill  # noqa: E402
from tests.prepare.tasks_corpus import write_corpus  # noqa: E402
from tests.prepare.test_table_inputs import KEYS, SETTINGS, stores, write_parquet_corpus  # noqa: E402
from tests.s3server import FlakyProxy, S3Server  # noqa: E402
from tokenmill.errors import TokenmillError  # noqa: E402
from tokenmill.prepare.config import build_config  # noqa: E402
from tokenmill.prepare.object_storage import StagedInputs  # noqa: E402
from tokenmill.text import ReadOptions, open_source  # noqa: E402


@pytest.fixture(scope="module")
def s3() -> S3Server:
    with S3Server() as server:
        yield server


@pytest.fixture(scope="module")
def uploaded(s3, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The corpus as Parquet files, locally and under s3://.../pq/ (patterns for both)."""
    root = tmp_path_factory.mktemp("pq")
    corpus = write_corpus(root / "corpus", pairs=1500)
    local = write_parquet_corpus(corpus, root / "parquet", group=200)
    for path in sorted((root / "parquet").iterdir()):
        s3.put(f"pq/{path.name}", path.read_bytes())
    return root, {split: s3.url(f"pq/{Path(pattern).name}") for split, pattern in local.items()} | {"local": local}


def test_prepare_reads_s3_parquet_in_place_and_makes_the_local_stores(s3, uploaded, tmp_path, monkeypatch):
    monkeypatch.setenv("TOKENMILL_CACHE", str(tmp_path / "cache"))
    _, urls = uploaded
    local = urls["local"]
    tokenmill.prepare({**SETTINGS, **KEYS, "trainpref": local["train"], "validpref": local["valid"], "tasks": 2},
                      destdir=str(tmp_path / "local"), progress=False)
    # --storage-options as the command line gives it: a JSON object
    settings = build_config({**SETTINGS, **KEYS, "trainpref": urls["train"], "validpref": urls["valid"], "tasks": 2,
                             "destdir": str(tmp_path / "remote")},
                            overrides={"storage_options": json.dumps(s3.storage_options)})
    assert settings.inputs.input_format == "parquet"  # by the URL's extension
    tokenmill.prepare(settings, progress=False)
    assert stores(tmp_path / "remote") == stores(tmp_path / "local")
    assert not list((tmp_path / "remote" / ".work").rglob("*.parquet"))  # nothing copied to local disk


def remote_source(s3: S3Server, url: str, options: dict):
    inputs = StagedInputs(Path("unused"), options)
    files = inputs.urls(url)
    return open_source(files, "parquet", src_key="translation.en", tgt_key="translation.zh",
                       options=ReadOptions(chunk_lines=50), opener=inputs.open), files


def test_a_connection_dropped_mid_row_group_is_retried_and_every_row_comes_once(s3, uploaded, monkeypatch):
    import s3fs

    monkeypatch.setattr(s3fs.S3FileSystem, "retries", 1)  # s3fs gives up at once: tokenmill's retry is tested
    url = s3.url("pq/train-00001.parquet")
    expected_source, _ = remote_source(s3, url, s3.storage_options)
    expected = [(a, b) for c in expected_source.chunks() for a, b in zip(c.src, c.tgt, strict=True)]
    assert len(expected) == 500 and len(expected_source.index_state()[0]["groups"]) == 3
    with FlakyProxy(s3.endpoint_url) as proxy:
        source, _ = remote_source(s3, url, s3.options_via(proxy))
        source.scan()  # the footer is read; the file stays open, so the next request is for a row group
        proxy.clear()
        proxy.fail_next(1, after_bytes=700, path_contains="train-00001")  # that row group's response cut short
        got = [(a, b) for c in source.chunks() for a, b in zip(c.src, c.tgt, strict=True)]
        assert proxy.cuts == 1
        assert got == expected  # nothing missing, nothing twice
        proxy.kill(after_bytes=700, path_contains="train-00001")  # a link that stays down
        with pytest.raises(TokenmillError, match=r"train-00001\.parquet: row group 2: cannot read it as parquet "
                                                 r"after 3 tries .*Check the connection"):
            list(source.chunks(450, 500))


def test_storage_options_take_json_or_key_value_pairs(tmp_path):
    """--storage-options from the command line: a JSON object, or key=value pairs read as YAML scalars."""
    (tmp_path / "train.en").write_text("a line\n")
    base = {"source_lang": "en", "trainpref": [str(tmp_path / "train")], "destdir": str(tmp_path / "bin")}
    given = '{"client_kwargs": {"endpoint_url": "http://127.0.0.1:9000"}, "anon": true}'
    config = build_config(base, overrides={"storage_options": given})
    assert config.engine.storage_options == {"client_kwargs": {"endpoint_url": "http://127.0.0.1:9000"}, "anon": True}
    config = build_config(base, overrides={"storage_options": "anon=true,key=abc"})
    assert config.engine.storage_options == {"anon": True, "key": "abc"}
    with pytest.raises(tokenmill.ConfigError, match="--storage-options: not valid JSON"):
        build_config(base, overrides={"storage_options": '{"anon": tru}'})
