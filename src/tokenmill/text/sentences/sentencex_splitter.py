"""The ``sentencex`` splitter (Wikimedia's sentence segmenter, a compiled extension: rules for about 300
languages, with fallbacks between related ones; no model to download, so it works offline)."""

from __future__ import annotations

from tokenmill._core.optional import require
from tokenmill.text.sentences.registry import Split, SplitterPart, register_splitter


def _make(code: str) -> Split:
    segment = require("sentencex", extra="sentences", needed_by="--split-sentences").segment

    def split(text: str) -> list[str]:
        return list(segment(code, text))

    return split


register_splitter(SplitterPart("sentencex", "sentencex", "sentences", _make,
                               "sentencex: rule-based, ~300 languages, offline"))
