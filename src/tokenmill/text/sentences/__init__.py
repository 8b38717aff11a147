"""Sentence splitting for ``--split-sentences`` (Megatron's flag): the registry and its splitters.

- :mod:`~tokenmill.text.sentences.registry`: :class:`SplitterPart`, :func:`register_splitter`,
  :func:`split_documents` (documents -> sentences and counts), Megatron's ``--lang`` names.
- :mod:`~tokenmill.text.sentences.sentencex_splitter`: ``sentencex`` (the default).
"""

from __future__ import annotations

from tokenmill.text.sentences import sentencex_splitter  # noqa: F401  (it registers itself)
from tokenmill.text.sentences.registry import (
    DEFAULT_SPLITTER,
    NLTK_LANGUAGES,
    SPLITTERS,
    Split,
    SplitterPart,
    check_installed,
    language_code,
    make_splitter,
    register_splitter,
    split_documents,
    splitter_part,
)

__all__ = ["DEFAULT_SPLITTER", "NLTK_LANGUAGES", "SPLITTERS", "Split", "SplitterPart", "check_installed",
           "language_code", "make_splitter", "register_splitter", "split_documents", "splitter_part"]
