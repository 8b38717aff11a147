"""Normalizer: each step, the fixed order, the vectorized paths against simple per-line references."""

from __future__ import annotations

import sys
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.text.normalize import DELETED, SPACE_CONTROLS, WHITESPACE, Normalizer
from tokenmill.text.stats import StepStats


def seed_q2b(text: str) -> str:
    """The full-width folding of the seed's cleaning script, written the slow way."""
    out = []
    for ch in text:
        code = ord(ch)
        if code == 12288:
            code = 32
        elif 65281 <= code <= 65374:
            code -= 65248
        out.append(chr(code))
    return "".join(out)


def reference(line: str, n: Normalizer) -> str:
    """Per-line, per-char definition of the four steps."""
    if n.nfkc:
        line = unicodedata.normalize("NFKC", line)
    if n.fullwidth:
        line = seed_q2b(line)
    if n.remove_control:
        line = "".join(" " if c in SPACE_CONTROLS else c for c in line if c not in DELETED)
    if n.collapse_whitespace:
        line = " ".join(line.split())
    return line


def test_tables_match_unicode() -> None:
    assert WHITESPACE == "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())
    controls = {chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cc"}
    assert set(DELETED) | set(SPACE_CONTROLS) | {"\t", "\n"} == controls | {"\ufeff"}


def test_fullwidth_folding_equals_the_seed_script() -> None:
    text = "Ｈｅｌｌｏ，\u3000ｗｏｒｌｄ！ＡＢＣ１２３～＂"
    fold = Normalizer(fullwidth=True, remove_control=False, collapse_whitespace=False)
    assert fold([text]) == [seed_q2b(text)] == ['Hello, world!ABC123~"']


def test_default_removes_controls_and_collapses_whitespace() -> None:
    lines = ["  a \t b  ", "x\x00y", "p\x0cq", "tail\u2028 ", "\u3000", "\ufeffbom", "keep\u00a0nbsp"]
    assert Normalizer()(lines) == ["a b", "xy", "p q", "tail", "", "bom", "keep nbsp"]


def test_characters_past_the_lookup_tables_are_kept() -> None:
    assert Normalizer()(["，😀\uff5e\U0010fffd x"]) == ["，😀\uff5e\U0010fffd x"]


def test_control_removal_keeps_tab_without_collapse() -> None:
    only = Normalizer(remove_control=True, collapse_whitespace=False)
    assert only(["a\tb\x01c\x0bd\x85e"]) == ["a\tbc d e"]


def test_nfkc_and_order() -> None:
    n = Normalizer(nfkc=True)
    assert n(["ﬁne ①", "Ａ\u0301", "x\u2003\u2003y"]) == ["fine 1", "Á", "x y"]


def test_items_containing_newline_are_handled_one_by_one() -> None:
    assert Normalizer()(["a\nb  c", "d "]) == ["a b c", "d"]
    assert Normalizer(collapse_whitespace=False)(["a\n\x01b"]) == ["a\nb"]


def test_stats_count_changed_lines_per_step() -> None:
    stats = StepStats("normalize")
    lines = ["Ａ  b", "plain", "a\x01", " x"]
    out = Normalizer(fullwidth=True)(lines, stats, per_step=True)
    assert out == ["A b", "plain", "a", "x"]
    assert stats.counts == {
        "lines": 4,
        "changed_fullwidth": 1,
        "changed_remove_control": 1,
        "changed_collapse_whitespace": 2,
        "changed": 3,
    }
    cheap = StepStats("normalize")
    assert Normalizer(fullwidth=True)(lines, cheap) == out
    assert cheap.counts == {"lines": 4, "changed": 3}


alphabet = st.sampled_from(
    [*"ab 中é\t", "\u3000", "\uff21", "\uff0c", "\x00", "\x0b", "\x85", "\u2028", "\ufeff", "\u00a0", "ﬁ", "\u0301"]
)


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.text(alphabet=alphabet, max_size=15), max_size=12),
    flags=st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans()),
)
def test_property_chunk_path_equals_per_line_reference(lines: list[str], flags) -> None:
    n = Normalizer(*flags)
    assert n(lines) == [reference(x, n) for x in lines]
    ascii_lines = [x.encode("ascii", "ignore").decode() for x in lines]
    assert n(ascii_lines) == [reference(x, n) for x in ascii_lines]


def test_lines_no_step_changes_come_back_as_they_are() -> None:
    """Only lines with something to do are normalized; the others are the input's own objects."""
    clean = ["plain ascii", "中文，混合 scripts 😀", "é and ﬁ stay without NFKC", "", "Ａ untouched by default"]
    dirty = ["two  spaces", " lead", "trail ", "tab\there", "nul\x00", "cr\rlf", "bom\ufeff", "ls\u2028x", "nbsp\xa0x"]
    lines = [x for pair in zip(clean, dirty[:5], strict=True) for x in pair] + dirty[5:]
    stats = StepStats("normalize")
    out = Normalizer()(lines, stats)
    assert out == [reference(x, Normalizer()) for x in lines]
    assert all(out[lines.index(x)] is x for x in clean)
    assert stats.counts == {"lines": len(lines), "changed": len(dirty)}


def test_nfkc_and_folding_find_the_lines_they_change() -> None:
    lines = ["ﬁne", "already NFKC 中文", "Ａ", "①", "e\u0301", "\U0001d400 bold", "ok"]
    for n in (Normalizer(nfkc=True), Normalizer(fullwidth=True), Normalizer(nfkc=True, collapse_whitespace=False)):
        stats = StepStats("normalize")
        out = n(lines, stats)
        assert out == [reference(x, n) for x in lines]
        assert stats.counts["changed"] == sum(a != b for a, b in zip(lines, out, strict=True))
        assert out[1] is lines[1] and out[-1] is lines[-1]


wide = st.sampled_from(
    [*"ab 中", "\t", "\r", "\x7f", "\x9f", "\x1f", "\u1680", "\u2000", "\u200b", "\u202f", "\u205f", "\u3000",
     "\uff01", "\uff5e", "\uff5f", "\uff60", "\ufeff", "\U0001f600", "\U0001d400", "\u00bd", "\u0301"]
)


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.text(alphabet=wide, max_size=12), max_size=12),
    flags=st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans()),
)
def test_property_changed_count_and_untouched_lines(lines: list[str], flags) -> None:
    """Lines that need work anywhere in a chunk (incl. the edges of the lookup tables, non-BMP, CR):
    the result is the per-line reference, ``changed`` counts the lines that differ."""
    n = Normalizer(*flags)
    stats = StepStats("normalize")
    out = n(lines, stats)
    assert out == [reference(x, n) for x in lines]
    assert stats.counts.get("changed", 0) == sum(a != b for a, b in zip(lines, out, strict=True))
