"""Typed settings: every value of a settings dataclass checked against its type hint, in one place.

A field's annotation says what it takes: ``int``, ``float`` (ints accepted), ``bool``, ``str``,
``X | None``, ``Literal[...]`` (one of the choices), ``list[str]`` / ``tuple[str, ...]``, another
dataclass; ``Annotated[..., Range(...)]`` or ``Annotated[..., Pattern(...)]`` also says which values
are allowed. Bools are not integers here (``vocab_size: true`` is an error), and a string is not
a number (``vocab_size: eight``, or YAML's ``1e6``, which YAML reads as a string).

:func:`check_settings` checks a dataclass instance or a mapping meant for one and raises one
:class:`~tokenmill.errors.ConfigError` naming the setting; :func:`tokenmill.commands.params.click_type`
gives the command-line type of a field from the same hint, so flags, YAML files and the Python API agree on
what is valid. (This module does not import click: the library checks settings without the command line.)
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import numbers
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from tokenmill.errors import ConfigError

__all__ = [
    "LANG_CODE",
    "Pattern",
    "Range",
    "check_settings",
    "choices",
    "did_you_mean",
    "first_kind",
    "hints",
    "is_sequence",
    "problem",
]


@dataclass(frozen=True)
class Range:
    """Allowed numbers: ``low <= x <= high`` (either bound optional; ``open_low``: ``low < x``)."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    what: str = ""
    """What such a number is, for the message ("a fraction")."""
    why: str = ""
    """Why the bound, for the message."""

    def __str__(self) -> str:
        if self.low is not None and self.high is not None:
            span = f"{'(' if self.open_low else '['}{self.low:g}, {self.high:g}]"
            return f"{self.what} in {span}" if self.what else f"in {span}"
        if self.low is not None:
            return f"{'>' if self.open_low else '>='} {self.low:g}"
        return f"<= {self.high:g}"

    def problem(self, value: float) -> str | None:
        low_ok = self.low is None or (value > self.low if self.open_low else value >= self.low)
        high_ok = self.high is None or value <= self.high
        if low_ok and high_ok and not (isinstance(value, float) and math.isnan(value)):
            return None
        return f"must be {self}" + (f" ({self.why})" if self.why else "")


@dataclass(frozen=True)
class Pattern:
    """Allowed strings: those matching ``regex`` in full; ``what`` says what they are."""

    regex: str
    what: str

    def problem(self, value: str) -> str | None:
        return None if re.fullmatch(self.regex, value) else f"must be {self.what}"


LANG_CODE = Pattern(r"[^/\\.\s]+", "a language code usable in file names (not empty; no '/', '\\', '.' or spaces)")


@functools.cache
def hints(cls: type) -> dict[str, Any]:
    """The resolved type hints of a dataclass, ``Annotated`` extras kept."""
    return typing.get_type_hints(cls, include_extras=True)


def _unwrap(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """(type, constraints) of a possibly ``Annotated`` hint."""
    if typing.get_origin(hint) is Annotated:
        base, *extra = typing.get_args(hint)
        return base, tuple(extra)
    return hint, ()


def _alternatives(hint: Any) -> tuple[list[Any], bool]:
    """The non-None members of a union (or the hint alone) and whether None is allowed."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = typing.get_args(hint)
        return [a for a in args if a is not type(None)], type(None) in args
    return [hint], hint is type(None) or hint is Any


def choices(hint: Any) -> tuple[str, ...] | None:
    """The choices of a ``Literal`` hint (possibly optional or annotated), else None."""
    base, _ = _unwrap(hint)
    for alt in _alternatives(base)[0]:
        if typing.get_origin(alt) is Literal:
            return tuple(str(a) for a in typing.get_args(alt))
    return None


def is_sequence(hint: Any) -> bool:
    """Whether a field takes a list (``list[str]``, ``tuple[str, ...]``, possibly optional or annotated)."""
    return any(typing.get_origin(alt) in (list, tuple) for alt in _alternatives(_unwrap(hint)[0])[0])


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if hint is bool:
        return "true or false"
    if hint is int:
        return "an integer"
    if hint is float:
        return "a number"
    if hint is str:
        return "a string"
    if origin is Literal:
        return "one of " + ", ".join(map(str, typing.get_args(hint)))
    if origin in (list, tuple):
        return "a list of strings (or one comma-separated string)"
    if origin is dict or hint is dict:
        return "a mapping"
    if dataclasses.is_dataclass(hint):
        return f"a mapping of {hint.__name__} settings"
    return getattr(hint, "__name__", str(hint))


def _fits(hint: Any, value: Any) -> bool:
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is Literal:
        return isinstance(value, str) and value in typing.get_args(hint)
    if origin in (list, tuple):
        return isinstance(value, list | tuple) and all(isinstance(item, str) for item in value)
    if origin is dict or hint is dict:
        return isinstance(value, dict)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest known word, or an empty string."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def problem(hint: Any, value: Any, label: str) -> str | None:
    """The message for ``value`` given to the setting ``label`` annotated ``hint``; None when it is fine."""
    base, constraints = _unwrap(hint)
    alternatives, optional = _alternatives(base)
    if value is None:
        if optional:
            return None
        return f"{label}: expected {_describe(alternatives[0])}, got nothing (null)"
    fitting = [alt for alt in alternatives if _fits(alt, value)]
    if not fitting:
        literal = next((alt for alt in alternatives if typing.get_origin(alt) is Literal), None)
        if literal is not None:
            options = [str(a) for a in typing.get_args(literal)]
            hint_text = did_you_mean(value, options) if isinstance(value, str) else ""
            return f"{label} must be one of {', '.join(options)}, got {value!r}{hint_text}"
        wanted = " or ".join(_describe(alt) for alt in alternatives)
        quote = " (in YAML, put it in quotes)" if str in alternatives and isinstance(value, bool | int | float) else ""
        return f"{label}: expected {wanted}, got {value!r}{quote}"
    for constraint in constraints:
        issue = constraint.problem(value) if hasattr(constraint, "problem") else None
        if issue:
            return f"{label} {issue}, got {value!r}"
    return None


def check_settings(cls: type, values: Any, label: Callable[[str], str]) -> None:
    """Raise one ConfigError for the first field of dataclass ``cls`` whose value in ``values`` (a ``cls``
    instance, or a mapping of some field values) does not fit its hint; ``label`` names a field."""
    hinted = hints(cls)
    for item in dataclasses.fields(cls):
        if isinstance(values, Mapping):
            if item.name not in values:
                continue
            value = values[item.name]
        else:
            value = getattr(values, item.name)
        issue = problem(hinted[item.name], value, label(item.name))
        if issue:
            raise ConfigError(issue)


def first_kind(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """(the first non-None type of ``hint``, its ``Annotated`` constraints): what a command-line value of
    that field is read as (``int | None`` -> ``int``; ``Annotated[float, Range(...)]`` -> ``float``)."""
    base, constraints = _unwrap(hint)
    alternatives, _ = _alternatives(base)
    return (alternatives[0] if alternatives else str), constraints
