"""The sentence splitters of ``--split-sentences``: the registry, Megatron's ``--lang`` names, the whitespace
rule shared by every splitter, and the sentencex part."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tests.prepare.test_megatron_flags import documents
from tokenmill.errors import ConfigError
from tokenmill.text.sentences import (
    SPLITTERS,
    SplitterPart,
    check_installed,
    language_code,
    make_splitter,
    register_splitter,
    split_documents,
)

DOCS = ["Dr. Smith went to Washington. He arrived at 5 p.m. and left!  Did he stay? No.",
        "", "  \n\t ", "One line.\nAnother line.\n\nA paragraph.\n", "no final punctuation"]


def test_sentencex_keeps_every_character_so_joined_sentences_give_the_document_back():
    split = make_splitter("sentencex", "english")
    for doc in DOCS + documents(200):
        assert "".join(split(doc)) == doc


def test_sentences_are_stripped_and_whitespace_only_ones_dropped():
    sentences, counts = split_documents(DOCS, make_splitter("sentencex", "english"))
    assert counts.tolist() == [4, 0, 0, 3, 1] and counts.dtype == np.int64
    assert sentences[:4] == ["Dr. Smith went to Washington.", "He arrived at 5 p.m. and left!", "Did he stay?", "No."]
    assert sentences[4:] == ["One line.", "Another line.", "A paragraph.", "no final punctuation"]


def test_keep_newlines_keeps_the_whitespace_after_each_sentence():
    sentences, counts = split_documents(DOCS, make_splitter("sentencex", "english"), keep_newlines=True)
    assert counts.tolist() == [4, 0, 0, 3, 1]
    assert sentences[4:7] == ["One line.\n", "Another line.\n\n", "A paragraph.\n"]
    assert "".join(sentences[:4]) == DOCS[0]


def test_the_language_changes_where_sentences_end():
    text = "Er kam am 3. Oktober an. Dann ging er."
    assert len(make_splitter("sentencex", "english")(text)) == 3, "English: '3.' ends a sentence"
    assert make_splitter("sentencex", "german")(text) == ["Er kam am 3. Oktober an. ", "Dann ging er."]


@pytest.mark.parametrize(("lang", "code"), [("english", "en"), ("German", "de"), ("slovene", "sl"), ("pt-BR", "pt-BR"),
                                            ("fr", "fr")])
def test_megatrons_nltk_language_names_and_iso_codes(lang, code):
    assert language_code(lang) == code


def test_an_unknown_language_is_one_error():
    with pytest.raises(ConfigError, match="--lang klingon: not a language of --split-sentences; give an NLTK"):
        language_code("klingon")


def test_a_new_splitter_is_one_registered_part():
    part = SplitterPart("lines", "numpy", "sentences", lambda code: lambda text: text.splitlines(keepends=True),
                        "one sentence per line")
    register_splitter(part)
    try:
        sentences, counts = split_documents(["a b\nc d\n", "e"], make_splitter("lines", "en"))
        assert sentences == ["a b", "c d", "e"] and counts.tolist() == [2, 1]
    finally:
        del SPLITTERS["lines"]
    with pytest.raises(ConfigError, match="no such splitter"):
        make_splitter("lines", "en")


def test_a_missing_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentencex", None)
    with pytest.raises(ConfigError, match=r"needs sentencex: pip install 'tokenmill\[sentences\]'"):
        check_installed("sentencex")
