"""The encode stage on worker processes that read their own ranges of the cleaned text
(prepare.encode_workers) gives what one process gives: the same stores, dictionaries, unknown surfaces
and words, byte for byte, with ranges far smaller than the split."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import yaml

from tests.prepare.conftest import SAMPLE, write_lines
from tokenmill.prepare import build_config, encode_workers, prepare
from tokenmill.prepare.stages import dictionary, encode
from tokenmill.store import IndexedDataset

RANGE = 40  # lines per worker range in these tests: every split spans several ranges
RARE = {"en": ["© 2024 ’quoted’ — Ærø", "Ǆ ǅ ǆ dz"], "zh": ["ⅷ ⓐ ㈱ 〄", "𠀀𠀁 𪚥"]}  # outside the model


def outputs(folder: Path) -> dict[str, bytes]:
    """Every store, dictionary and encode-stage table of a run, by name (not the log or manifest)."""
    names = [p for p in folder.rglob("*") if p.is_file() and p.suffix in (".bin", ".idx", ".txt", ".json")
             and p.name not in ("manifest.json", "state.json") and ".state" not in p.parts]
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in names}


def one_and_two_workers(settings: dict, tmp_path: Path, monkeypatch) -> tuple[dict, dict, int]:
    """The outputs of ``prepare`` with 1 and 2 workers, and how many encode stages ran on worker processes."""
    monkeypatch.setattr(encode_workers, "RANGE_LINES", RANGE)
    monkeypatch.setattr(encode_workers, "FORK_SHY", ())  # the suite may have imported Ray (collecting its tests)
    ran: list[int] = []
    real = encode_workers.encoded_ranges

    def spy(*args, **kwargs):
        ran.append(1)
        yield from real(*args, **kwargs)

    monkeypatch.setattr(encode, "encoded_ranges", spy)
    runs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        # the reference library: the fast encoder (--encoder auto) encodes on its own threads, not on workers
        prepare(build_config({**settings, "workers": workers, "destdir": str(out), "encoder": "reference"}),
                progress=False)
        runs[workers] = outputs(out)
    return runs[1], runs[2], len(ran)


def sample_with_rare(folder: Path, every: int = 37) -> Path:
    """The bundled en-zh sample with characters the sample's model does not know, in lines all over it."""
    folder.mkdir()
    for lang in ("en", "zh"):
        lines = (SAMPLE / f"train.{lang}").read_text(encoding="utf-8").splitlines()
        for i in range(0, len(lines), every):
            lines[i] = f"{lines[i]} {RARE[lang][(i // every) % 2]}"
        write_lines(folder / f"train.{lang}", lines)
    return folder / "train"


def test_sentencepiece_with_unknown_surfaces_in_many_ranges(sample_model, tmp_path, monkeypatch):
    """fairseq fidelity keeps every unknown piece as its surface text, numbered in order of first appearance:
    the parent numbers them range after range, so the dictionary and ids equal the one-process run's."""
    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": str(sample_with_rare(tmp_path / "raw")),
                "tokenizer_model": str(sample_model), "joined_dictionary": True}
    one, two, ran = one_and_two_workers(settings, tmp_path, monkeypatch)
    assert ran == 2  # both sides were encoded on workers
    unknown = json.loads(one[".work/ids/train.zh.unknown.json"])
    assert len(unknown) >= 4 and max(count for _, count in unknown.values()) > 1  # rare pieces, met in many ranges
    dictionary = one["dict.en.txt"].decode("utf-8")
    assert "©" in dictionary and "𪚥" in dictionary  # surfaces became words of fairseq's dictionary
    assert (tmp_path / "w2" / ".work/ids/train.zh.counts.npy").exists()  # the dictionary came from the kept counts
    assert one == two


def test_piece_filters_take_their_drops_out_of_the_kept_counts(sample_model, tmp_path, monkeypatch):
    """The workers' encode stage keeps the work ids' counts for the dictionary; pairs the piece filters drop
    afterwards leave it: those counts less the dropped items' tokens give one process's dictionaries."""
    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": str(sample_with_rare(tmp_path / "raw")),
                "tokenizer_model": str(sample_model), "filters": {"max_tokens": 25}}
    monkeypatch.setattr(dictionary, "MASK_ITEMS", 7)  # the mask in many blocks, each at its offset
    one, two, ran = one_and_two_workers(settings, tmp_path, monkeypatch)
    assert ran == 2
    pieces = json.loads((tmp_path / "w1" / "manifest.json").read_text())["summary"]["splits"]["train"]["clean"]
    assert 0 < pieces["pieces"]["dropped_tokens"] < pieces["pieces"]["pairs"] // 2  # the filter dropped some pairs
    assert one == two


def test_whitespace_words_first_met_in_later_ranges(tmp_path, monkeypatch):
    """Each range numbers its words on its own; the parent maps them to the split's order of first appearance."""
    raw = tmp_path / "raw"
    raw.mkdir()
    write_lines(raw / "train.en", [f"w{i % 7} new{i // 30} x{i % 3}" for i in range(200)])  # new words every range
    write_lines(raw / "train.de", [f"v{i % 5} neu{i // 45}" for i in range(200)])
    settings = {"source_lang": "en", "target_lang": "de", "trainpref": str(raw / "train"), "tokenizer": "none",
                "dedup": False}
    one, two, ran = one_and_two_workers(settings, tmp_path, monkeypatch)
    assert ran == 2
    words = json.loads(one[".work/ids/train.en.words.json"])
    assert words[:4] == ["w0", "new0", "x0", "w1"] and "new6" in words
    assert one == two


@pytest.mark.parametrize("backend", ["t2t-subword", "tiktoken"])
def test_other_backends_on_workers_equal_one_process(backend, tmp_path, monkeypatch):
    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": str(SAMPLE / "train")}
    if backend == "t2t-subword":
        settings.update(tokenizer="t2t-subword", approx_vocab_size=300)
    else:  # byte-level ranks: every byte is a token, so any text encodes
        model = tmp_path / "bytes.tiktoken"
        model.write_bytes(b"".join(base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256)))
        settings.update(tokenizer="tiktoken", tokenizer_model=str(model))
    one, two, ran = one_and_two_workers(settings, tmp_path, monkeypatch)
    assert ran == 2
    assert one == two


def encodes_on_workers(model: Path, out: Path, monkeypatch) -> bool:
    """Whether ``prepare --workers 2`` of the bundled sample with ``model`` calls the worker encode."""
    ran: list[int] = []
    monkeypatch.setattr(encode, "encoded_ranges", lambda *a, **k: ran.append(1) or iter(()))
    prepare(build_config({"source_lang": "en", "target_lang": "zh", "trainpref": str(SAMPLE / "train"),
                          "tokenizer_model": str(model), "destdir": str(out), "workers": 2}), progress=False)
    return bool(ran)


def test_small_splits_stay_in_one_process(sample_model, tmp_path, monkeypatch):
    """Below two ranges of lines, starting workers would cost more than it saves (one worker: see above,
    where the --workers 1 run of every test encodes in one process)."""
    monkeypatch.setattr(encode_workers, "RANGE_LINES", 10_000)
    assert not encodes_on_workers(sample_model, tmp_path / "o", monkeypatch)


def test_no_fork_where_ray_is_loaded(sample_model, tmp_path, monkeypatch):
    """A Ray driver (gRPC threads, fork handlers that stall) encodes in one process, with the same files."""
    monkeypatch.setattr(encode_workers, "RANGE_LINES", RANGE)
    monkeypatch.setitem(sys.modules, "ray", types.ModuleType("ray"))
    assert not encodes_on_workers(sample_model, tmp_path / "o", monkeypatch)
    assert (tmp_path / "o" / "manifest.json").exists()


def survivors(marker: str, wait: float = 10.0) -> list[int]:
    """Processes whose command line holds ``marker`` (forked workers keep their parent's), after up to ``wait`` s."""
    deadline = time.monotonic() + wait
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if marker.encode() in (entry / "cmdline").read_bytes():
                        found.append(int(entry.name))
                except OSError:
                    continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_killed_inside_the_encode_stage_then_rerun_gives_the_same_files(sample_model, tmp_path):
    """SIGKILL after the first range the parent wrote (workers still busy), then a re-run: the same outputs as
    an uninterrupted run, and no worker process outlives the killed run."""
    raw = sample_with_rare(tmp_path / "raw")
    config = tmp_path / "config.yaml"
    run = [sys.executable, "-c", "import sys; from tokenmill.prepare import encode_workers; "
           f"encode_workers.RANGE_LINES = {RANGE}; from tokenmill.cli import main; sys.exit(main())",
           "prepare", "-c", str(config), "-q", "--no-report"]
    made = {}
    for name, crash in (("reference", None), ("killed", "encode.train.zh:midway")):
        out = tmp_path / name
        config.write_text(yaml.safe_dump({"source_lang": "en", "target_lang": "zh", "trainpref": str(raw),
                                          "tokenizer_model": str(sample_model), "joined_dictionary": True,
                                          "workers": 2, "destdir": str(out)}), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "TOKENMILL_CRASH_AT"}
        if crash:
            killed = subprocess.run(run, env={**env, "TOKENMILL_CRASH_AT": crash}, capture_output=True, text=True,
                                    timeout=120)
            assert killed.returncode == -9, killed.stderr
            assert not (out / "manifest.json").exists()
            if sys.platform.startswith("linux"):  # workers die with their parent on Linux only (/proc read too)
                assert not survivors(str(config)), "a worker of the killed run is still alive"
        done = subprocess.run(run, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        made[name] = outputs(out)
        shutil.rmtree(out / ".work" / "clean", ignore_errors=True)
    assert made["killed"] == made["reference"]


def test_a_counts_file_that_cannot_be_read_is_counted_again(sample_model, tmp_path, monkeypatch, caplog):
    """The dictionary stage trusts the encode stage's counts file only as far as it reads as counts: a garbled
    one (its record still vouches for its size) gives a warning and the pass over the ids, not a traceback."""
    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": str(sample_with_rare(tmp_path / "raw")),
                "tokenizer_model": str(sample_model), "joined_dictionary": True}
    _, two, _ = one_and_two_workers(settings, tmp_path, monkeypatch)
    out = tmp_path / "w2"
    counts = out / ".work/ids/train.zh.counts.npy"
    counts.write_bytes(b"\x00" * counts.stat().st_size)  # same size, no .npy header
    (out / ".state" / "dictionary.json").unlink()  # the dictionary stage runs again; encode is up to date
    with caplog.at_level("WARNING", logger="tokenmill.prepare"):
        prepare(build_config({**settings, "workers": 2, "destdir": str(out)}), progress=False)
    assert "train.zh.counts.npy cannot be read" in caplog.text
    assert outputs(out)["dict.en.txt"] == two["dict.en.txt"]


def test_whitespace_words_in_small_tokenizer_calls_give_the_same_store(tmp_path, monkeypatch):
    """One process splits a chunk's words in calls of at most ENCODE_BATCH_CHARS characters (the words of a
    chunk of long documents are many Python strings): the store and the order of first appearance are those of
    one call per chunk."""
    chunks = [[f"w{i % 7} new{i // 30} " + "x " * (i % 11) for i in range(j, j + 50)] for j in range(0, 200, 50)]
    made = {}
    for chars in (40, 1 << 22):
        monkeypatch.setattr(encode, "ENCODE_BATCH_CHARS", chars)
        words = encode.encode_words(iter(chunks), tmp_path / f"c{chars}", None, "encode")
        store = IndexedDataset(tmp_path / f"c{chars}")
        made[chars] = (words, [store[i].tolist() for i in range(len(store))],
                       (tmp_path / f"c{chars}.bin").read_bytes(), (tmp_path / f"c{chars}.idx").read_bytes())
    assert made[40] == made[1 << 22]
    assert len(made[40][1]) == 200 and made[40][0][:3] == ["w0", "new0", "w1"]
