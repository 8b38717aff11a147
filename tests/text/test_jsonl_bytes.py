"""JSONL read from the lines' bytes (the parser checks UTF-8) gives what the careful decode-then-parse path gives,
block by block: the same documents, counters and errors, whichever path each block takes."""

from __future__ import annotations

import json

import pytest

from tokenmill.errors import TokenmillError
from tokenmill.text.chunks import ReadOptions
from tokenmill.text.sources import JsonlSource
from tokenmill.text.sources import jsonl as jsonl_module


def _documents(path, options: ReadOptions) -> tuple[list, dict]:
    source = JsonlSource([path], "text", None, options)
    docs = [doc for chunk in source.chunks(chunk_lines=7) for doc in chunk.src]
    return docs, dict(source.stats.counts)


def _careful(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(JsonlSource, "_parse_bytes", lambda self, block, offset: None)


def _lines() -> list[bytes]:
    texts = ["plain", "", "中文 текст émoji 🎉", "tab\tand \\n escaped", "<|endoftext|> inside", "x" * 5000]
    lines = [json.dumps({"text": t, "n": i}, ensure_ascii=i % 2 == 0).encode() for i, t in enumerate(texts * 40)]
    lines[50] += b"\r"  # a CRLF line
    return lines


def test_bytes_path_equals_careful_path(tmp_path, monkeypatch):
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b"\n".join(_lines()) + b"\n")
    options = ReadOptions(block_bytes=4096)  # many blocks, lines longer than a block
    parsed = []
    parse_bytes = JsonlSource._parse_bytes
    monkeypatch.setattr(JsonlSource, "_parse_bytes",
                        lambda self, block, offset: parsed.append(parse_bytes(self, block, offset)) or parsed[-1])
    fast = _documents(path, options)
    assert all(cols is not None for cols in parsed) and len(parsed) > 10  # every block read from its bytes
    _careful(monkeypatch)
    assert fast == _documents(path, options)
    assert fast[0][2] == "中文 текст émoji 🎉" and len(fast[0]) == 240


@pytest.mark.parametrize("policy", ["replace", "skip"])
def test_a_bad_block_takes_the_careful_path(tmp_path, monkeypatch, policy):
    lines = _lines()
    lines[100] = b'{"text": "bad \xff byte"}'  # invalid UTF-8 in a later block
    lines[150] = b'{"text": "lone \\ud800 escape"}'
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"\n".join(lines))  # a BOM, no final newline
    options = ReadOptions(block_bytes=4096, on_invalid_utf8=policy)
    fast = _documents(path, options)
    assert fast[1].get("invalid_utf8_replaced" if policy == "replace" else "invalid_utf8_lines") == 2
    _careful(monkeypatch)
    assert fast == _documents(path, options)


def test_errors_name_the_line_on_either_path(tmp_path):
    lines = _lines()
    lines[120] = b'{"text": 5}'
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(TokenmillError, match=r"docs\.jsonl:121: value of 'text' is int"):
        _documents(path, ReadOptions(block_bytes=4096))


def test_without_orjson_the_careful_path_reads(tmp_path, monkeypatch):
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b"\n".join(_lines()) + b"\n")
    expected = _documents(path, ReadOptions(block_bytes=4096))
    monkeypatch.setattr(jsonl_module, "FAST_REFUSES_SURROGATES", False)
    monkeypatch.setattr(jsonl_module, "fast_loads", json.loads)
    assert _documents(path, ReadOptions(block_bytes=4096)) == expected


def test_one_call_for_a_block_gives_the_line_by_line_values(tmp_path, monkeypatch):
    """msgspec's decode_lines takes whole blocks (the lines' own ends checked first): the same documents as
    orjson line by line and as the careful path, and it does take the blocks of a plain file."""
    pytest.importorskip("msgspec")
    path = tmp_path / "docs.jsonl"
    lines = _lines()
    lines[50] = lines[50].rstrip(b"\r")
    path.write_bytes(b"\n".join(lines) + b"\n")
    options = ReadOptions(block_bytes=4096)
    taken = []
    one_call = jsonl_module._one_object_a_line
    monkeypatch.setattr(jsonl_module, "_one_object_a_line", lambda block: taken.append(one_call(block)) or taken[-1])
    fast = _documents(path, options)
    assert len(taken) > 10 and all(objs is not None for objs in taken)
    monkeypatch.setattr(jsonl_module, "_one_object_a_line", lambda block: None)
    assert fast == _documents(path, options)
    _careful(monkeypatch)
    assert fast == _documents(path, options)


@pytest.mark.parametrize("text, line", [
    (b'{"text": "a"}\n\n{"text": "b"}\n', 2),  # a blank line
    (b'{"text": "a"}{"text": "b"}\n{"text": "c"}\n', 1),  # two objects on one line
    (b'{"text": "a"} {"text": "b"}\n\n', 1),  # two objects and a blank line: as many values as lines
    (b'{"text": "a"}{"text": "b"}\n{"text": "c", "o":\n{"k": 1}}\n', 1),  # and a value across two lines
])
def test_a_blank_line_or_two_objects_on_a_line_is_an_error_naming_the_line(tmp_path, text, line):
    path = tmp_path / "docs.jsonl"
    path.write_bytes(text)
    with pytest.raises(TokenmillError, match=rf"docs\.jsonl:{line}: invalid JSON"):
        _documents(path, ReadOptions())


def _outcome(path) -> object:
    try:
        return _documents(path, ReadOptions())
    except TokenmillError as error:
        return str(error)


@pytest.mark.parametrize("field", [b'"\xff"', b'"\\ud800"', b"NaN", b"1e999"])
def test_another_keys_value_is_read_as_the_line_by_line_parsers_read_it(tmp_path, monkeypatch, field):
    """Another key's value that one parser takes and another refuses (invalid UTF-8, a lone surrogate escape,
    NaN, a number too large for a float): whichever parser takes the block, the outcome is the careful path's
    (invalid UTF-8 is an error naming the line)."""
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b'{"text": "a"}\n{"text": "b", "x": ' + field + b"}\n")
    outcome = _outcome(path)
    _careful(monkeypatch)
    assert outcome == _outcome(path)
    if field == b'"\xff"':
        assert "docs.jsonl:2: invalid UTF-8" in outcome
