"""The report's language mix: prepare with a language filter, then the page shows each side's labels with the
counts the manifest records, most frequent first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenmill.prepare import build_config, prepare
from tokenmill.report import write_report
from tokenmill.report.language_mix import TOP, language_mix

pytest.importorskip("heliport")
SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"


def test_page_shows_the_language_mix_of_each_side(tmp_path: Path) -> None:
    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": [str(SAMPLE / "train")],
                "destdir": str(tmp_path / "bin"), "tokenizer": "none", "workers": 1,
                "filters": {"src_lang": "eng", "tgt_lang": "zho_Hans"}}
    prepare(build_config(settings), progress=False)
    manifest = json.loads((tmp_path / "bin" / "manifest.json").read_text(encoding="utf-8"))
    counters = manifest["summary"]["splits"]["train"]["clean"]["filter"]
    assert manifest["settings"]["filters"]["lid_backend"] == "heliport"
    src = {k.removeprefix("lid_src_"): v for k, v in counters.items() if k.startswith("lid_src_")}
    tgt = {k.removeprefix("lid_tgt_"): v for k, v in counters.items() if k.startswith("lid_tgt_")}
    assert max(src, key=src.get) == "eng" and max(tgt, key=tgt.get) == "cmn"
    earlier = sum(v for k, v in counters.items() if k.startswith("dropped_") and k != "dropped_langid")
    reached = counters["pairs"] - earlier
    assert sum(src.values()) == sum(tgt.values()) == reached  # every line that reached language ID, once

    page, numbers = write_report(tmp_path / "bin", tmp_path / "page.html")
    mix = numbers["parts"][0]["cleaning"]["language_mix"]
    assert mix["src"][0]["label"] == "eng" and mix["tgt"][0]["label"] == "cmn"
    assert {row["label"]: row["lines"] for row in mix["src"]} == src  # fewer than TOP labels: all shown
    html = page.read_text(encoding="utf-8")
    assert "Language mix" in html and "lid_src_eng&quot;]" in html and "lid_tgt_cmn&quot;]" in html


def test_long_tails_are_summed_into_one_row() -> None:
    counters = {f"lid_src_l{i:02d}": 100 - i for i in range(TOP + 5)} | {"dropped_langid": 3, "pairs": 9}
    rows = language_mix({"filter": counters})["src"]
    assert len(rows) == TOP + 1 and rows[0] == {"label": "l00", "lines": 100, "counter": "lid_src_l00"}
    assert rows[-1] == {"label": "other (5 labels)", "lines": sum(100 - i for i in range(TOP, TOP + 5)),
                        "counter": None}
    assert language_mix({"filter": {"pairs": 3}}) == {}
