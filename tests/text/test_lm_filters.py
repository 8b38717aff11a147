"""The LM document filters (Gopher quality and repetition, C4, FineWeb): each drops the planted document it
exists for and keeps a clean one, a threshold turns its check off, they do not run on pairs, and prepare
takes them from --lm-filters / --clean-preset web with the manifest unchanged when they are off."""

from __future__ import annotations

import pytest

from tests.text.lm_documents import PLANTED
from tokenmill.errors import ConfigError
from tokenmill.prepare.config import build_config
from tokenmill.text.filters import FilterConfig, PairFilter
from tokenmill.text.filters.words import _split_piece, count_sentences, split_words

pytest.importorskip("regex")

CLEAN = "\n".join([
    "The history of the town goes back to the twelfth century, when a small market grew up by the river.",
    "Over the years the market became a centre of trade, and merchants came with wool and grain to sell.",
    "A stone bridge was built in 1420 to replace the old wooden one that had been washed away by a flood.",
    "Today the bridge is one of the oldest in the region, and visitors come to see it throughout the year.",
    "The church, which stands at the top of the hill, has a tower that can be seen from miles around.",
    "Local people say that the bells have rung every Sunday for more than five hundred years without a break.",
])
BAD = {
    "gopher_quality": "\n".join(["- buy", "- sell", "- trade", "- hold"] * 20),  # too few words, all bullets
    "gopher_repetition": "\n".join(["The same line of text appears again and again in this page."] * 30),
    "c4": CLEAN + "\nlorem ipsum dolor sit amet, consectetur adipiscing elit.",
    "fineweb": "\n".join(f"Item {i}" for i in range(60)),  # short lines without punctuation
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_each_lm_filter_drops_its_document_and_keeps_a_clean_one(name):
    result = PairFilter(FilterConfig(**{name: True}))([CLEAN, BAD[name]])
    assert result.keep.tolist() == [True, False]
    assert result.counts[name] == 1 and result.dropped[name].tolist() == [1]


def test_a_threshold_turned_off_keeps_what_it_dropped():
    repeated = BAD["gopher_repetition"]
    off = dict.fromkeys(["gopher_dup_lines", "gopher_dup_line_chars", "gopher_dup_paragraphs",
                         "gopher_dup_paragraph_chars", "gopher_top_2gram", "gopher_top_3gram", "gopher_top_4gram",
                         "gopher_dup_5grams", "gopher_dup_6grams", "gopher_dup_7grams", "gopher_dup_8grams",
                         "gopher_dup_9grams", "gopher_dup_10grams"])
    assert not PairFilter(FilterConfig(gopher_repetition=True))([repeated]).keep[0]
    assert PairFilter(FilterConfig(gopher_repetition=True, **off))([repeated]).keep[0]
    assert PairFilter(FilterConfig(c4=True, c4_lorem_ipsum=False))([BAD["c4"]]).keep[0]
    assert not PairFilter(FilterConfig(gopher_quality=True, gopher_min_words=500))([CLEAN]).keep[0]


def test_lm_filters_do_not_run_on_pairs():
    result = PairFilter(FilterConfig(fineweb=True))([BAD["fineweb"]], ["Eine Übersetzung."])
    assert result.keep.tolist() == [True] and result.counts["fineweb"] == 0


def test_words_and_sentences_follow_spacy_english():
    assert split_words("Don't stop, it's (really) well-known: e.g. U.S. $4.20...") == [
        "Do", "n't", "stop", ",", "it", "'s", "(", "really", ")", "well", "-", "known", ":", "e.g.", "U.S.", "$",
        "4.20", "..."]
    assert split_words("see https://example.com/a-b. ok") == ["see", "https://example.com/a-b", ".", "ok"]
    assert count_sentences("One. Two! Three? \"Four.\" Five") == 5
    assert count_sentences("Version 3.5 of the U.S. law.") == 1
    assert count_sentences("") == 0


def test_prepare_takes_lm_filters_and_the_web_preset(tmp_path):
    base = {"source_lang": "text", "trainpref": [str(tmp_path / "train")]}
    (tmp_path / "train.text").write_text("a\n", encoding="utf-8")
    named = build_config({**base, "lm_filters": "c4,fineweb"}).cleaning.filters
    assert (named.c4, named.fineweb, named.gopher_quality) == (True, True, False)
    web = build_config({**base, "clean_preset": "web", "filters": {"fineweb": False}}).cleaning.filters
    assert (web.gopher_quality, web.gopher_repetition, web.c4, web.fineweb) == (True, True, True, False)
    plain = build_config(base)
    assert "lm_filters" not in plain.recorded() and "c4" not in plain.recorded()["filters"]
    assert "gopher_min_words" not in repr(plain.cleaning.filters)  # stage keys of runs without them unchanged


def test_prepare_refuses_lm_filters_on_pairs_and_unknown_names(tmp_path):
    base = {"source_lang": "en", "trainpref": [str(tmp_path / "train")]}
    with pytest.raises(ConfigError, match="monolingual documents"):
        build_config({**base, "target_lang": "de", "lm_filters": "c4"}).validate()
    with pytest.raises(ConfigError, match="unknown filter 'gopher'"):
        build_config({**base, "lm_filters": "gopher"}).validate()


def test_plain_words_split_as_the_affix_loop_splits_them():
    """split_words takes plain words (and one mark after them) without the affix loop; the loop agrees."""
    for text in [CLEAN, *PLANTED, "Acme Inc. and id, cannot. vs. 3. St. A. Id? e.g. x"]:
        slow: list[str] = []
        for piece in text.split():
            _split_piece(piece, slow)
        assert split_words(text) == slow
