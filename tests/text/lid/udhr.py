"""Held-out sentences in ~400 languages, offline: the UDHR translations Google Fonts' ``gflanguages`` package
ships as each language's sample text (``pip install gflanguages``).

Per ISO 639-3 language, the script with the most speakers (historical scripts and entries without a
population left out, as FLORES-200 has one main script per language); its sample-text fields split into
lines of at least 20 characters, each line once. These are Universal Declaration of Human Rights sentences:
formal, and possibly seen by a backend in its training data (heliport's and py3langid's training sets are
not published line by line), so they stand in for FLORES-200 devtest, which no package ships.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pytest

from tokenmill.text.lid import LidBackend, accepted_labels, parse_language
from tokenmill.text.lid.labels import to_iso639_3

FIELDS = ("specimen_48", "specimen_36", "specimen_32", "specimen_21", "specimen_16", "tester", "styles")
MIN_CHARS = 20


@dataclass(frozen=True)
class Sample:
    """The sentences of one language: gflanguages' id (``fr_Latn``), its ``language_Script`` label."""

    key: str
    label: str
    lines: tuple[str, ...]


@lru_cache(maxsize=1)
def udhr_samples() -> tuple[Sample, ...]:
    """One :class:`Sample` per language, sorted by key (skips the calling test without gflanguages)."""
    gflanguages = pytest.importorskip("gflanguages", reason="the UDHR sentences come from gflanguages")
    best: dict[str, tuple[int, Sample]] = {}
    for key, lang in sorted(gflanguages.LoadLanguages().items()):
        if (not lang.HasField("sample_text") or lang.historical or lang.population <= 0
                or not re.fullmatch("[a-z]{2,3}", lang.language)):  # e.g. fr-gallo: a variety, no ISO code
            continue
        lines: dict[str, None] = {}
        for name in FIELDS:
            for line in getattr(lang.sample_text, name).split("\n"):
                if len(line.strip()) >= MIN_CHARS:
                    lines[line.strip()] = None
        code = to_iso639_3(lang.language)
        if lines and (code not in best or best[code][0] < lang.population):
            best[code] = (lang.population, Sample(key, f"{lang.language}_{lang.script}", tuple(lines)))
    return tuple(sorted((sample for _, sample in best.values()), key=lambda sample: sample.key))


def accuracy(backend: LidBackend, samples: Sequence[Sample]) -> dict[str, tuple[float, int]]:
    """Per sample the backend knows (a label accepted for its language): (share of its lines labelled with
    an accepted label, lines). All lines go to the backend in one call, as a chunk would."""
    languages = {label: backend.language(label) for label in backend.labels}
    known = [(s, accepted_labels(languages, parse_language(s.label).language, backend.coarse_macrolanguages))
             for s in samples]
    known = [(s, labels) for s, labels in known if labels]
    found, _ = backend.identify([line for s, _ in known for line in s.lines])
    out: dict[str, tuple[float, int]] = {}
    start = 0
    for sample, labels in known:
        got = found[start : start + len(sample.lines)]
        start += len(sample.lines)
        out[sample.label] = (float(np.isin(got, list(labels)).mean()), len(sample.lines))
    return out
