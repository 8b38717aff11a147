"""An LM run with Megatron's flags reads its input once: the encode stage reads the JSONL as it is and records the
items per file, and the provenance maps take that count instead of scanning every input file again; the maps
are the bytes a recount gives."""

from __future__ import annotations

import json

import pytest

from tests.vocab.multilingual import generated_lines, sample_lines
from tokenmill.prepare import build_config, prepare
from tokenmill.prepare.stages import provenance
from tokenmill.text import lines as text_lines
from tokenmill.text.sources import line_source
from tokenmill.vocab.tokenizer import train_tokenizer

LINES = sample_lines() + generated_lines(300)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm")
    model = folder / "tokenizer.json"
    train_tokenizer("hf", LINES, {"kind": "byte-level-bpe", "vocab_size": 800}, model)
    files = []
    for k in range(2):
        path = folder / f"part-{k}.jsonl"
        path.write_text("".join(json.dumps({"text": "\n".join(LINES[i : i + 3])}, ensure_ascii=k == 0) + "\n"
                                for i in range(k, len(LINES) - 3, 2)), encoding="utf-8")
        files.append(path)
    return model, files


def _run(model, files, out) -> dict[str, bytes]:
    settings = {"input": str(files[0].parent / "part-*.jsonl"), "output_prefix": str(out / "lm"),
                "json_keys": "text", "tokenizer_type": "HuggingFaceTokenizer", "tokenizer_model": str(model),
                "append_eod": True, "workers": 2}
    prepare(build_config(settings), progress=False)
    return {p.name: p.read_bytes() for p in out.iterdir() if p.suffix in (".bin", ".idx", ".prov")}


def test_the_input_files_are_counted_once_and_the_maps_are_a_recounts(inputs, tmp_path, monkeypatch):
    model, files = inputs
    scanned: list[str] = []
    scan = text_lines.scan_lines
    monkeypatch.setattr(line_source, "scan_lines",
                        lambda path, *a, **k: scanned.append(str(path)) or scan(path, *a, **k))
    once = _run(model, files, tmp_path / "once")
    assert sorted(scanned) == sorted(map(str, files))  # by the encode stage alone
    assert len(once) == 3 and (tmp_path / "once" / ".work" / "clean" / "train.text").exists() is False
    monkeypatch.setattr(provenance, "recorded_input_counts", lambda ctx, split: None)
    scanned.clear()
    assert _run(model, files, tmp_path / "recount") == once
    assert len(scanned) == 2 * len(files)  # the encode stage, then the provenance stage's own count
