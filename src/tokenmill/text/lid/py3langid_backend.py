"""The ``py3langid`` backend: 97 languages, ISO 639-1 labels (langid.py's model, in the py3langid wheel).

Runs :class:`tokenmill.text.langid.LanguageIdentifier`, the vectorized re-implementation of py3langid's
classifier (labels equal ``py3langid.classify``); the confidence is the label's probability as py3langid's
``norm_probs`` gives it (0 to 1). It was the only backend before heliport: choose it to keep the lines an
earlier language filter kept (its settings and stage keys are the ones those runs recorded).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tokenmill.errors import ConfigError
from tokenmill.text.langid import LanguageIdentifier
from tokenmill.text.lid.labels import accepted_labels, parse_language, to_iso639_3
from tokenmill.text.lid.registry import register


@register("py3langid")
class Py3langidBackend:
    """py3langid's model over whole chunks; ``candidates`` in any label form restrict its labels."""

    coarse_macrolanguages = False
    name = "py3langid"

    def __init__(self, candidates: Sequence[str] | None = None) -> None:
        if candidates is not None:
            languages = {label: to_iso639_3(label) for label in LanguageIdentifier().labels}
            picked = {code: accepted_labels(languages, parse_language(code, "langid_candidates entry").language)
                      for code in candidates}
            unknown = [code for code, labels in picked.items() if not labels]
            if unknown:
                raise ConfigError(f"language-ID (py3langid) does not know {unknown}; known: {', '.join(languages)}")
            candidates = sorted(set().union(*picked.values()))
        self._identifier = LanguageIdentifier(candidates)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self._identifier.labels)

    def identify(self, lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        return self._identifier.classify_with_confidence(lines)

    def language(self, label: str) -> str:
        return to_iso639_3(label)


__all__ = ["Py3langidBackend"]
