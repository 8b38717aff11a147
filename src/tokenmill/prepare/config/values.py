"""Values of settings as they come from YAML, flags or Python, made into what the sections hold: lists from
comma-separated strings, mappings from JSON or ``key=value`` pairs, nested groups and directions checked."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import yaml

from tokenmill.errors import ConfigError
from tokenmill.prepare.config.kinds import PREFIXES
from tokenmill.settings import check_settings, did_you_mean, hints, is_sequence


def as_list(value: Any, label: str) -> list[str]:
    """A list setting: a list of strings (numbers as text) or one comma-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        return [part for part in value.split(",") if part]
    if isinstance(value, list | tuple) and all(isinstance(v, str | int | float) and not isinstance(v, bool)
                                               for v in value):
        return [str(v) for v in value]
    raise ConfigError(f"{label}: expected a list of strings (or one comma-separated string), got {value!r}")


def nested_settings(kind: type, value: Any, group: str, label: Any) -> Any:
    """A Normalizer/FilterConfig from a mapping (flags and file keys merged), every value checked."""
    if isinstance(value, kind):
        return value
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ConfigError(f"{label(group)}: expected a mapping of {group} settings, got {value!r}")
    known = [f.name for f in fields(kind)]
    for key in value:
        if key not in known:
            raise ConfigError(
                f"{file_part(label(group))}unknown {group} setting {str(key)!r}{did_you_mean(str(key), known)}; "
                f"known: {', '.join(known)}"
            )
    values = dict(value)
    for key, item in values.items():
        if is_sequence(hints(kind)[key]) and item is not None:
            values[key] = tuple(as_list(item, label(f"{group}.{key}")))
    check_settings(kind, values, lambda name: label(f"{group}.{name}"))
    return kind(**values)


def file_part(label: str) -> str:
    """The ``file: `` part of a label (nothing for a flag)."""
    return label.rsplit(": ", 1)[0] + ": " if ": " in label else ""


def direction_files(value: Any, settings: dict[str, Any], label: str) -> dict[str, dict[str, list[str]]]:
    """Directions as {name: {"trainpref": [...], ...}}; a bare name takes {pref}.{name} of the global prefixes."""
    if isinstance(value, dict):
        entries = value
    else:
        entries = dict.fromkeys(as_list(value, label))
    result: dict[str, dict[str, list[str]]] = {}
    for name, files in entries.items():
        name = str(name)
        if files is None:
            files = {split: [f"{p}.{name}" for p in as_list(settings.get(split), split)] for split in PREFIXES}
        elif isinstance(files, dict):
            for key in files:
                if key not in PREFIXES:
                    raise ConfigError(
                        f"{file_part(label)}direction {name}: unknown key {str(key)!r}"
                        f"{did_you_mean(str(key), PREFIXES)}; use {', '.join(PREFIXES)}"
                    )
            files = {split: as_list(files.get(split), f"{label}.{name}.{split}") for split in PREFIXES}
        else:
            raise ConfigError(f"{label}: direction {name}: expected a mapping of {', '.join(PREFIXES)} (or nothing)")
        result[name] = files
    return result


def mapping_setting(value: Any, label: str) -> dict[str, Any]:
    """A mapping setting: a YAML mapping, or from a flag a JSON object or ``key=value,key=value`` (values read
    as YAML scalars)."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, str) and value.lstrip().startswith("{"):  # JSON from a flag
        try:
            parsed = json.loads(value)
        except ValueError as error:
            raise ConfigError(f"{label}: not valid JSON ({error}); give a JSON object or key=value,key=value") from None
        if not isinstance(parsed, dict):
            raise ConfigError(f"{label}: expected a JSON object, got {value!r}")
        return parsed
    if isinstance(value, str):
        result: dict[str, Any] = {}
        for part in (p for p in value.split(",") if p.strip()):
            key, sep, text = part.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"{label}: expected key=value pairs separated by commas, got {part!r}")
            try:
                result[key.strip()] = yaml.safe_load(text) if text.strip() else ""
            except yaml.YAMLError:
                result[key.strip()] = text
        return result
    raise ConfigError(f"{label}: expected a mapping (or key=value,key=value), got {value!r}")
