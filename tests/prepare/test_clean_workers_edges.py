"""Input edge cases for the clean stage's workers that read their own ranges (prepare.parallel.clean_blocks):
CRLF, a last line without a newline, empty files, several files per side, line separators other than
``\\n`` inside a line. Each gives the one-process cleaned files, counters, drop sample and stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.prepare.test_clean_workers import one_and_two_workers

SRC = [f"s{i % 9} w{i % 4}\u2028z\x1cq\x0bk\x85m\rr {i % 3}" if i % 11 == 3 else f"s{i % 9} w{i % 4} {i % 3}"
       for i in range(90)]
TGT = [f"t{i % 9} v{i % 4}" if i % 13 != 5 else "" for i in range(90)]  # never last in a file: a last
# empty line without its newline is no line at all


def _write(path: Path, lines: list[str], *, newline: str = "\n", last: bool = True, bom: bool = False) -> None:
    text = newline.join(lines) + (newline if last and lines else "")
    path.write_bytes((("\ufeff" if bom else "") + text).encode("utf-8"))


def _layout(name: str, raw: Path) -> str:
    """Write one input layout under ``raw``; return its --trainpref."""
    if name == "CRLF, BOM, no newline at the end":
        _write(raw / "a.en", SRC, newline="\r\n", last=False, bom=True)
        _write(raw / "a.de", TGT, newline="\r\n", last=False)
        return str(raw / "a")
    if name == "three prefixes, an empty one, one without a last newline":
        _write(raw / "a.en", SRC[:40], last=False)
        _write(raw / "a.de", TGT[:40], last=False)
        _write(raw / "b.en", [])
        _write(raw / "b.de", [])
        _write(raw / "c.en", SRC[40:], newline="\r\n", bom=True)
        _write(raw / "c.de", TGT[40:])
        return ",".join(str(raw / p) for p in "abc")
    assert name == "only empty files"
    _write(raw / "e.en", [])
    _write(raw / "e.de", [])
    return str(raw / "e")


LAYOUTS = ["CRLF, BOM, no newline at the end", "three prefixes, an empty one, one without a last newline",
           "only empty files"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_workers_reading_edge_inputs_give_one_process_outputs(layout: str, tmp_path: Path, monkeypatch) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    trainpref = _layout(layout, raw)
    settings = {"tokenizer": "none", "chunk_lines": 7, "joined_dictionary": True, "source_lang": "en",
                "target_lang": "de", "trainpref": trainpref}
    used_workers, outcome = one_and_two_workers(settings, tmp_path, monkeypatch)
    empty = layout == "only empty files"
    if isinstance(outcome[1], str) or isinstance(outcome[2], str):  # only all-empty input may stop the run
        assert empty and outcome[1] == outcome[2], outcome
        return
    assert used_workers
    assert outcome[1].splits == outcome[2].splits
    one, two = outcome[1].destdir, outcome[2].destdir
    assert empty or outcome[1].splits["train"]["clean"]["dedup"]["duplicates"] > 0
    files = sorted(p.relative_to(one) for folder in ("clean", "dropped") if (one / ".work" / folder).is_dir()
                   for p in (one / ".work" / folder).iterdir())
    files += sorted(p.relative_to(one) for p in one.iterdir()
                    if p.suffix in (".bin", ".idx") or p.name.startswith("dict"))
    assert len(files) > (2 if empty else 4)
    for relative in files:
        assert (one / relative).read_bytes() == (two / relative).read_bytes(), relative
    lines = (one / ".work" / "clean" / "train.en").read_bytes().split(b"\n")
    assert len(lines) - 1 == outcome[1].splits["train"]["clean"]["kept"]["pairs"]
