"""The sections of the prepare settings, in order, and where each flat key (YAML key, flag) lives.

The order of the sections and of their fields is the order of ``prepare --help``, of the config reference and
of the flat settings a manifest records (:meth:`PrepareConfig.to_dict`): a new setting is one field, with its
``metadata["help"]``, in its section's module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, NamedTuple

from tokenmill.prepare.config.cleaning import CleaningSettings
from tokenmill.prepare.config.dictionary import DictionarySettings
from tokenmill.prepare.config.directions import DirectionSettings
from tokenmill.prepare.config.engine import EngineSettings
from tokenmill.prepare.config.inputs import InputSettings
from tokenmill.prepare.config.megatron import MegatronSettings
from tokenmill.prepare.config.output import OutputSettings
from tokenmill.prepare.config.run import RunSettings
from tokenmill.prepare.config.section import Section, key_of, subsections
from tokenmill.prepare.config.tokenizer import TokenizerSettings

SECTION_TYPES: dict[str, type[Section]] = {
    "inputs": InputSettings,
    "cleaning": CleaningSettings,
    "tokenizer": TokenizerSettings,
    "dictionary": DictionarySettings,
    "output": OutputSettings,
    "megatron": MegatronSettings,
    "run": RunSettings,
    "engine": EngineSettings,
    "directions": DirectionSettings,
}
"""Each section of :class:`~tokenmill.prepare.config.PrepareConfig` by its attribute name, in order."""


class Setting(NamedTuple):
    """One flat setting: its key (YAML key, flag name with ``_``), its section and its field there (in the
    sub-section ``sub`` of it, for a variant's own setting)."""

    key: str
    section: str
    field: dataclasses.Field  # type: ignore[type-arg]
    owner: type[Section]
    """The class whose field it is: the section's, or the sub-section's."""
    sub: str | None = None

    def read(self, section: Any) -> Any:
        """The setting's value in ``section`` (an instance of its section, or that instance as a mapping)."""
        holder = section if self.sub is None else _get(section, self.sub)
        return _get(holder, self.name)

    @property
    def name(self) -> str:
        """The field's name in its section (the key, but ``name``/``files`` where the key names the section)."""
        return self.field.name

    def default(self) -> object:
        """The setting's default value (a fresh one for a list or mapping)."""
        if self.field.default_factory is not dataclasses.MISSING:
            return self.field.default_factory()
        return self.field.default


def _get(holder: Any, name: str) -> Any:
    return holder[name] if isinstance(holder, dict) else getattr(holder, name)


def _settings(section: str, kind: type[Section]) -> Iterator[Setting]:
    """The flat settings of section ``kind``, in field order; a sub-section's fields in its place."""
    subs = subsections(kind)
    for item in dataclasses.fields(kind):  # type: ignore[arg-type]
        if item.name not in subs:
            yield Setting(key_of(item), section, item, kind)
            continue
        sub = subs[item.name]
        yield from (Setting(key_of(inner), section, inner, sub, item.name)
                    for inner in dataclasses.fields(sub))  # type: ignore[arg-type]


SETTINGS: tuple[Setting, ...] = tuple(
    setting for section, kind in SECTION_TYPES.items() for setting in _settings(section, kind)
)
"""Every flat setting, in order."""
PLACES: dict[str, Setting] = {setting.key: setting for setting in SETTINGS}
"""The setting of each flat key."""
if len(PLACES) != len(SETTINGS):  # a key must name one setting
    raise TypeError("two sections of the prepare settings define the same key")
