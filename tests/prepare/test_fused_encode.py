"""The clean stage encoding the training split as it cleans it (prepare.fused_encode): with a model given (or
whitespace words) and workers reading their own ranges, the stores, dictionaries, unknown surfaces and words
equal a one-process run's byte for byte, duplicates dropped after encoding included; the encode stage adopts
the clean stage's stores only when they were made for its key."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.prepare.conftest import SAMPLE, write_lines
from tests.prepare.test_encode_workers import RARE, outputs
from tokenmill.prepare import build_config, encode_workers, pipeline, prepare
from tokenmill.prepare.encode_workers import FirstSeen, RangeEncoder, word_ids

RANGE = 40  # lines per clean and encode range: every split spans several ranges
RECORD = ".work/ids/train.fused.json"


@pytest.fixture
def small_ranges(monkeypatch):
    """Ranges of 40 lines, workers reading their own ranges even for a small corpus, and (fused or not) a count of
    the encode stages that encoded the cleaned text themselves."""
    monkeypatch.setattr(encode_workers, "RANGE_LINES", RANGE)
    monkeypatch.setattr(encode_workers, "FORK_SHY", ())  # the suite may have imported Ray (collecting its tests)
    monkeypatch.setattr(pipeline, "_PARALLEL_CLEAN_MIN_LINES", 0)
    monkeypatch.setattr(pipeline, "_CLEAN_CHUNK_LINES", RANGE)
    encoded: list[int] = []
    real = pipeline.Pipeline.encode_lines, encode_workers.encoded_ranges

    def lines_spy(self, *args, **kwargs):
        encoded.append(1)
        return real[0](self, *args, **kwargs)

    def ranges_spy(*args, **kwargs):
        encoded.append(1)
        yield from real[1](*args, **kwargs)

    monkeypatch.setattr(pipeline.Pipeline, "encode_lines", lines_spy)
    monkeypatch.setattr(pipeline, "encoded_ranges", ranges_spy)
    monkeypatch.setattr(pipeline, "encode_words", _counting(pipeline.encode_words, encoded))
    return encoded


def _counting(function, calls: list[int]):
    def counted(*args, **kwargs):
        calls.append(1)
        return function(*args, **kwargs)

    return counted


def run(settings: dict, out: Path, workers: int) -> dict[str, bytes]:
    prepare(build_config({**settings, "workers": workers, "destdir": str(out)}), progress=False)
    return outputs(out)


def fused_and_one_process(settings: dict, tmp_path: Path, encoded: list[int]) -> tuple[dict, dict]:
    """The outputs of ``--workers 1`` and of a fused ``--workers 2`` run (checked to have fused: no encode stage
    encoded anything), the fused run's record left out."""
    one = run(settings, tmp_path / "w1", 1)
    assert encoded, "the one-process run encodes in its encode stage"
    encoded.clear()
    two = run(settings, tmp_path / "w2", 2)
    assert not encoded, "the clean stage encoded every side: the encode stages adopted its stores"
    assert RECORD in two and RECORD not in one
    del two[RECORD]
    return one, two


def corpus_with_duplicates(folder: Path, every: int = 37) -> Path:
    """The bundled en-zh sample with characters the sample's model does not know, and duplicate pairs in later
    ranges (among them pairs holding those characters): dedup drops lines after the workers encoded them."""
    folder.mkdir()
    lines = {lang: (SAMPLE / f"train.{lang}").read_text(encoding="utf-8").splitlines() for lang in ("en", "zh")}
    for lang, side in lines.items():
        for i in range(0, len(side), every):
            side[i] = f"{side[i]} {RARE[lang][(i // every) % 2]}"
    size = len(lines["en"])
    repeats = [*range(0, size, 23), 0, 37, 74]  # pairs seen again later, rare ones included
    for lang, side in lines.items():
        write_lines(folder / f"train.{lang}", side + [side[i] for i in repeats] + side[: 3 * RANGE])
    return folder / "train"


@pytest.mark.parametrize("joined", [True, False])
def test_sentencepiece_fused_equals_one_process(joined, sample_model, tmp_path, small_ranges):
    """Unknown surfaces of dropped duplicates are not numbered: the table and the dictionaries (built from the
    counts kept while encoding) equal one process's (built from a pass over the ids)."""
    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": str(corpus_with_duplicates(tmp_path / "raw")),
                "tokenizer_model": str(sample_model), "joined_dictionary": joined}
    one, two = fused_and_one_process(settings, tmp_path, small_ranges)
    clean = json.loads((tmp_path / "w1" / "manifest.json").read_text())["summary"]["splits"]["train"]["clean"]
    assert clean["dedup"]["duplicates"] > 3 * RANGE  # duplicates were dropped, in many ranges
    assert "𪚥" in one["dict.zh.txt"].decode("utf-8")  # unknown surfaces became dictionary words
    assert all((tmp_path / "w2" / f".work/ids/train.{lang}.counts.npy").exists() for lang in ("en", "zh"))
    assert one == two


def test_piece_filters_take_their_drops_out_of_the_kept_counts(sample_model, tmp_path, small_ranges):
    """Pairs the piece filters drop after encoding leave the dictionary: the counts kept while encoding, less the
    dropped items' tokens, give one process's dictionaries."""
    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": str(corpus_with_duplicates(tmp_path / "raw")),
                "tokenizer_model": str(sample_model), "filters": {"max_tokens": 25}}
    one, two = fused_and_one_process(settings, tmp_path, small_ranges)
    pieces = json.loads((tmp_path / "w1" / "manifest.json").read_text())["summary"]["splits"]["train"]
    assert 0 < pieces["clean"]["pieces"]["dropped_tokens"] < pieces["clean"]["pieces"]["pairs"] // 2  # some dropped
    assert one == two


def test_whitespace_with_a_duplicate_dropped_after_encoding(tmp_path, small_ranges):
    """Words numbered range after range in input order, a duplicate pair dropped in a later range after its
    worker encoded it: the words and ids equal one process's."""
    raw = tmp_path / "raw"
    raw.mkdir()
    en = [f"w{i % 7} new{i // 30} x{i % 3}" for i in range(200)]
    de = [f"v{i % 5} neu{i // 45}" for i in range(200)]
    en[130], de[130] = en[10], de[10]  # a duplicate pair in a later range, before new words of its own range
    write_lines(raw / "train.en", en)
    write_lines(raw / "train.de", de)
    settings = {"source_lang": "en", "target_lang": "de", "trainpref": str(raw / "train"), "tokenizer": "none"}
    one, two = fused_and_one_process(settings, tmp_path, small_ranges)
    assert one == two


@pytest.mark.parametrize("backend", ["t2t-subword", "tiktoken"])
def test_other_backends_fused_equal_one_process(backend, tmp_path, small_ranges):
    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": str(corpus_with_duplicates(tmp_path / "raw"))}
    if backend == "t2t-subword":  # a vocabulary made first, then given
        vocab_run = tmp_path / "vocab"
        prepare(build_config({**settings, "tokenizer": "t2t-subword", "approx_vocab_size": 300, "workers": 1,
                              "destdir": str(vocab_run)}), progress=False)
        model = next(vocab_run.glob("vocab*.subwords"))
        settings.update(tokenizer="t2t-subword", tokenizer_model=str(model))
    else:  # byte-level ranks: every byte is a token, so any text encodes
        model = tmp_path / "bytes.tiktoken"
        model.write_bytes(b"".join(base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256)))
        settings.update(tokenizer="tiktoken", tokenizer_model=str(model))
    one, two = fused_and_one_process(settings, tmp_path, small_ranges)
    assert one == two


def test_encode_stage_encodes_again_when_the_record_is_not_its_own(sample_model, tmp_path, small_ranges):
    """The clean stage's stores are adopted only for the key they were made for: a record for another key
    (a changed model, a stale folder) makes the encode stage encode the cleaned text, with the same result."""
    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": str(corpus_with_duplicates(tmp_path / "raw")),
                "tokenizer_model": str(sample_model), "joined_dictionary": True}
    out = tmp_path / "w2"
    first = run(settings, out, 2)
    record = out / RECORD
    forged = json.loads(record.read_text())
    forged["key"] = "0" * 32
    record.write_text(json.dumps(forged))
    for stage in (out / ".state").glob("encode.*"):
        stage.unlink()  # the encode stages run again; the clean stage is up to date (its record is kept)
    small_ranges.clear()
    again = run(settings, out, 2)
    assert len(small_ranges) == 2  # both sides encoded by the encode stage
    assert {k: v for k, v in again.items() if k != RECORD} == {k: v for k, v in first.items() if k != RECORD}


def test_a_range_keeps_what_encoding_the_kept_lines_gives():
    """EncodedRange.kept equals encoding only the kept lines (whitespace words renumbered in their order there)."""
    lines = ["a b c", "d a", "e f", "a b c", "g d", "f h"]
    keep = np.array([True, False, True, False, True, True])
    encoder = RangeEncoder(None, False, 1 << 20)
    kept = encoder(lines).kept(keep)
    table = FirstSeen()
    flat, lengths = word_ids([line for line, k in zip(lines, keep, strict=True) if k], table)
    assert kept.words == list(table) == ["a", "b", "c", "e", "f", "g", "d", "h"]
    assert kept.flat.tolist() == flat.tolist() and kept.lengths.tolist() == lengths.tolist()
    assert kept.lines == 4


@pytest.mark.parametrize("crash", ["clean.train:midway", "clean.train", "encode.train.en"])
def test_killed_while_fused_then_rerun_gives_the_same_files(crash, sample_model, tmp_path):
    """SIGKILL inside the clean stage (its id stores half written), after it (stores recorded, not yet adopted)
    or between the two encode stages, then a re-run: the files of an uninterrupted run."""
    raw = corpus_with_duplicates(tmp_path / "raw")
    config = tmp_path / "config.yaml"
    patch = (f"from tokenmill.prepare import encode_workers, pipeline; encode_workers.RANGE_LINES = {RANGE}; "
             f"encode_workers.FORK_SHY = (); pipeline._PARALLEL_CLEAN_MIN_LINES = 0; "
             f"pipeline._CLEAN_CHUNK_LINES = {RANGE}")
    command = [sys.executable, "-c", f"import sys; {patch}; from tokenmill.cli import main; sys.exit(main())",
               "prepare", "-c", str(config), "-q", "--no-report"]
    env = {k: v for k, v in os.environ.items() if k != "TOKENMILL_CRASH_AT"}
    made = {}
    for name, point in (("reference", None), ("killed", crash)):
        out = tmp_path / name
        config.write_text(yaml.safe_dump({"source_lang": "en", "target_lang": "zh", "trainpref": str(raw),
                                          "tokenizer_model": str(sample_model), "joined_dictionary": True,
                                          "workers": 2, "destdir": str(out)}), encoding="utf-8")
        if point:
            killed = subprocess.run(command, env={**env, "TOKENMILL_CRASH_AT": point}, capture_output=True,
                                    text=True, timeout=120)
            assert killed.returncode == -9, killed.stderr
            assert not (out / "manifest.json").exists()
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        made[name] = outputs(out)
    assert RECORD in made["killed"]  # the re-run fused (or adopted what the killed run had fused)
    assert made["killed"] == made["reference"]


def test_a_record_outlived_by_its_stores_is_not_adopted(sample_model, tmp_path, small_ranges):
    """Model A (fused), then model B with the clean stage up to date (the encode stage overwrites the stores),
    then A again: A's record must not bring back stores that now hold B's ids."""
    raw = corpus_with_duplicates(tmp_path / "raw")
    other = tmp_path / "other"
    prepare(build_config({"source_lang": "en", "target_lang": "zh", "trainpref": str(raw), "destdir": str(other),
                          "vocab_size": 150, "joined_dictionary": True, "workers": 1}), progress=False)
    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": str(raw), "joined_dictionary": True}
    out = tmp_path / "w2"
    first = run({**settings, "tokenizer_model": str(sample_model)}, out, 2)
    middle = run({**settings, "tokenizer_model": str(other / "spm.model")}, out, 2)
    assert RECORD not in middle  # gone before B's ids replaced A's (sizes alone could match)
    again = run({**settings, "tokenizer_model": str(sample_model)}, out, 2)
    assert {k: v for k, v in again.items() if k != RECORD} == {k: v for k, v in first.items() if k != RECORD}


def test_monolingual_whitespace_fused_equals_one_process(tmp_path, small_ranges):
    raw = tmp_path / "raw"
    raw.mkdir()
    write_lines(raw / "train.en", [f"w{i % 7} new{i // 30} x{i % 3}" for i in range(150)] * 2)  # duplicates
    settings = {"source_lang": "en", "trainpref": str(raw / "train"), "tokenizer": "none"}
    one, two = fused_and_one_process(settings, tmp_path, small_ranges)
    assert one == two
