"""``PrepareConfig``: the frozen settings of one ``prepare`` run, one section per concern.

Each section (:mod:`.catalog`) is a frozen dataclass that checks itself against the whole config;
:meth:`PrepareConfig.validate` runs those checks once, section by section, and returns a new, checked config
(a value resolved on the way, such as an input format found by content, is in the new object, never written
into the old one). Settings are addressed by section (``config.tokenizer.vocab_size``); the flat keys of YAML
files and flags (``vocab_size``) are accepted by the constructor and :meth:`PrepareConfig.replaced`, and
:meth:`PrepareConfig.to_dict` gives the flat mapping manifests record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tokenmill.prepare.config.catalog import PLACES, SECTION_TYPES, SETTINGS
from tokenmill.prepare.config.cleaning import CleaningSettings
from tokenmill.prepare.config.dictionary import DictionarySettings
from tokenmill.prepare.config.directions import DirectionSettings
from tokenmill.prepare.config.engine import EngineSettings
from tokenmill.prepare.config.inputs import InputSettings
from tokenmill.prepare.config.kinds import RECORDED_IF_SET, flag_name
from tokenmill.prepare.config.megatron import MegatronSettings
from tokenmill.prepare.config.output import OutputSettings
from tokenmill.prepare.config.run import RunSettings
from tokenmill.prepare.config.section import changed
from tokenmill.prepare.config.tokenizer import TokenizerSettings

_ONE_DIRECTION_ORDER = ("inputs", "tokenizer", "megatron", "engine", "cleaning", "dictionary")
"""The order sections are checked in for a single-direction run (the first problem found is reported)."""


@dataclass(frozen=True, init=False)
class PrepareConfig:
    """Everything one ``prepare`` run needs, by section. Paths are as given (relative to the working directory).

    ``PrepareConfig(vocab_size=400, trainpref=["x"])`` takes flat keys (a YAML file's), ``PrepareConfig(
    tokenizer=TokenizerSettings(...))`` whole sections, and both together (the flat keys change the sections).
    ``dataclasses.replace`` takes sections; :meth:`replaced` takes flat keys.
    """

    inputs: InputSettings
    cleaning: CleaningSettings
    tokenizer: TokenizerSettings
    dictionary: DictionarySettings
    output: OutputSettings
    megatron: MegatronSettings
    run: RunSettings
    engine: EngineSettings
    directions: DirectionSettings

    def __init__(self, *, labels: Mapping[str, str] | None = None, **given: Any) -> None:
        sections = {name: value for name, value in given.items()
                    if name in SECTION_TYPES and isinstance(value, SECTION_TYPES[name])}
        changes = _by_section({key: value for key, value in given.items() if key not in sections})
        for name, kind in SECTION_TYPES.items():
            base = sections.get(name)
            object.__setattr__(self, name, changed(kind() if base is None else base, changes[name]))
        object.__setattr__(self, "_labels", dict(labels or {}))
        """How messages name a setting that came from a config file ("c.yaml: vocab_size"), by key
        ("filters.max_ratio" for nested ones); set by :func:`build_config`. Others are named by their flag."""
        object.__setattr__(self, "_validated", False)

    # ---------------------------------------------------------------- what the run is
    @property
    def monolingual(self) -> bool:
        """No target language: one side per item."""
        return self.inputs.monolingual

    @property
    def multilingual(self) -> bool:
        """Many directions prepared at once."""
        return bool(self.directions.files)

    @property
    def langs(self) -> list[str]:
        """The languages read: the source's, and the target's for pairs."""
        return self.inputs.langs

    def split_prefixes(self) -> dict[str, list[str]]:
        """The prefixes of each split given, in the order train, valid, test."""
        return self.inputs.split_prefixes()

    # ---------------------------------------------------------------- flat keys
    def value(self, key: str, default: Any = None) -> Any:
        """The value of flat setting ``key`` (``default`` for a key no section has, e.g. another engine's
        option)."""
        place = PLACES.get(key)
        return default if place is None else place.read(getattr(self, place.section))

    def label(self, name: str) -> str:
        """How messages name setting ``name``: its flag, or ``file: key`` when it came from a config file."""
        return self._labels.get(name) or flag_name(*reversed(name.split(".", 1)))  # type: ignore[attr-defined]

    def replaced(self, **settings: Any) -> PrepareConfig:
        """A new config with the flat ``settings`` changed (each routed to its section), not yet validated."""
        changes = _by_section(settings)
        sections = {name: changed(getattr(self, name), changes[name]) for name in SECTION_TYPES}
        return PrepareConfig(labels=self._labels, **sections)  # type: ignore[attr-defined]

    def _sections(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in SECTION_TYPES}

    # ---------------------------------------------------------------- checking
    def validate(self) -> PrepareConfig:
        """This config checked, every setting and the files named, before any work; raise one ConfigError.

        Returns a new config (itself when it is already checked): the sections check their types, then
        themselves against the whole config in order, then the files they name."""
        if self._validated:  # type: ignore[attr-defined]
            return self
        for name in SECTION_TYPES:
            getattr(self, name).check_types(self)
        config = self
        for name in ("directions", "cleaning") if self.multilingual else _ONE_DIRECTION_ORDER:
            section = getattr(config, name).checked(config)
            if section is not getattr(config, name):
                config = PrepareConfig(labels=self._labels, **{**config._sections(), name: section})  # type: ignore[attr-defined]
        for name in ("cleaning", "tokenizer", "dictionary", "directions" if self.multilingual else "inputs"):
            getattr(config, name).check_files(config)
        object.__setattr__(config, "_validated", True)
        return config

    def direction_config(self, name: str) -> PrepareConfig:
        """The single-direction settings of direction ``name`` (its files, the shared everything else)."""
        src, tgt = name.split("-")
        files = self.directions.files[name]
        return dataclasses.replace(
            self,
            inputs=dataclasses.replace(
                self.inputs, source_lang=src, target_lang=tgt, trainpref=list(files.get("trainpref", [])),
                validpref=list(files.get("validpref", [])), testpref=list(files.get("testpref", []))),
            directions=dataclasses.replace(self.directions, files={}, num_shards=1),
            dictionary=dataclasses.replace(self.dictionary, joined_dictionary=True),
        )

    # ---------------------------------------------------------------- as recorded
    def to_dict(self) -> dict[str, Any]:
        """Every setting by its flat key, in order (nested groups as mappings): what YAML files hold."""
        flat: dict[str, Any] = {}
        for name in SECTION_TYPES:
            section = dataclasses.asdict(getattr(self, name))
            flat.update({setting.key: setting.read(section) for setting in SETTINGS if setting.section == name})
        return flat

    def recorded(self) -> dict[str, Any]:
        """The settings as the manifest records them: :meth:`to_dict` less the settings of
        :data:`RECORDED_IF_SET` at their defaults (near-dedup's are all kept once it is on) and the bitext
        rules that are off (:meth:`FilterConfig.recorded`), so a run that uses none of them writes the manifest
        it wrote before they existed."""
        settings = self.to_dict()
        for key in RECORDED_IF_SET:
            if self.cleaning.near_dedup and key.startswith("near_dedup"):
                continue  # near-dedup's settings, all of them, once it is on
            if settings[key] == PLACES[key].default():
                del settings[key]
        kept = self.cleaning.filters.recorded()
        settings["filters"] = {name: value for name, value in settings["filters"].items() if name in kept}
        return settings


def _by_section(settings: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Flat settings by section: {section: {field name: value}} (every section present; a sub-section's settings as
    {sub-section: {field name: value}}, as :func:`~.section.changed` takes them)."""
    changes: dict[str, dict[str, Any]] = {name: {} for name in SECTION_TYPES}
    for key, value in settings.items():
        if key not in PLACES:
            raise TypeError(f"PrepareConfig() got an unexpected keyword argument {key!r}")
        place = PLACES[key]
        holder = changes[place.section] if place.sub is None else changes[place.section].setdefault(place.sub, {})
        holder[place.name] = value
    return changes
