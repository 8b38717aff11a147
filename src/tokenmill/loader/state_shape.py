"""The shape of a batch iterator's saved state, checked before any of it is used.

A state comes back from a checkpoint file that may be damaged, edited by hand or written by another
program; :func:`check_state_shape` turns any field of the wrong type or range into one
:class:`~tokenmill.errors.TokenmillError` naming the field, instead of a ``TypeError`` from ``int(...)``
deep inside a resume (or a position far past the data that only fails later).
"""

from __future__ import annotations

from typing import Any

from tokenmill.errors import TokenmillError


def _count(state: dict[str, Any], key: str, *, least: int = 0, required: bool = True) -> None:
    if key not in state and not required:
        return
    value = state.get(key)
    if type(value) is not int or value < least:
        raise TokenmillError(
            f"iterator state field {key!r} is {value!r:.80}, not an integer >= {least}; the saved state is damaged "
            "(restore the checkpoint, or start the data iterator afresh without its saved state)"
        )


def _segment(entry: Any) -> bool:
    """Whether ``entry`` is a segment as written: ``[world_size, steps]`` or ``[world_size, steps, mix]``
    (the mix a settings mapping, or None where it did not change)."""
    if not isinstance(entry, list | tuple) or len(entry) not in (2, 3):
        return False
    world, steps = entry[0], entry[1]
    if type(world) is not int or type(steps) is not int or world < 1 or steps < 0:
        return False
    return len(entry) == 2 or entry[2] is None or isinstance(entry[2], dict)


def check_state_shape(state: dict[str, Any]) -> None:
    """Refuse a state (already known to be a tokenmill one) whose fields do not have the types and ranges
    :meth:`~tokenmill.loader.iterator.BatchIterator.state_dict` writes."""
    _count(state, "epoch", least=1)
    _count(state, "step")
    _count(state, "consumed", required=False)
    _count(state, "world_size", least=1)
    _count(state, "step_base", required=False)
    segments = state.get("segments") or []
    if not isinstance(segments, list) or not all(_segment(entry) for entry in segments):
        raise TokenmillError(
            f"iterator state field 'segments' is {segments!r:.80}, not a list of [world_size, steps] integer pairs "
            "(each with the mix it ran under where the mix changed); the saved state is damaged"
        )
    for key in ("config",):
        if not isinstance(state.get(key) or {}, dict):
            raise TokenmillError(f"iterator state field {key!r} is {state.get(key)!r:.80}, not a mapping; "
                                 "the saved state is damaged")
