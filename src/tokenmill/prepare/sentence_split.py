"""``--split-sentences`` before encoding: each document is cut into sentences, the sentences are encoded in one
tokenizer call, and the document's ids (its sentences' ids one after another) go to the work-id store as
before, one item per document. Beside it, a second int32 store with the same items holds each document's
sentence lengths in ids (``{ids prefix}.sentences``): so every stage that counts, masks or cuts items
(piece filters, provenance, tasks and their parts) sees documents as before, and binarize alone turns a
document into its sentences (:mod:`~tokenmill.prepare.sentence_binarize`).

The splitting is per document, in Python (the splitter's own cost); everything after it is vectorized.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from tokenmill.prepare.config import PrepareConfig
from tokenmill.store import IndexedWriter
from tokenmill.text.sentences import language_code, make_splitter, split_documents, splitter_part
from tokenmill.vocab.tokenizer import Tokenizer

SENTENCES_SUFFIX = ".sentences"


def splits_sentences(config: PrepareConfig) -> bool:
    """Whether documents are cut into sentences (Megatron's ``--split-sentences``)."""
    return bool(config.megatron.split_sentences)


def sentences_prefix(ids_prefix: str | Path) -> Path:
    """The sentence-lengths store beside the work-id store at ``ids_prefix``."""
    path = Path(ids_prefix)
    return path.with_name(path.name + SENTENCES_SUFFIX)


def sentence_files(ids_prefix: str | Path) -> list[Path]:
    """The ``.bin``/``.idx`` of the sentence-lengths store beside ``ids_prefix``."""
    prefix = sentences_prefix(ids_prefix)
    return [Path(f"{prefix}.bin"), Path(f"{prefix}.idx")]


def sentence_key(config: PrepareConfig) -> list[Any]:
    """What the sentences depend on (for the encode stage's key): the splitter, the language and the whitespace
    rule. Empty when sentences are not split (keys stay as they were). Not the splitter package's version, as
    no key holds a tokenizer library's: a task on a machine with another release keeps the coordinator's key."""
    if not splits_sentences(config):
        return []
    meg = config.megatron
    return ["sentences", splitter_part(meg.sentence_splitter).name, language_code(meg.lang), meg.keep_newlines]


class SentenceStep:
    """The documents of a tokenizer call, as sentences, encoded."""

    def __init__(self, config: PrepareConfig) -> None:
        meg = config.megatron
        self.split = make_splitter(meg.sentence_splitter, meg.lang)
        self.keep_newlines = meg.keep_newlines

    def encode(self, tokenizer: Tokenizer, documents: list[str], threads: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(ids, ids per document, ids per sentence, sentences per document) of ``documents``."""
        sentences, counts = split_documents(documents, self.split, keep_newlines=self.keep_newlines)
        flat, lengths = tokenizer.encode_batch(sentences, num_threads=threads)
        lengths = np.asarray(lengths, dtype=np.int64)
        return flat, document_lengths(lengths, counts), lengths, counts


def sentence_step(config: PrepareConfig) -> SentenceStep | None:
    """The step when ``--split-sentences`` is on, else None."""
    return SentenceStep(config) if splits_sentences(config) else None


def document_lengths(sentence_lengths: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Ids per document from ids per sentence and sentences per document (a document without any: 0)."""
    ends = np.cumsum(counts)
    totals = np.concatenate([[0], np.cumsum(sentence_lengths, dtype=np.int64)])
    return totals[ends] - totals[ends - counts]


class SentenceLengths:
    """The sentence-lengths store of one work-id store: per document (item), its sentences' lengths in ids."""

    def __init__(self, ids_prefix: str | Path) -> None:
        self.writer = IndexedWriter(sentences_prefix(ids_prefix), dtype=np.dtype(np.int32))

    def add(self, sentence_lengths: np.ndarray, counts: np.ndarray) -> None:
        self.writer.add_items(sentence_lengths, counts)

    def __enter__(self) -> SentenceLengths:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.writer.__exit__(exc_type, exc, tb)


__all__ = ["SENTENCES_SUFFIX", "SentenceLengths", "SentenceStep", "document_lengths", "sentence_files",
           "sentence_key", "sentence_step", "sentences_prefix", "splits_sentences"]
