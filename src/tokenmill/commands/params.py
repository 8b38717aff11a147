"""Command-line types from settings hints: flags take exactly what YAML files and the Python API take.

:func:`click_type` gives a settings field's click type from its hint (choices for ``Literal``, numbers
checked for type and range in the words of :func:`tokenmill.settings.problem`); :func:`number` gives a
checked number for an option that is not a settings field. Kept out of :mod:`tokenmill.settings` so
that the library checks settings without importing click.
"""

from __future__ import annotations

from typing import Annotated, Any

import click

from tokenmill.errors import ConfigError
from tokenmill.settings import Range, choices, first_kind, problem


class _Checked(click.ParamType):
    """A command-line int or float in the words of :func:`problem` (bools and ranges included)."""

    def __init__(self, hint: Any, kind: type) -> None:
        self.hint = hint
        self.kind = kind
        self.name = "integer" if kind is int else "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            number = value
        else:
            try:
                number = self.kind(value.strip())
            except ValueError:
                number = value
        issue = problem(self.hint, number, "")
        if issue:
            self.fail(issue.lstrip(": ").strip(), param, ctx)
        return number


def number(kind: type[int] | type[float], constraint: Range) -> click.ParamType:
    """A command-line ``kind`` checked against ``constraint`` in the words of a settings field."""
    return _Checked(Annotated[kind, constraint], kind)


def click_type(hint: Any) -> tuple[Any, bool]:
    """(click type, is a boolean flag) for a field hint: choices for ``Literal``, numbers checked
    (type and range) as :func:`problem` does, text for the rest."""
    first, constraints = first_kind(hint)
    if first is bool:
        return None, True
    found = choices(hint)
    if found is not None:
        return click.Choice(found), False
    if first in (int, float):
        checked = Annotated[(first, *constraints)] if constraints else first  # type: ignore[valid-type]
        return _Checked(checked, first), False
    return click.STRING, False


def direction_weights(text: str | None, flag: str = "--weights") -> dict[str, float] | None:
    """``--weights a-b=2,c-d=1`` (directions of a mix and their weights) as a mapping (``flag`` names the
    option in messages)."""
    if not text:
        return None
    weights = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise ConfigError(f"{flag}: {item!r} is not direction=weight (e.g. eng_Latn-deu_Latn=2)")
    return weights


__all__ = ["click_type", "direction_weights", "number"]
