"""Language-ID backends: one small module each, registered under the name ``--filter-lid-backend`` takes.

A backend is made once per filter (its model loads then) and called on whole chunks: :meth:`LidBackend.identify`
returns the label (the backend's own) and a confidence (higher is surer; what it means is the backend's) of
every line. :meth:`LidBackend.language` turns one of its labels into ISO 639-3 so that labels can be compared
with what the user asked for (:mod:`tokenmill.text.lid.labels`). A new backend is a new module that calls
:func:`register` and is imported by :mod:`tokenmill.text.lid`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from tokenmill.errors import ConfigError

DEFAULT_BACKEND = "heliport"


class LidBackend(Protocol):
    """What every language-ID backend offers."""

    name: str
    coarse_macrolanguages: bool
    """True when its macrolanguage labels mean "one of the members, undecided" (heliport's ``hbs``, ``msa``):
    they then count for a wanted member too (:func:`~tokenmill.text.lid.labels.accepted_labels`)."""

    @property
    def labels(self) -> tuple[str, ...]:
        """Every label it can return (besides ``und``)."""
        ...

    def identify(self, lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(labels: object array of str, confidences: float32) for ``lines``, one each."""
        ...

    def language(self, label: str) -> str:
        """ISO 639-3 code of one of its labels (``und``/``zxx`` as they are)."""
        ...


BackendFactory = Callable[[Sequence[str] | None], LidBackend]
"""Makes a backend; the argument restricts it to those candidate labels (None: all it knows)."""
BACKENDS: dict[str, BackendFactory] = {}


def register(name: str) -> Callable[[BackendFactory], BackendFactory]:
    """Class or function decorator: ``name``'s backend factory."""

    def add(factory: BackendFactory) -> BackendFactory:
        BACKENDS[name] = factory
        return factory

    return add


def make_backend(name: str, candidates: Sequence[str] | None = None) -> LidBackend:
    """The backend registered as ``name``, loaded; an unknown name is a ConfigError naming the known ones."""
    if name not in BACKENDS:
        raise ConfigError(f"language-ID backend {name!r} is unknown; known: {', '.join(sorted(BACKENDS))}")
    return BACKENDS[name](candidates)


__all__ = ["BACKENDS", "DEFAULT_BACKEND", "BackendFactory", "LidBackend", "make_backend", "register"]
