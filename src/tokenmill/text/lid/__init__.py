"""Language ID for the ``langid`` filter step: backends (heliport, py3langid), labels, the per-line check.

- :mod:`~tokenmill.text.lid.registry`: the backend protocol and registry (``--filter-lid-backend``).
- :mod:`~tokenmill.text.lid.heliport_backend`, :mod:`~tokenmill.text.lid.py3langid_backend`: one backend each.
- :mod:`~tokenmill.text.lid.labels` and its data :mod:`~tokenmill.text.lid.table`: ISO 639-1, ISO 639-3 and
  NLLB labels, brought to ISO 639-3 and compared.
- :mod:`~tokenmill.text.lid.check`: :class:`LanguageCheck`, a chunk's wrong-language mask.
"""

from __future__ import annotations

from tokenmill.text.lid import heliport_backend, py3langid_backend  # noqa: F401  (they register themselves)
from tokenmill.text.lid.check import LanguageCheck, is_mix_counter, label_counts, language_mix, mix_counter
from tokenmill.text.lid.labels import WantedLanguage, accepted_labels, parse_language, same_language
from tokenmill.text.lid.registry import BACKENDS, DEFAULT_BACKEND, LidBackend, make_backend, register

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "LanguageCheck",
    "LidBackend",
    "WantedLanguage",
    "accepted_labels",
    "is_mix_counter",
    "label_counts",
    "language_mix",
    "make_backend",
    "mix_counter",
    "parse_language",
    "register",
    "same_language",
]
