"""Is each line in the wanted language? One backend, the wanted language of each side, a threshold, a script.

:class:`LanguageCheck` is what the ``langid`` filter step runs on a chunk: the backend labels every line
(:meth:`~tokenmill.text.lid.registry.LidBackend.identify`), a line is wrong when its label is not one of the
labels accepted for the wanted language (:func:`~tokenmill.text.lid.labels.accepted_labels`), when its
confidence is below the threshold, or, for an NLLB label (``eng_Latn``), when less than
``min_script_fraction`` of its letters are in that script. The labels come back too, for the language mix
the report shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tokenmill.errors import ConfigError
from tokenmill.text.charclass import script_fraction, script_table
from tokenmill.text.lid.labels import WantedLanguage, accepted_labels, parse_language, script_spec
from tokenmill.text.lid.registry import make_backend


class LanguageCheck:
    """The language test of each side (None: that side is not checked)."""

    def __init__(self, backend: str, wanted: Sequence[str | None], *, candidates: Sequence[str] | None = None,
                 threshold: float | None = None, min_script_fraction: float = 0.5) -> None:
        self.backend = make_backend(backend, candidates)
        self.threshold = threshold
        self.min_script_fraction = min_script_fraction
        languages = {label: self.backend.language(label) for label in self.backend.labels}
        self.wanted: list[WantedLanguage | None] = []
        self._accepted: list[frozenset[str]] = []
        for code in wanted:
            request = None if code is None else parse_language(code, "expected language")
            accepted = frozenset() if request is None else accepted_labels(languages, request.language,
                                                                   self.backend.coarse_macrolanguages)
            if request is not None and not accepted:
                raise ConfigError(f"filter settings: language-ID ({backend}) does not know {code!r}; its "
                                  f"languages: {', '.join(sorted(set(languages.values())))}")
            if request is not None and request.script is not None:
                script_table(script_spec(request.script))  # an unknown script fails now, not mid-run
            self.wanted.append(request)
            self._accepted.append(accepted)

    def mismatch(self, lines: Sequence[str], side: int) -> tuple[np.ndarray, np.ndarray]:
        """(bad: bool per line, labels: the backend's label per line) for side ``side`` of a chunk (a side
        with a wanted language)."""
        request = self.wanted[side]
        if request is None:
            raise ValueError(f"side {side} has no wanted language")
        labels, confidence = self.backend.identify(lines)
        accepted = self._accepted[side]
        bad = ~np.fromiter(map(accepted.__contains__, labels), dtype=bool, count=len(labels))
        if self.threshold is not None:
            bad |= confidence < self.threshold
        if request.script is not None:
            line_list = lines if isinstance(lines, list) else list(lines)
            bad |= script_fraction(line_list, script_spec(request.script)) < self.min_script_fraction
        return bad, labels


MIX_SIDES = ("src", "tgt")


def mix_counter(side: str, label: str) -> str:
    """The counter of the lines of ``side`` (``src``/``tgt``) language ID labelled ``label``."""
    return f"lid_{side}_{label}"


def language_mix(counters: Mapping[str, int]) -> dict[str, list[tuple[str, int]]]:
    """Per side with language-mix counters among ``counters`` (a split's ``filter`` counts): (label, lines),
    most lines first, ties by label: one order whatever order the counters were first touched in."""
    mix: dict[str, list[tuple[str, int]]] = {}
    for side in MIX_SIDES:
        prefix = mix_counter(side, "")
        rows = [(key.removeprefix(prefix), int(n)) for key, n in counters.items() if key.startswith(prefix)]
        if rows:
            mix[side] = sorted(rows, key=lambda row: (-row[1], row[0]))
    return mix


def is_mix_counter(name: str) -> bool:
    """True for a language-mix counter (:func:`mix_counter`)."""
    return name.startswith(tuple(mix_counter(side, "") for side in MIX_SIDES))


def label_counts(labels: np.ndarray) -> list[tuple[str, int]]:
    """(label, lines) in the order each label first occurs: summed chunk by chunk in input order, the
    counters come out in the same order for any chunking."""
    if not len(labels):
        return []
    names, first, counts = np.unique(labels.astype(str), return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    return [(str(names[i]), int(counts[i])) for i in order]


__all__ = ["MIX_SIDES", "LanguageCheck", "is_mix_counter", "label_counts", "language_mix", "mix_counter"]
