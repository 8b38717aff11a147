"""``Dictionary.load``'s one-scan reading of plain fairseq dictionaries gives what the line-by-line
reading gives, and leaves every other file (and every bad line) to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenmill.errors import FormatError
from tokenmill.vocab.dictionary import Dictionary

ODD_TOKENS = ["▁the", "a\tb", "x y", "\u3000", "#fairseq:overwrite", "x\x0by", "p\u2028q", "r\x85s", "٣", "-",
              "12", "<blank>", "madeupword0000", "  lead", "trail "]


def line_by_line(path: Path) -> Dictionary:
    """The reading :meth:`Dictionary.load` used for every file before its one-scan path."""
    dictionary = Dictionary()
    with open(path, encoding="utf-8") as handle:
        numbered = [(n, raw.rstrip("\n")) for n, raw in enumerate(handle, start=1) if raw.strip()]
    dictionary._add_fairseq(path, numbered)
    return dictionary


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("last_newline", [True, False])
def test_one_scan_equals_line_by_line(tmp_path: Path, newline: str, last_newline: bool) -> None:
    counts = [5, 0, -3, 7, 1, 2, 9, 4, 3, 1, 8, 6, 1, 2, 100]
    body = newline.join(f"{t} {c}" for t, c in zip(ODD_TOKENS, counts, strict=True))
    body = body.replace(" 1" + newline, " 0001" + newline, 1)  # leading zeros are digits too
    path = tmp_path / "dict.txt"
    path.write_bytes((body + (newline if last_newline else "")).encode("utf-8"))
    text = path.read_text(encoding="utf-8")
    assert Dictionary()._add_fairseq_fast(text.replace("\r\n", "\n"))  # the scan takes this file
    loaded, expected = Dictionary.load(path), line_by_line(path)
    assert loaded.symbols == expected.symbols
    assert loaded.counts == expected.counts
    assert loaded.indices == expected.indices
    assert loaded.format == "fairseq"
    assert [loaded.index(t) for t in ODD_TOKENS] == list(range(4, 4 + len(ODD_TOKENS)))


@pytest.mark.parametrize(
    "text",
    [
        "a 1\n\nb 2\n",  # a blank line
        "a 1\n   \nb 2\n",  # a line of spaces
        "a 1\nb 2 #fairseq:overwrite\n",  # the overwrite flag
        "a 1\na 2\n",  # a repeated token
        "a 1\n<unk> 2\n",  # a special
        "a 1\nb +2\n",  # a count that is not plain digits
        "a 1\nb 2_0\n",
        "a 1\nb\n",
        "<blank> 3\na 1\n",  # an OpenNMT vocabulary with counts
        "a\t1\nb\t2\n",  # OpenNMT-py
        "a\nb\n",  # OpenNMT-tf
        "",
    ],
)
def test_anything_else_is_left_to_the_line_by_line_reading(text: str) -> None:
    dictionary = Dictionary()
    assert not dictionary._add_fairseq_fast(text)
    assert dictionary.symbols == ["<s>", "<pad>", "</s>", "<unk>"] and len(dictionary.indices) == 4


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a 1\nb 2\na 3\n", r"dict.txt:3: duplicate token 'a'"),
        ("a 1\nb x\n", r"dict.txt:2: expected '<token> <count>', got 'b x'"),
        ("a 1\n\nb 2\n c\n", r"dict.txt:4: expected '<token> <count>', got ' c'"),
    ],
)
def test_bad_lines_are_still_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "dict.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FormatError, match=message):
        Dictionary.load(path)


def test_overwrite_flag_and_blank_lines_read_as_before(tmp_path: Path) -> None:
    path = tmp_path / "dict.txt"
    path.write_text("a 1\n\nb 2\na 5 #fairseq:overwrite\n", encoding="utf-8")
    loaded, expected = Dictionary.load(path), line_by_line(path)
    assert loaded.symbols == expected.symbols == ["<s>", "<pad>", "</s>", "<unk>", "a", "b", "a"]
    assert loaded.counts == expected.counts and loaded.indices == expected.indices


def fairseq_finalize(counts: dict[str, int], threshold: int, nwords: int, padding_factor: int,
                     extra: list[str]) -> Dictionary:
    """The symbol-by-symbol build :meth:`Dictionary.from_counts` replaced (fairseq's ``finalize``)."""
    from collections import Counter

    dictionary = Dictionary()
    for symbol in extra:
        dictionary.add_symbol(symbol, 1)
    limit = len(dictionary) + len(counts) if nwords <= 0 else nwords
    for symbol, count in Counter(dict(sorted(counts.items()))).most_common(max(limit - len(dictionary), 0)):
        if count >= threshold and symbol not in dictionary.indices:
            dictionary.add_symbol(symbol, count)
    dictionary.pad_to_multiple(padding_factor)
    return dictionary


@pytest.mark.parametrize(("threshold", "nwords", "padding_factor"), [(-1, -1, 8), (3, -1, 1), (-1, 40, 8), (2, 25, 4),
                                                                     (1, 3, 8), (100, -1, 8)])
def test_built_like_fairseq_and_saved_as_before(tmp_path: Path, threshold: int, nwords: int,
                                                padding_factor: int) -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(60)] + ["<unk>", "</s>", "▁a", "tag", "A", "a"]
    counts = {w: int(c) for w, c in zip(words, rng.integers(0, 6, size=len(words)), strict=True)}  # many ties
    extra = ["tag", "<lang_x>", "tag"]
    built = Dictionary.from_counts(counts, threshold=threshold, nwords=nwords, padding_factor=padding_factor,
                                   extra_symbols=extra)
    expected = fairseq_finalize(counts, threshold, nwords, padding_factor, extra)
    assert built.symbols == expected.symbols and built.counts == expected.counts
    assert built.indices == expected.indices
    built.save(tmp_path / "new.txt")
    with open(tmp_path / "old.txt", "w", encoding="utf-8") as handle:
        for symbol, count in zip(expected.symbols[4:], expected.counts[4:], strict=True):
            handle.write(f"{symbol} {count}\n")
    assert (tmp_path / "new.txt").read_bytes() == (tmp_path / "old.txt").read_bytes()
    again = Dictionary.load(tmp_path / "new.txt")
    assert again.symbols == built.symbols and again.counts == built.counts


def test_the_same_bytes_are_parsed_once_and_every_load_is_its_own(tmp_path: Path, monkeypatch) -> None:
    import tokenmill.vocab.dictionary as module

    monkeypatch.setattr(module, "_READ", module._ReadCache())
    parsed: list[str] = []
    real = Dictionary._add_fairseq_fast

    def counting(self, text):
        parsed.append(text)
        return real(self, text)

    monkeypatch.setattr(Dictionary, "_add_fairseq_fast", counting)
    (tmp_path / "dict.en.txt").write_text("a 3\nb 2\n", encoding="utf-8")
    (tmp_path / "dict.de.txt").write_text("a 3\nb 2\n", encoding="utf-8")  # a joined dictionary: same bytes
    first, second = Dictionary.load(tmp_path / "dict.en.txt"), Dictionary.load(tmp_path / "dict.de.txt")
    assert len(parsed) == 1
    assert first.symbols == second.symbols and first.indices == second.indices and first.counts == second.counts
    first.add_symbol("c")  # the copies are independent: changing one changes neither the other nor the next load
    third = Dictionary.load(tmp_path / "dict.en.txt")
    assert "c" not in second and "c" not in third and len(third) == len(second) == 6 and len(parsed) == 1
    (tmp_path / "dict.en.txt").write_text("a 3\nb 2\nc 1\n", encoding="utf-8")  # new content: parsed again
    assert Dictionary.load(tmp_path / "dict.en.txt").symbols[-1] == "c" and len(parsed) == 2
    for i in range(module._READ_KEPT):  # older contents drop out
        (tmp_path / f"other{i}.txt").write_text(f"z{i} 1\n", encoding="utf-8")
        Dictionary.load(tmp_path / f"other{i}.txt")
    Dictionary.load(tmp_path / "dict.de.txt")
    assert len(parsed) == 3 + module._READ_KEPT


def test_crlf_and_cr_read_as_text_mode_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "dict.txt"
    path.write_bytes("a 3\r\nb\u2028c 2\rd 1\r\n".encode())
    loaded = Dictionary.load(path)
    assert loaded.symbols[4:] == ["a", "b\u2028c", "d"] and loaded.counts[4:] == [3, 2, 1]
    assert loaded.symbols == line_by_line(path).symbols


def _dictionary_of(symbols: list[str], counts: list) -> Dictionary:
    dictionary = Dictionary()
    for symbol, count in zip(symbols, counts, strict=True):
        dictionary.add_symbol(symbol, count, overwrite=True)
    return dictionary


@pytest.mark.parametrize(
    ("symbols", "counts", "seeded"),
    [
        (ODD_TOKENS, list(range(len(ODD_TOKENS))), True),
        (["x", "y"], [__import__("numpy").int64(5), -2], True),
        (["x", "x"], [1, 2], False),  # the overwrite flag's repeat: fairseq's reading differs
        (["a\rb", "c"], [1, 2], False),  # text mode turns \r into a line end
        (["<blank>", "c"], [1, 2], False),  # reads as an OpenNMT vocabulary
        (["a\tb", "c"], [1, 2], False),  # reads as OpenNMT-py
        (["", "c"], [1, 2], False),
        ([], [], False),
    ],
)
def test_a_saved_dictionary_loads_without_a_parse_only_when_it_reads_back_the_same(
        tmp_path: Path, monkeypatch, symbols: list[str], counts: list, seeded: bool) -> None:
    import tokenmill.vocab.dictionary as module

    monkeypatch.setattr(module, "_READ", module._ReadCache())
    parsed: list[str] = []
    real = Dictionary._add_fairseq_fast
    monkeypatch.setattr(Dictionary, "_add_fairseq_fast", lambda self, text: parsed.append(text) or real(self, text))
    path = tmp_path / "dict.txt"
    saved = _dictionary_of(symbols, counts)
    saved.save(path)
    try:
        first = Dictionary.load(path)
    except FormatError:
        first = None
    assert (not parsed) == seeded
    monkeypatch.setattr(module, "_READ", module._ReadCache())
    try:
        again = Dictionary.load(path)  # parsed from the bytes
    except FormatError:
        assert first is None and not seeded
        return
    assert first is not None
    assert (first.symbols, first.counts, first.indices, first.format) == (again.symbols, again.counts,
                                                                            again.indices, again.format)
    assert all(type(c) is int for c in first.counts)
