"""The registry of batching modes (token-budget cuts): a new mode is one function registered by name.

A cut takes (item lengths, settings, epoch) and returns the items in batch order and the batch ends
(:class:`~tokenmill.batching.costs.Cut`); everything after it (equal steps per rank, the plan cache,
exact resume) is the same for every mode. The built-in modes (``lowpad``, ``fairseq``, ``opennmt``)
are registered by :mod:`tokenmill.batching.plan`; another module (a plug-in, a test) adds its own:

    register_cut("shortest-first", my_cut)
    tokenmill.batches(data, tokenmill.BatchConfig(mode="shortest-first"))

This module imports nothing of batching's, so :class:`~tokenmill.batching.config.BatchConfig` checks a
mode's name against it without importing the cuts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tokenmill.errors import ConfigError

CutFunction = Callable[[Any, Any, int], Any]
"""(item lengths (:class:`~tokenmill.batching.costs.Sizes`), :class:`~tokenmill.batching.config.BatchConfig`,
epoch) -> :class:`~tokenmill.batching.costs.Cut`."""


@dataclass(frozen=True)
class CutMode:
    """One registered mode: its cut, and whether its batches are the same every epoch (then one cached plan
    serves every epoch, as fairseq's ``batch_by_size`` does)."""

    cut: CutFunction
    same_every_epoch: bool = False


_MODES: dict[str, CutMode] = {}


def register_cut(name: str, cut: CutFunction, *, same_every_epoch: bool = False) -> None:
    """Make ``BatchConfig(mode=name)`` cut with ``cut``. A name already taken by another function is an error
    (registering the same function again is not)."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"a batching mode needs a non-empty name, got {name!r}")
    mode = CutMode(cut, same_every_epoch)
    if _MODES.get(name, mode) != mode:
        raise ConfigError(f"batching mode {name!r} is registered already (by {_MODES[name].cut.__module__})")
    _MODES[name] = mode


def cut_mode(name: str) -> CutMode:
    """The registered mode ``name``; an unknown one is a ConfigError naming the known ones."""
    try:
        return _MODES[name]
    except KeyError:
        raise ConfigError(f"batching mode {name!r} is unknown; choose one of {', '.join(_MODES)}") from None


def registered_modes() -> tuple[str, ...]:
    """The names of the registered modes, built-in ones first."""
    return tuple(_MODES)


__all__ = ["CutFunction", "CutMode", "cut_mode", "register_cut", "registered_modes"]
