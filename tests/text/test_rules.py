"""The bitext rules: each drops the noise it is named for and keeps a clean pair; the registry, the
filter's counts and the settings' repr (stage keys) hold together; decontamination keys do not depend on
chunking."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tokenmill.text import Cleaner
from tokenmill.text.cleaner import CleanConfig
from tokenmill.text.decontaminate import Contamination, Decontaminator, line_keys
from tokenmill.text.filters import FILTER_STEPS, RULE_ORDER, RULES, FilterConfig, PairFilter
from tokenmill.text.filters.registry import LM_RULES
from tokenmill.text.filters.settings import _BEFORE_RULES
from tokenmill.text.readers import Chunk

pytest.importorskip("regex")

CLEAN = ("The weather is nice today, isn't it?", "Das Wetter ist heute schön, nicht wahr?")
CASES = {  # rule: (value, a pair it must drop)
    "not_too_long": (50, ("word " * 20, "Wort " * 20)),
    "not_too_short": (3, ("Hello there", "Hallo du da")),
    "length_ratio": (2.0, ("Short one here.", "Eine sehr viel längere Übersetzung dieses kurzen Satzes hier.")),
    "no_identical": (True, ("Hello, World!", "hello world")),
    "no_literals": (True, ("{{name}} is here now", "{{name}} ist jetzt hier")),
    "no_only_symbols": (0.1, ("!!! ??? ... ---", "!!! ??? ... ---")),
    "no_only_numbers": (0.5, ("1234 5678 9012", "1234 5678 9012")),
    "no_urls": (True, ("See www.example.com for more", "Mehr unter www.example.com")),
    "no_breadcrumbs": (True, ("Home > Shop > Shoes > Boots | Sale | New", "Start > Laden > Schuhe | Neu")),
    "no_glued_words": (True, ("Open the FileManager window now", "Öffne jetzt das Dateifenster")),
    "no_repeated_words": (1, ("I said hello there hello there to him", "Ich sagte hallo zu ihm dort")),
    "no_unicode_noise": (True, ("This is Ã¤Ã¶ broken", "Das ist kaputt hier")),
    "no_space_noise": (True, ("h e l l o friends", "h a l l o Freunde")),
    "no_paren": (True, ("Some [unbalanced text here", "Ein [unausgeglichener Text hier")),
    "no_escaped_unicode": (True, ("Escaped \\u00e9 text here", "Maskierter Text hier")),
    "no_bad_encoding": (True, ("Caf\u00c3 is a word here", "Kaffee ist ein Wort hier")),
    "no_titles": (True, ("Main Menu Settings", "Hauptmenü Einstellungen Seite")),
    "no_number_inconsistencies": (True, ("It costs 45 euros.", "Es kostet 54 Euro und 1 Cent.")),
    "no_script_inconsistencies": (True, ("Mixed Латиница text here", "Gemischter Text hier")),
    "numerals": (0.5, ("Call 555 1234 today", "Heute anrufen")),
    "terminal_punctuation": (-1.0, ("Really? Yes! It is. Fine.", "Wirklich")),
    "html_tags": (True, ("Click <b>here</b> now", "Klicken Sie <b>hier</b>")),
    "repetition": (2, ("hahahahahahaha that was funny", "das war lustig")),
    "common_substring": (0.9, ("Firefox Preferences menu", "Firefox Preferences menu!")),
}


def test_every_rule_is_registered_has_a_setting_and_a_case():
    assert set(RULES) == set(RULE_ORDER) == set(CASES) | set(LM_RULES)  # LM rules: tests/text/test_lm_filters.py
    names = {f.name for f in dataclasses.fields(FilterConfig)}
    assert set(RULE_ORDER) <= names
    assert list(FILTER_STEPS[-1:]) == ["langid"] and FILTER_STEPS.index("not_too_long") > FILTER_STEPS.index("script")


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_rule_drops_its_noise_and_keeps_a_clean_pair(name):
    value, bad = CASES[name]
    config = FilterConfig(**{name: value}, rule_src_lang="en", rule_tgt_lang="de")
    result = PairFilter(config)([CLEAN[0], bad[0]], [CLEAN[1], bad[1]])
    assert result.keep.tolist() == [True, False]
    assert result.counts[name] == 1 and result.dropped[name].tolist() == [1]


def test_language_dependent_rules_follow_the_side_language():
    pair = (["東京 学校"], ["学校"])  # two Han words: too short in words, long enough in characters
    words = PairFilter(FilterConfig(not_too_short=3, rule_src_lang="en", rule_tgt_lang="de"))(*pair)
    chars = PairFilter(FilterConfig(not_too_short=2, rule_src_lang="zh", rule_tgt_lang="ja"))(*pair)
    assert words.keep.tolist() == [False] and chars.keep.tolist() == [True]
    tilde = (["Não é verdade agora"], ["It is not true now"])
    assert PairFilter(FilterConfig(no_bad_encoding=True, rule_src_lang="pt", rule_tgt_lang="en"))(*tilde).kept == 1
    assert PairFilter(FilterConfig(no_bad_encoding=True, rule_src_lang="es", rule_tgt_lang="en"))(
        ["NÃo es verdad"], ["It is not true"]).kept == 0


def test_monolingual_chunks_run_the_per_side_rules_only():
    result = PairFilter(FilterConfig(no_urls=True, no_titles=True))(["see example.com here", "Main Menu Item"])
    assert result.keep.tolist() == [False, True] and result.counts == {"empty": 0, "no_urls": 1, "no_titles": 0}


def test_a_pair_is_counted_under_the_first_rule_that_drops_it():
    config = FilterConfig(no_urls=True, html_tags=True)
    result = PairFilter(config)(["<b>www.example.com</b>", "<b>bold</b> text"], ["<b>x.org</b>", "<b>fett</b>"])
    assert result.counts == {"empty": 0, "no_urls": 1, "html_tags": 1}


def test_settings_without_rules_print_as_before_so_stage_keys_stay():
    legacy = [(f.name, f.type, f) for f in dataclasses.fields(FilterConfig) if f.name in _BEFORE_RULES]
    before = dataclasses.make_dataclass("FilterConfig", legacy, frozen=True)
    assert repr(FilterConfig()) == repr(before())
    assert repr(FilterConfig(max_ratio=3.0)) == repr(before(max_ratio=3.0))
    assert "no_urls=True" in repr(FilterConfig(no_urls=True))
    assert "decontaminate" not in repr(CleanConfig()) and repr(CleanConfig()).startswith("CleanConfig(normalize=")


def test_decontamination_keys_do_not_depend_on_the_chunk():
    lines = ["The quick brown fox jumps over the lazy dog today", "tiny", "", "Quick, BROWN fox! jumps over the"]
    keys, owner = line_keys(lines, 4)
    parts = [line_keys([line], 4)[0] for line in lines]
    assert np.array_equal(keys, np.concatenate(parts))
    assert owner.tolist() == [0] * 7 + [1] + [2] * 0 + [3] * 3


def test_decontamination_drops_either_side_and_samples_it(tmp_path):
    reference = tmp_path / "devtest.txt"
    reference.write_text("the committee approved the new budget for next year\nGood morning\n", encoding="utf-8")
    config = CleanConfig(decontaminate=Contamination.of_files([str(reference)], 5), dedup=False)
    cleaner = Cleaner(config)
    src = ["Yesterday THE committee approved the new budget, they said", "Good morning!", "An unrelated line here"]
    tgt = ["Gestern sagten sie", "Guten Morgen", "Eine andere Zeile"]
    chunk, _ = cleaner.local(Chunk(0, 3, src, tgt), keys=False)
    assert chunk.src == ["An unrelated line here"]
    assert cleaner.stats["decontaminate"].counts == {"side_0": 2, "side_1": 0, "items": 3, "contaminated": 2}
    assert [r["line"] for r in cleaner.dropped.get("decontaminate")] == [1, 2]
    assert Decontaminator(config.decontaminate).contaminated(["good MORNING"]).tolist() == [True]


def test_a_changed_reference_file_changes_the_settings(tmp_path):
    reference = tmp_path / "ref.txt"
    reference.write_text("one two three\n", encoding="utf-8")
    first = Contamination.of_files([str(reference)], 3)
    reference.write_text("one two four\n", encoding="utf-8")
    assert repr(first) != repr(Contamination.of_files([str(reference)], 3))


def _random_lines(seed: int, count: int = 3000) -> list[str]:
    """Short lines over a tiny alphabet (cases, spaces, punctuation, ß/ẞ, a digit): repeats everywhere."""
    rng = np.random.default_rng(seed)
    alphabet = np.array(list("abAB  .-ßẞ1Kk"))

    def text(most: int) -> str:
        return "".join(rng.choice(alphabet, size=int(rng.integers(0, most))))

    lines = [text(40) for _ in range(count)]
    for i in range(0, count, 7):  # a string repeated 2-4 times, spaces between or not
        lines[i] = text(8) + (text(6) + " " * int(rng.integers(0, 3))) * int(rng.integers(2, 5)) + text(8)
    return lines


def test_the_numpy_shortcuts_decide_as_the_patterns_themselves():
    """The numpy tests (prefilter.py) only skip lines where the exact pattern cannot match: on lines full of
    repeats, each rule decides as the plain pattern run on every line."""
    regex = pytest.importorskip("regex")
    lines = _random_lines(5)
    glued = regex.compile(r"([[:alpha:]]*[[:upper:]][[:lower:]]+){2}")
    repeat = regex.compile(r"(\S.{2,100}?)(?: *\1){2,}")
    words = regex.compile(r"(?i)(\b\S+(.+))\s+\b\1\b")
    alpha = regex.compile(r"[[:alpha:]]")

    def repeated(line: str) -> bool:
        found = [m.group().strip() for m in words.finditer(line)]
        return any(len(text) > 7 and alpha.search(text) for text in found)

    expected = {
        "no_glued_words": [bool(glued.search(line)) for line in lines],
        "repetition": [bool(repeat.search(line)) for line in lines],
        "no_repeated_words": [repeated(line) for line in lines],
    }
    values = {"no_glued_words": True, "repetition": 2, "no_repeated_words": 1}
    for name, bad in expected.items():
        config = FilterConfig(drop_empty=False, rule_src_lang="en", **{name: values[name]})
        assert (~PairFilter(config)(lines).keep).tolist() == bad, name
        assert any(bad), name  # the lines do exercise the rule


def test_rules_decide_the_same_whole_chunk_or_line_by_line():
    """The shared chunk intermediates (one joined text, class bits, per-line counts) give each line the
    decision it gets alone: lines with newlines of their own, empty lines, non-ASCII and CJK text, noise
    right at a line's start or end (next to the separator of the joined text)."""
    src = ["a\nb c d e f g", "", "Re:", "x.co", "<b>", "ab Ab", "Ã", " a b c d ", "{{", "(", "7", "abcabcabc",
           "Über Über straße", "東京 東京 東京", "Cafe\u0301 \\u00e9", "a  a  a  ", "word word", "FooBar",
           "»|»| a - b - c -"]
    tgt = list(reversed(src))
    for name in RULE_ORDER:
        if name in LM_RULES:
            continue
        config = FilterConfig(drop_empty=False, rule_src_lang="en", rule_tgt_lang="de",
                              **{name: CASES[name][0]})
        whole = PairFilter(config)(src, tgt).keep.tolist()
        alone = [PairFilter(config)([s], [t]).keep[0] for s, t in zip(src, tgt, strict=True)]
        assert whole == alone, name
        mono = PairFilter(config)(src).keep.tolist()
        assert mono == [PairFilter(config)([s]).keep[0] for s in src], name
