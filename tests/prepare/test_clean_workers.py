"""The clean stage on worker processes that read their own input ranges (prepare.parallel.clean_blocks)
gives what one process gives: the cleaned files, every counter, the drop sample and the stores."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tokenmill.errors import TokenmillError
from tokenmill.prepare import build_config, parallel, prepare
from tokenmill.prepare.stages import clean
from tokenmill.text.line_block import LineBlock

SRC = [f"s{i % 10} w{i % 5}  w{i % 2}\tx" for i in range(120)]  # repeats: dedup drops some in every chunk
TGT = [f"t{i % 10} v{i % 5} y" if i % 17 else "" for i in range(120)]  # empty targets: the filter drops them


def _write(path: Path, lines: list[str], *, bom: bool = False, gz: bool = False) -> None:
    data = ("\ufeff" if bom else "") + "".join(line + "\n" for line in lines)
    if gz:
        path.write_bytes(gzip.compress(data.encode("utf-8")))
    else:
        path.write_text(data, encoding="utf-8")


def _case(name: str, raw: Path) -> tuple[dict, bool]:
    """Settings of one input layout, and whether the workers read it themselves."""
    base = {"tokenizer": "none", "chunk_lines": 7, "joined_dictionary": True, "source_lang": "en"}
    if name == "two prefixes, BOM in the second":  # chunks run across the two files
        _write(raw / "a.en", SRC[:50])
        _write(raw / "a.de", TGT[:50])
        _write(raw / "b.en", SRC[50:], bom=True)
        _write(raw / "b.de", TGT[50:])
        return {**base, "target_lang": "de", "trainpref": f"{raw / 'a'},{raw / 'b'}"}, True
    if name == "monolingual":
        _write(raw / "m.en", SRC)
        return {**base, "trainpref": str(raw / "m")}, True
    if name == "jsonl, whitespace kept":  # quoted cleaned files: a value may hold a newline
        rows = [json.dumps({"en": s.replace("x", "x\ny"), "de": t}) for s, t in zip(SRC, TGT, strict=True)]
        (raw / "j.jsonl").write_text("".join(r + "\n" for r in rows), encoding="utf-8")
        return {**base, "target_lang": "de", "trainpref": str(raw / "j.jsonl"), "input_format": "jsonl",
                "normalize": {"collapse_whitespace": False}}, True
    if name == "gzip (read in one process)":
        _write(raw / "g.en", SRC, gz=True)
        _write(raw / "g.de", TGT, gz=True)
        return {**base, "target_lang": "de", "trainpref": str(raw / "g")}, False
    assert name == "invalid UTF-8 replaced (read in one process)"
    _write(raw / "u.en", SRC)
    _write(raw / "u.de", TGT)
    data = (raw / "u.de").read_bytes()
    (raw / "u.de").write_bytes(data.replace(b"t5 v0", b"t5\xff v0", 1))
    return {**base, "target_lang": "de", "trainpref": str(raw / "u"), "on_invalid_utf8": "replace"}, False


CASES = ["two prefixes, BOM in the second", "monolingual", "jsonl, whitespace kept", "gzip (read in one process)",
         "invalid UTF-8 replaced (read in one process)"]


def one_and_two_workers(settings: dict, tmp_path: Path, monkeypatch) -> tuple[bool, dict[int, Any]]:
    """``prepare`` of ``settings`` with 1 and 2 workers (cleaning on workers at any size): whether the workers
    read their own ranges (``clean_blocks`` ran), and each run's summary, or its error text (destdir blanked)."""
    monkeypatch.setattr(clean, "PARALLEL_CLEAN_MIN_LINES", 0)
    calls: list[int] = []
    real = parallel.clean_blocks

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(clean, "clean_blocks", spy)
    runs: dict[int, Any] = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        try:
            runs[workers] = prepare(build_config({**settings, "workers": workers, "destdir": str(out)}),
                                    progress=False)
        except TokenmillError as error:
            runs[workers] = str(error).replace(str(out), "OUT")
    return bool(calls), runs


@pytest.mark.parametrize("case", CASES)
def test_workers_reading_their_ranges_give_one_process_outputs(case: str, tmp_path: Path, monkeypatch) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    settings, in_workers = _case(case, raw)
    used_workers, runs = one_and_two_workers(settings, tmp_path, monkeypatch)
    assert not any(isinstance(run, str) for run in runs.values()), runs
    assert used_workers == in_workers
    one, two = runs[1].destdir, runs[2].destdir
    assert runs[1].splits == runs[2].splits
    assert list(runs[1].splits["train"]["clean"]["read"]) == list(runs[2].splits["train"]["clean"]["read"])
    assert runs[1].splits["train"]["clean"]["dedup"]["duplicates"] > 0
    names = [p.name for p in sorted((one / ".work" / "clean").iterdir())]
    assert names and names == [p.name for p in sorted((two / ".work" / "clean").iterdir())]
    for name in names:
        assert (one / ".work" / "clean" / name).read_bytes() == (two / ".work" / "clean" / name).read_bytes(), name
    dropped = sorted(p.relative_to(one) for p in (one / ".work" / "dropped").iterdir())
    assert dropped
    for relative in dropped:
        assert (one / relative).read_bytes() == (two / relative).read_bytes(), relative
    stores = sorted(p.name for p in one.iterdir() if p.suffix in (".bin", ".idx") or p.name.startswith("dict"))
    assert stores
    for name in stores:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name


def test_a_bad_line_read_by_a_worker_stops_the_run_naming_file_and_line(tmp_path: Path, monkeypatch) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    _write(raw / "u.en", SRC)
    rows = [line.encode("utf-8") for line in TGT]
    rows[20] = b"t0\xff v0 y"  # line 21, in the third chunk of 7
    (raw / "u.de").write_bytes(b"".join(row + b"\n" for row in rows))
    monkeypatch.setattr(clean, "PARALLEL_CLEAN_MIN_LINES", 0)
    settings = {"tokenizer": "none", "chunk_lines": 7, "source_lang": "en", "target_lang": "de", "workers": 2,
                "trainpref": str(raw / "u"), "destdir": str(tmp_path / "out")}
    with pytest.raises(TokenmillError, match=r"u\.de:21: invalid UTF-8"):
        prepare(build_config(settings), progress=False)
    assert not (tmp_path / "out" / ".work" / "clean" / "train.en").exists()


@pytest.mark.parametrize("quoted", [False, True])
def test_line_block_reads_back_lines_and_keeps_a_mask(quoted: bool) -> None:
    lines = ["a b", "", "ü\u2028x", "d\ne" if quoted else "d e", "f"]
    block = LineBlock.from_lines(lines, quoted)
    assert len(block) == len(lines)
    assert [block[i] for i in range(len(lines))] == lines
    keep = np.array([True, False, True, False, True])
    again = LineBlock(block.kept(keep), quoted)
    assert [again[i] for i in range(len(again))] == [line for line, k in zip(lines, keep, strict=True) if k]
    assert block.kept(np.ones(len(lines), dtype=bool)) == block.data
    assert LineBlock.from_lines([], quoted).data == b""
