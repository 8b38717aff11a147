"""The ISO 639 table (text/lid/table.py) is what scripts/make_lid_table.py writes from SIL's tables today, and
it covers every language heliport labels."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tokenmill.text.lid import make_backend
from tokenmill.text.lid.labels import NO_LANGUAGE, macrolanguage
from tokenmill.text.lid.table import ISO639_1, MACROLANGUAGES

ROOT = Path(__file__).resolve().parents[3]


def test_the_table_is_what_the_script_writes() -> None:
    pytest.importorskip("iso639", reason="python-iso639 (iso639-lang) is the table's source")
    spec = importlib.util.spec_from_file_location("make_lid_table", ROOT / "scripts" / "make_lid_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_lid_table"] = module
    spec.loader.exec_module(module)
    written = (ROOT / "src" / "tokenmill" / "text" / "lid" / "table.py").read_text(encoding="utf-8")
    assert module.render() == written
    assert len(ISO639_1) >= 180 and len(MACROLANGUAGES) >= 60


def test_every_heliport_label_is_an_iso639_3_language() -> None:
    pytest.importorskip("heliport")
    pytest.importorskip("iso639")
    from iso639 import Lang

    backend = make_backend("heliport")
    for label in backend.labels:
        code = backend.language(label)
        if code in NO_LANGUAGE:
            continue
        assert Lang(code).pt3 == code, label  # a real ISO 639-3 code (python-iso639 raises otherwise)
    assert len(backend.labels) >= 220
    assert macrolanguage(backend.language("hbshrv")) == "hbs"
