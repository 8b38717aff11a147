"""The base of the sections of :class:`~tokenmill.prepare.config.PrepareConfig`: a frozen dataclass of the
settings of one concern, each a field whose type hint says what it takes and whose ``metadata["help"]`` is its
flag's help; ``metadata["key"]`` names the flat key (YAML key and flag) of a field named otherwise in its section
(the tokenizer section's ``name`` is ``tokenizer``). A field may be a sub-section, a frozen dataclass of the same
kind owned by one variant (the tokenizer backends' training settings): its fields keep flat keys of their own."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar

from tokenmill.settings import check_settings

if TYPE_CHECKING:  # the sections are checked against the whole config, which is made of them
    from tokenmill.prepare.config.model import PrepareConfig


def key_of(item: dataclasses.Field) -> str:  # type: ignore[type-arg]
    """The flat key (YAML key, flag name with ``_``) of a section's field."""
    return str(item.metadata.get("key", item.name))


def subsections(kind: type) -> dict[str, type[Section]]:
    """The fields of section class ``kind`` that are sub-sections, by field name, with their classes."""
    return {item.name: item.default_factory for item in dataclasses.fields(kind)  # type: ignore[misc]
            if isinstance(item.default_factory, type) and issubclass(item.default_factory, Section)}


def changed(section: Any, changes: dict[str, Any]) -> Any:
    """``section`` with ``changes`` made (field name -> value; a sub-section's as a mapping of its own fields)."""
    subs = subsections(type(section))
    made = {name: dataclasses.replace(getattr(section, name), **value) if name in subs else value
            for name, value in changes.items()}
    return dataclasses.replace(section, **made)


class Section:
    """One section of the settings; subclasses are ``@dataclass(frozen=True)``."""

    TITLE: ClassVar[str] = ""
    """The section's title in ``prepare --help`` and the config reference (a sub-section's: in the reference)."""

    def check_types(self, config: PrepareConfig) -> None:
        """Every field's value fits its type hint (choices, ranges, patterns), sub-section by sub-section;
        messages name it as given."""
        subs = subsections(type(self))
        keys = {item.name: key_of(item) for item in dataclasses.fields(self)}  # type: ignore[arg-type]
        own = {name: getattr(self, name) for name in keys if name not in subs}
        check_settings(type(self), own, lambda name: config.label(keys[name]))
        for name in subs:
            getattr(self, name).check_types(config)

    def checked(self, config: PrepareConfig) -> Any:
        """This section checked against the whole ``config``: itself, or a new section where a value is resolved
        (e.g. an input format found by content). Raises one ConfigError naming the setting and the fix."""
        return self

    def check_files(self, config: PrepareConfig) -> None:
        """The files this section names exist and are what they claim to be (after every section is checked)."""


class BackendSettings(Section):
    """A sub-section of one variant's own settings (a tokenizer backend's training settings): the variant it
    belongs to, and what it hands that variant."""

    BACKEND: ClassVar[str] = ""
    """The registry name of the backend these settings belong to (``--tokenizer`` NAME)."""

    def train_settings(self, config: PrepareConfig) -> Any:
        """What the backend trains with, from these settings and the shared ones of ``config``."""
        raise NotImplementedError
