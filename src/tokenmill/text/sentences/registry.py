"""Sentence splitters for ``--split-sentences``: one small module each, registered under the name
``--sentence-splitter`` takes.

A splitter part turns one language code into a function that cuts a document into its sentences with every
character kept (the sentences joined give the document back), so that how whitespace is treated is decided
once, here, for every splitter: :func:`split_documents` strips each sentence (Megatron's default, whose punkt
splitter leaves the whitespace between sentences out) or, with ``keep_newlines``, keeps the whitespace after
a sentence with it (Megatron's ``--keep-newlines``). A sentence that is only whitespace is dropped, as
Megatron drops a sentence without ids. A new splitter is a new module that calls :func:`register_splitter`
and is imported by :mod:`tokenmill.text.sentences`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tokenmill._core.optional import require
from tokenmill.errors import ConfigError

Split = Callable[[str], list[str]]
"""A document -> its sentences, every character kept (``"".join(sentences) == document``)."""
DEFAULT_SPLITTER = "sentencex"
NLTK_LANGUAGES = {
    "czech": "cs", "danish": "da", "dutch": "nl", "english": "en", "estonian": "et", "finnish": "fi",
    "french": "fr", "german": "de", "greek": "el", "italian": "it", "malayalam": "ml", "norwegian": "no",
    "polish": "pl", "portuguese": "pt", "russian": "ru", "slovene": "sl", "spanish": "es", "swedish": "sv",
    "turkish": "tr",
}
"""Megatron's ``--lang`` takes the name of an NLTK punkt model; these are the ones punkt ships."""
_CODE = re.compile(r"[a-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*")


@dataclass(frozen=True)
class SplitterPart:
    """A registered sentence splitter: ``make(code)`` builds its split function for an ISO 639 code."""

    name: str
    module: str
    """The package it imports (``pip install 'tokenmill[EXTRA]'`` when missing)."""
    extra: str
    make: Callable[[str], Split]
    describe: str


SPLITTERS: dict[str, SplitterPart] = {}


def register_splitter(part: SplitterPart) -> SplitterPart:
    """Make ``part`` the splitter ``--sentence-splitter NAME`` chooses."""
    SPLITTERS[part.name] = part
    return part


def splitter_part(name: str) -> SplitterPart:
    """The part registered as ``name``; an unknown name is a ConfigError naming the known ones."""
    if name not in SPLITTERS:
        raise ConfigError(f"--sentence-splitter {name}: no such splitter (known: {', '.join(sorted(SPLITTERS))})")
    return SPLITTERS[name]


def language_code(lang: str) -> str:
    """Megatron's ``--lang`` (an NLTK language name such as ``english``) or an ISO 639 code (``de``, ``pt-BR``)
    as the code splitters take."""
    name = lang.strip()
    if name.lower() in NLTK_LANGUAGES:
        return NLTK_LANGUAGES[name.lower()]
    if _CODE.fullmatch(name):
        return name
    raise ConfigError(f"--lang {lang}: not a language of --split-sentences; give an NLTK language name "
                      f"({', '.join(sorted(NLTK_LANGUAGES))}) or an ISO 639 code such as en, de, pt-BR")


def check_installed(name: str) -> None:
    """ConfigError with the pip command when splitter ``name``'s package is not installed."""
    part = splitter_part(name)
    try:
        require(part.module, extra=part.extra, needed_by=f"--split-sentences (--sentence-splitter {name})")
    except ModuleNotFoundError as error:
        raise ConfigError(str(error)) from None


def make_splitter(name: str, lang: str) -> Split:
    """Splitter ``name``'s function for ``lang`` (see :func:`language_code`)."""
    check_installed(name)
    return splitter_part(name).make(language_code(lang))


def split_documents(documents: Sequence[str], split: Split, *, keep_newlines: bool = False
                    ) -> tuple[list[str], np.ndarray]:
    """(every document's sentences, one list; how many each document has, int64). Sentences are stripped,
    or with ``keep_newlines`` keep the whitespace that follows them (a run of whitespace the splitter gave as
    a sentence of its own joins the sentence before it); sentences that are only whitespace are dropped."""
    sentences: list[str] = []
    counts = np.zeros(len(documents), dtype=np.int64)
    for i, document in enumerate(documents):
        before = len(sentences)
        for sentence in split(document) if document else ():
            if keep_newlines:
                if not sentence.strip():
                    if len(sentences) > before:
                        sentences[-1] += sentence
                    continue
                if len(sentences) == before:
                    sentence = sentence.lstrip()
                sentences.append(sentence)
            else:
                sentence = sentence.strip()
                if sentence:
                    sentences.append(sentence)
        counts[i] = len(sentences) - before
    return sentences, counts


__all__ = ["DEFAULT_SPLITTER", "NLTK_LANGUAGES", "SPLITTERS", "Split", "SplitterPart", "check_installed",
           "language_code", "make_splitter", "register_splitter", "split_documents", "splitter_part"]
