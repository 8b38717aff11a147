"""Input edge cases for the clean stage's workers that read their own ranges (prepare.parallel.clean_blocks):
CRLF, a last line without a newline, empty files, several files per side, line separators other than
``\\n`` inside a line. Each gives the one-process cleaned files, counters, drop sample and stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenmill.prepare import build_config, parallel, pipeline, prepare

SRC = [f"s{i % 9} w{i % 4}\u2028z\x1cq\x0bk\x85m\rr {i % 3}" if i % 11 == 3 else f"s{i % 9} w{i % 4} {i % 3}"
       for i in range(90)]
TGT = [f"t{i % 9} v{i % 4}" if i % 13 else "" for i in range(90)]


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
    monkeypatch.setattr(pipeline, "_PARALLEL_CLEAN_MIN_LINES", 0)
    calls: list[int] = []
    real = parallel.clean_blocks

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "clean_blocks", spy)
    settings = {"tokenizer": "none", "chunk_lines": 7, "joined_dictionary": True, "source_lang": "en",
                "target_lang": "de", "trainpref": trainpref}
    outcome = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        try:
            outcome[workers] = prepare(build_config({**settings, "workers": workers, "destdir": str(out)}),
                                       progress=False)
        except Exception as error:  # the same error either way is fine (all-empty input)
            outcome[workers] = f"{type(error).__name__}: {error}".replace(str(out), "OUT")
    if isinstance(outcome[1], str):
        assert outcome[1] == outcome[2]
        return
    assert calls
    assert outcome[1].splits == outcome[2].splits
    one, two = outcome[1].destdir, outcome[2].destdir
    empty = layout == "only empty files"
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
