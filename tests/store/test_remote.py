"""Reading prepared directories from object storage, against a real S3 server (moto, 127.0.0.1)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import s3fs

import tokenmill
from tests.prepare.conftest import SAMPLE
from tests.s3server import FlakyProxy, S3Server, s3_server  # noqa: F401 - the fixture
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import PairDataset
from tokenmill.store.remote import RemoteError

PREFIX = "/tokenmill-test/"
FAST = tokenmill.RemoteOptions(backoff=0.01, retries=2)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    """The bundled en-zh sample prepared (train and valid) with a tiny SentencePiece model."""
    out = tmp_path_factory.mktemp("prepared") / "bin"
    tokenmill.prepare({"source_lang": "en", "target_lang": "zh", "trainpref": str(SAMPLE / "train"),
                       "validpref": str(SAMPLE / "valid"), "vocab_size": 200, "character_coverage": 1.0,
                       "joined_dictionary": True, "destdir": str(out)}, progress=False)
    return out


@pytest.fixture(scope="module")
def url(s3_server, prepared) -> str:  # noqa: F811 - the fixture
    return s3_server.upload_dir(prepared, "data-bin")


@pytest.fixture
def proxy(s3_server) -> FlakyProxy:  # noqa: F811 - the fixture
    with FlakyProxy(s3_server.endpoint_url) as through:
        yield through


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("TOKENMILL_CACHE", str(cache))
    return cache


@pytest.fixture
def one_try(monkeypatch) -> None:
    """s3fs tries each request once (botocore too, by ``options_via``): retries are tokenmill's own."""
    monkeypatch.setattr(s3fs.S3FileSystem, "retries", 1)


def fetched(proxy: FlakyProxy, suffix: str = "") -> list[str]:
    """Files of the directory requested through the proxy (relative names), in order."""
    return [p.split("/data-bin/", 1)[1] for p in proxy.paths() if "/data-bin/" in p and p.endswith(suffix)]


def cached(cache: Path, pattern: str) -> list[Path]:
    """Files of the cached views matching ``pattern`` (their bookkeeping folder left out)."""
    return [path for path in cache.rglob(pattern) if ".cache" not in path.relative_to(cache).parts]


def all_batches(data, world_size: int = 2) -> list[dict]:
    config = tokenmill.BatchConfig(max_tokens=300, seed=3)
    return [batch for rank in range(world_size)
            for batch in tokenmill.batches(data, config, rank=rank, world_size=world_size, cache=False)]


def assert_same_batches(left: list[dict], right: list[dict]) -> None:
    assert len(left) == len(right) > 0

    def arrays(batch: dict, path: str = "") -> dict[str, np.ndarray]:
        out = {}
        for key, value in batch.items():
            if isinstance(value, dict):
                out.update(arrays(value, f"{path}{key}."))
            else:
                out[f"{path}{key}"] = np.asarray(value)
        return out

    for a, b in zip(left, right, strict=True):
        x, y = arrays(a), arrays(b)
        assert x.keys() == y.keys()
        for key in x:
            assert x[key].dtype == y[key].dtype and np.array_equal(x[key], y[key]), key


def test_s3_gives_the_same_batches_as_local_disk_and_fetches_only_the_split_opened(
    url, prepared, proxy, s3_server  # noqa: F811 - the fixture
):
    options = s3_server.options_via(proxy)
    remote = tokenmill.open(url, storage_options=options, remote=tokenmill.RemoteOptions(chunk_bytes=4096))
    assert isinstance(remote, PairDataset) and remote.src_lang == "en" and len(remote) == 343
    assert_same_batches(all_batches(tokenmill.open(prepared)), all_batches(remote))
    bins = fetched(proxy, ".bin")
    assert sorted(set(bins)) == ["train.en-zh.en.bin", "train.en-zh.zh.bin"], "valid's tokens stay on the server"
    size = (prepared / "train.en-zh.en.bin").stat().st_size
    assert bins.count("train.en-zh.en.bin") == -(-size // 4096) > 1, "fetched in ranges of chunk_bytes"
    assert {"manifest.json", "dict.en.txt", "valid.en-zh.en.idx"} <= set(fetched(proxy))

    proxy.clear()
    valid = tokenmill.open(url, "valid", storage_options=options)
    assert len(valid) == len(tokenmill.open(prepared, "valid"))
    assert sorted(set(fetched(proxy, ".bin"))) == ["valid.en-zh.en.bin", "valid.en-zh.zh.bin"]
    assert "train.en-zh.en.idx" not in fetched(proxy), "indices are cached already"


def test_a_second_open_fetches_nothing_but_the_manifest(url, proxy, s3_server):  # noqa: F811
    options = s3_server.options_via(proxy)
    first = tokenmill.open(url, storage_options=options)
    proxy.clear()
    second = tokenmill.open(url, storage_options=options)
    assert fetched(proxy) == ["manifest.json"]
    assert second.src.prefix == first.src.prefix and "remote" in second.src.prefix
    assert np.array_equal(second.src.tokens, first.src.tokens)


def test_concurrent_opens_share_one_download(url, proxy, s3_server):  # noqa: F811
    options = s3_server.options_via(proxy)
    results: list[object] = []
    start = threading.Barrier(3)

    def open_it() -> None:
        start.wait()
        results.append(tokenmill.open(url, storage_options=options))

    threads = [threading.Thread(target=open_it) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3 and all(isinstance(r, PairDataset) for r in results)
    requested = [name for name in fetched(proxy) if name != "manifest.json"]
    assert sorted(requested) == sorted(set(requested)), "every file downloaded once, whoever asked"


def test_a_corrupt_object_is_refused_naming_it(url, prepared, s3_server, _private_cache):  # noqa: F811
    key = "data-bin/train.en-zh.zh.bin"
    good = s3_server.get(key)
    s3_server.put(key, bytes(255 - b for b in good))  # the same size, wrong bytes
    try:
        with pytest.raises(RemoteError, match=r"train\.en-zh\.zh\.bin: .* refusing it") as caught:
            tokenmill.open(url, storage_options=s3_server.storage_options)
        assert url in str(caught.value)
        assert not cached(_private_cache, "train.en-zh.zh.bin*"), "nothing of it is kept"
    finally:
        s3_server.put(key, good)
    assert len(tokenmill.open(url, storage_options=s3_server.storage_options)) == 343


def test_a_changed_cached_file_is_fetched_again(url, prepared, proxy, s3_server):  # noqa: F811
    options = s3_server.options_via(proxy)
    data = tokenmill.open(url, storage_options=options)
    cached = Path(f"{data.tgt.prefix}.bin")
    del data
    cached.write_bytes(b"\0" * cached.stat().st_size)  # same size, other bytes, new mtime
    proxy.clear()
    again = tokenmill.open(url, storage_options=options)
    assert fetched(proxy, ".bin") == ["train.en-zh.zh.bin"]
    assert cached.read_bytes() == (prepared / "train.en-zh.zh.bin").read_bytes()
    assert np.array_equal(again.tgt.tokens, tokenmill.open(prepared).tgt.tokens)


def test_dropped_connections_are_retried(url, prepared, proxy, s3_server, one_try):  # noqa: F811
    proxy.fail_next(2, after_bytes=700, path_contains=".bin")
    data = tokenmill.open(url, storage_options=s3_server.options_via(proxy), remote=FAST)
    assert proxy.cuts == 2
    assert_same_batches(all_batches(tokenmill.open(prepared)), all_batches(data))


def test_a_dead_connection_is_one_clear_error_and_nothing_partial_is_served(
    url, proxy, s3_server, one_try, _private_cache  # noqa: F811
):
    options = s3_server.options_via(proxy)
    proxy.kill(after_bytes=700, path_contains="train.en-zh.en.bin")  # dies in the middle of the tokens
    with pytest.raises(RemoteError) as caught:
        tokenmill.open(url, storage_options=options, remote=FAST)
    message = str(caught.value)
    assert f"{url}/train.en-zh.en.bin" in message and "failed 3 times" in message
    assert "check the endpoint" in message and "nothing partial was kept" in message
    assert fetched(proxy, ".bin").count("train.en-zh.en.bin") == 3
    assert not cached(_private_cache, "train.en-zh.en.bin*"), "no partial file, not even a temporary"
    proxy.heal()
    assert len(tokenmill.open(url, storage_options=options, remote=FAST)) == 343


def test_an_unreachable_server_is_one_clear_error(url, s3_server, one_try):  # noqa: F811
    with FlakyProxy(s3_server.endpoint_url) as gone:
        options = s3_server.options_via(gone)
    with pytest.raises(RemoteError, match=r"data-bin/manifest\.json: the request failed 3 times"):
        tokenmill.open(url, storage_options=options, remote=FAST)


def test_a_store_prefix_url_and_a_missing_directory(url, prepared, proxy, s3_server):  # noqa: F811
    options = s3_server.options_via(proxy)
    store = tokenmill.open(f"{url}/valid.en-zh.zh", storage_options=options)
    assert isinstance(store, tokenmill.IndexedDataset)
    assert np.array_equal(store.tokens, tokenmill.IndexedDataset(prepared / "valid.en-zh.zh").tokens)
    assert fetched(proxy, ".bin") == ["valid.en-zh.zh.bin"]
    with pytest.raises(RemoteError, match=r"nothing-here/manifest\.json does not exist"):
        tokenmill.open(s3_server.url("nothing-here"), storage_options=options)
    with pytest.raises(tokenmill.ConfigError, match="apply to URLs"):
        tokenmill.open(prepared, storage_options=options)


def test_many_directions_from_s3(tmp_path, s3_server):  # noqa: F811
    from tests.prepare.test_multilingual import settings, write_direction

    raw = tmp_path / "raw"
    raw.mkdir()
    for tgt, n, seed in (("deu_Latn", 60, 1), ("rus_Cyrl", 20, 2)):
        write_direction(raw, tgt, n, seed)
    tokenmill.prepare(settings(raw, tmp_path, ["eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl"]),
                      progress=False)
    url = s3_server.upload_dir(tmp_path / "data_bin", "multi/data_bin")
    remote = tokenmill.open(url, storage_options=s3_server.storage_options)
    assert isinstance(remote, MultiPairDataset) and len(remote.directions) == 2
    local = tokenmill.open(tmp_path / "data_bin")
    sampling = tokenmill.SamplingConfig(temperature=5.0)
    config = tokenmill.BatchConfig(max_tokens=200)
    left = list(tokenmill.batches(local, config, sampling=sampling, cache=False))
    right = list(tokenmill.batches(remote, config, sampling=sampling, cache=False))
    assert_same_batches(left, right)


def test_any_fsspec_url_reads_through_the_cache(prepared, _private_cache):
    data = tokenmill.open(f"file://{prepared}", "valid")
    assert str(_private_cache / "remote") in data.src.prefix
    assert_same_batches(all_batches(tokenmill.open(prepared, "valid"), 1), all_batches(data, 1))


def test_verify_a_url_with_the_endpoint_from_the_environment(url, s3_server, monkeypatch):  # noqa: F811
    from click.testing import CliRunner

    from tokenmill.cli import cli

    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint_url)  # s3fs (botocore) honours it
    result = CliRunner().invoke(cli, ["verify", url])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"{url}: OK"


def test_tokenmill_imports_without_fsspec_and_says_what_to_install():
    code = ("import sys; sys.modules['fsspec'] = sys.modules['fsspec.core'] = None\n"
            "import tokenmill\n"
            "try:\n    tokenmill.open('s3://bucket/data-bin')\n"
            "except tokenmill.ConfigError as error:\n    print(error)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "s3://bucket/data-bin: reading a URL needs fsspec and its filesystem: " \
        "pip install 'tokenmill[s3]'"


@pytest.mark.parametrize(("manifest", "message"), [
    (b'{"format": "other"}', r"bad-\d/manifest\.json: not a tokenmill manifest"),
    (b"{", r"bad-\d/manifest\.json: not valid JSON"),
    (b'{"format": "tokenmill", "format_version": 1, "stores": {}, "files": {"../../x": {"bytes": 1, "xxh3_128": "0"}}}',
     r"bad-\d/manifest\.json: path '\.\./\.\./x' is not a file inside the directory"),
])
def test_a_bad_manifest_on_the_server_is_refused(s3_server, manifest, message, _private_cache):  # noqa: F811
    key = f"bad-{len(manifest) % 10}"
    s3_server.put(f"{key}/manifest.json", manifest)
    with pytest.raises(tokenmill.FormatError, match=message):
        tokenmill.open(s3_server.url(key), storage_options=s3_server.storage_options)
    assert not list(_private_cache.rglob("x"))
