"""The ``heliport`` backend (the default): 220 languages, ISO 639-3 labels, its model inside the wheel.

heliport (a Rust port of HeLI-OTS: character n-gram and word models, a per-language confidence threshold
under which a line is ``und``) is called once per line through ``map`` over its compiled
``identify_with_score``: the loop runs in C, one core per process. Its ``par_identify`` would start a thread
per core in every worker process; prepare already runs one process per worker, so that would only
oversubscribe the cores. The confidence is heliport's (higher is surer; 0 up to about 7).

A few of its labels are finer than ISO 639-3 (dialects and varieties of its training data); they are
mapped to the ISO 639-3 language they belong to, so ``--filter-src-lang bos`` matches ``hbsbos``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from tokenmill._core.optional import require
from tokenmill.errors import ConfigError
from tokenmill.text.lid.registry import register

FINER_LABELS = {
    "hbsbos": "bos", "hbshrv": "hrv", "hbssrp": "srp",  # Serbo-Croatian's standards
    "msaind": "ind", "msazsm": "zsm", "msamin": "min", "msamalay": "msa",  # Malay's varieties
    "estvro": "vro",  # Võro (ISO 639-3 puts it under Estonian)
    "sagb": "sag",
    "undhtml": "und",  # markup: no language
    **{f"fin{suffix}": "fin" for suffix in "iklmoprstx"},  # Finnish dialects/varieties of HeLI-OTS
}
"""heliport labels that are not ISO 639-3 codes -> the ISO 639-3 code of their language."""


@lru_cache(maxsize=1)
def _identifier() -> Any:
    """heliport's identifier, loaded once per process (the model is read from the installed package)."""
    try:
        heliport = require("heliport", extra="langid", needed_by="language ID with the heliport backend")
    except ModuleNotFoundError as error:
        raise ConfigError(f"{error} (or choose --filter-lid-backend py3langid)") from None
    return heliport.Identifier()


@register("heliport")
class HeliportBackend:
    """heliport over whole chunks (see the module's docstring)."""

    coarse_macrolanguages = True
    name = "heliport"

    def __init__(self, candidates: Sequence[str] | None = None) -> None:
        if candidates is not None:
            raise ConfigError("langid_candidates restricts the py3langid backend only (heliport always weighs all "
                              "its languages): leave it out or choose --filter-lid-backend py3langid")
        self._identifier = _identifier()
        self._labels = tuple(sorted(self._identifier.get_confidence_all()))  # label -> its threshold

    @property
    def labels(self) -> tuple[str, ...]:
        return self._labels

    def identify(self, lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        if not len(lines):
            return np.empty(0, dtype=object), np.empty(0, dtype=np.float32)
        labels, scores = zip(*map(self._identifier.identify_with_score, lines), strict=True)
        return np.array(labels, dtype=object), np.array(scores, dtype=np.float32)

    def language(self, label: str) -> str:
        return FINER_LABELS.get(label, label)


__all__ = ["FINER_LABELS", "HeliportBackend"]
