"""The array cache: keys, memory-mapped loads, epochs, and real processes racing on an empty cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tokenmill.cache import ArrayCache, array_cache, default_cache_dir, fingerprint_array
from tokenmill.errors import FormatError

REPO = Path(__file__).resolve().parents[1]

# A rank: waits for the start signal, then asks the cache for a real GPT index (the build is slowed
# down so the others certainly arrive while it runs) and prints what it got.
RANK = r"""
import hashlib, json, os, sys, time
from pathlib import Path
import numpy as np
from tokenmill.data.gpt_index import GPTIndexConfig, build_gpt_index
from tokenmill.cache import ArrayCache, fingerprint_array

cache_dir, start_file, log_file = sys.argv[1:4]
sizes = (np.arange(20_000) * 7919 % 997).astype(np.int32)
config = GPTIndexConfig(seq_length=128, seed=17, num_samples=250_000)

def build():
    with open(log_file, "a") as log:
        log.write(f"{os.getpid()}\n")
    index = build_gpt_index(sizes, config)
    time.sleep(0.5)
    return {"document_index": index.document_index, "sample_index": index.sample_index,
            "shuffle_index": index.shuffle_index}

while not os.path.exists(start_file):
    time.sleep(0.001)
settings = {**config.settings(), "sizes": fingerprint_array(sizes)}
entry = ArrayCache(cache_dir).get_or_build("gpt", settings, build)
digest = hashlib.sha256()
for name in sorted(entry.arrays):
    digest.update(np.ascontiguousarray(entry.arrays[name]).tobytes())
print(json.dumps({"built": entry.built, "digest": digest.hexdigest(),
                  "mmap": all(isinstance(a.base, np.memmap) for a in entry.arrays.values())}))
"""

# A builder that is killed (SIGKILL) after writing its first array into its temporary folder.
KILLED_BUILDER = r"""
import os, signal, sys
import numpy as np
from tokenmill import cache

real_write = cache._write_npy
def write_then_die(path, array):
    real_write(path, array)
    os.kill(os.getpid(), signal.SIGKILL)
cache._write_npy = write_then_die
cache.ArrayCache(sys.argv[1]).get_or_build(
    "demo", {"n": 3}, lambda: {"a": np.arange(3), "b": np.ones(3)})
"""


def run_python(code: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]))
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def test_ranks_starting_together_on_an_empty_cache_build_once_and_share(tmp_path):
    cache_dir, start_file, log_file = tmp_path / "cache", tmp_path / "go", tmp_path / "builds.log"
    ranks = [run_python(RANK, str(cache_dir), str(start_file), str(log_file)) for _ in range(4)]
    time.sleep(0.2)
    start_file.touch()
    results = []
    for rank in ranks:
        out, err = rank.communicate(timeout=120)
        assert rank.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert sum(r["built"] for r in results) == 1
    assert len(log_file.read_text().split()) == 1  # build() ran in exactly one process
    assert len({r["digest"] for r in results}) == 1
    assert all(r["mmap"] for r in results)
    assert len([p for p in cache_dir.iterdir() if p.is_dir()]) == 1  # no temporaries left behind


def test_a_killed_builder_leaves_no_entry_and_blocks_nobody(tmp_path):
    killed = run_python(KILLED_BUILDER, str(tmp_path))
    killed.communicate(timeout=60)
    assert killed.returncode == -9
    cache = ArrayCache(tmp_path)
    assert cache.load("demo", {"n": 3}) is None  # its half-written folder is not an entry
    assert any(".tmp-" in p.name for p in tmp_path.iterdir())
    started = time.perf_counter()
    entry = cache.get_or_build("demo", {"n": 3}, lambda: {"a": np.arange(3), "b": np.ones(3)})
    assert time.perf_counter() - started < 5  # the dead builder's lock was released by the OS
    assert entry.built and entry.arrays["a"].tolist() == [0, 1, 2]
    assert not any(".tmp-" in p.name for p in tmp_path.iterdir())


def test_second_call_loads_read_only_memory_maps_without_building(tmp_path):
    cache = ArrayCache(tmp_path)
    calls = []

    def build():
        calls.append(1)
        return {"x": np.arange(10, dtype=np.int64), "y": np.zeros((3, 2), dtype=np.int32)}

    first = cache.get_or_build("demo", {"seed": 1}, build, description={"note": "not hashed"})
    second = cache.get_or_build("demo", {"seed": 1}, build)
    assert first.built and not second.built and len(calls) == 1
    assert isinstance(second.arrays["x"].base, np.memmap) and not second.arrays["x"].flags.writeable
    assert second.arrays["y"].shape == (3, 2) and second.arrays["y"].dtype == np.int32
    assert json.loads((second.path / "meta.json").read_text())["description"] == {"note": "not hashed"}


def test_keys_depend_on_every_setting_but_not_on_their_order():
    base = {"seq_length": 8, "seed": 1, "sizes": "abc"}
    key = ArrayCache.key
    assert key("gpt", base) == key("gpt", dict(reversed(list(base.items()))))
    for name, other in [("seq_length", 9), ("seed", 2), ("sizes", "abd")]:
        assert key("gpt", {**base, name: other}) != key("gpt", base)
    assert key("blend", base) != key("gpt", base)


def test_fingerprint_sees_content_dtype_and_shape():
    a = np.arange(6, dtype=np.int32)
    assert fingerprint_array(a) == fingerprint_array(a.copy())
    assert fingerprint_array(a) != fingerprint_array(a.astype(np.int64))
    assert fingerprint_array(a) != fingerprint_array(a.reshape(2, 3))
    b = a.copy()
    b[3] = 99
    assert fingerprint_array(a) != fingerprint_array(b)


def test_a_tampered_entry_is_a_format_error_naming_the_folder(tmp_path):
    cache = ArrayCache(tmp_path)
    entry = cache.get_or_build("demo", {"seed": 1}, lambda: {"x": np.arange(4)})
    meta_file = entry.path / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta["settings"]["seed"] = 2
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(FormatError, match=str(entry.path)):
        cache.load("demo", {"seed": 1})
    meta["settings"]["seed"] = 1
    meta_file.write_text(json.dumps(meta))
    (entry.path / "x.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(FormatError, match="delete"):
        cache.load("demo", {"seed": 1})


def test_build_info_is_kept_and_epochs_older_than_kept_are_pruned(tmp_path):
    cache = ArrayCache(tmp_path)
    for epoch in range(1, 6):
        entry = cache.get_or_build("plan", {"plan": "p"}, lambda e=epoch: ({"order": np.arange(e)}, {"epoch": e}),
                                   epoch=epoch, keep_epochs=2)
        assert entry.built and entry.info == {"epoch": epoch}
    assert sorted(p.name.rsplit("-", 1)[1] for p in tmp_path.iterdir() if p.is_dir()) == ["e4", "e5"]
    again = cache.get_or_build("plan", {"plan": "p"}, lambda: pytest.fail("built again"), epoch=5)
    assert not again.built and again.info == {"epoch": 5} and again.arrays["order"].tolist() == list(range(5))


def test_one_variable_names_the_cache_root_and_the_older_name_still_works(tmp_path, monkeypatch):
    monkeypatch.delenv("TOKENMILL_CACHE", raising=False)
    monkeypatch.setenv("TOKENMILL_CACHE_DIR", str(tmp_path / "old"))
    assert default_cache_dir() == tmp_path / "old" / "arrays"
    monkeypatch.setenv("TOKENMILL_CACHE", str(tmp_path / "new"))
    assert default_cache_dir() == tmp_path / "new" / "arrays"
    monkeypatch.delenv("TOKENMILL_CACHE")
    monkeypatch.delenv("TOKENMILL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "tokenmill" / "arrays"


def test_cache_arguments_name_one_place_or_none(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKENMILL_CACHE", str(tmp_path / "root"))
    assert array_cache(True).directory == default_cache_dir() == tmp_path / "root" / "arrays"
    assert array_cache(tmp_path / "x").directory == tmp_path / "x"
    assert array_cache(str(tmp_path / "x")).directory == tmp_path / "x"
    assert array_cache(False).directory is None and array_cache(None).directory is None
    mine = ArrayCache(tmp_path)
    assert array_cache(mine) is mine and array_cache(mine.state()).directory == tmp_path
    built = array_cache(False).get_or_build("demo", {"n": 1}, lambda: {"a": np.arange(2)})
    assert built.built and built.path is None and built.arrays["a"].tolist() == [0, 1]
    assert not (tmp_path / "root").exists()  # keeping nothing writes nothing
