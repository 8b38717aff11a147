"""``build_config``: a checked :class:`PrepareConfig` from flat settings (a YAML file's mapping) and flags on top.

Unknown keys are errors that suggest the nearest known one; every value is type-checked and made into what its
section holds (:mod:`.values`); Megatron's flags and ``--clean-preset`` fill in their defaults (:mod:`.presets`);
messages about a setting from a config file name the file and the key.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from tokenmill.errors import ConfigError
from tokenmill.prepare.config.catalog import PLACES
from tokenmill.prepare.config.cleaning import NESTED
from tokenmill.prepare.config.kinds import FLAG_PREFIX, flag_name
from tokenmill.prepare.config.model import PrepareConfig
from tokenmill.prepare.config.presets import megatron_defaults, preset_defaults
from tokenmill.prepare.config.values import as_list, direction_files, mapping_setting, nested_settings
from tokenmill.settings import hints, is_sequence, problem

_MAPPINGS = ("tokenizer_options", "spm_extra_options", "storage_options")
Label = Callable[[str], str]


def build_config(
    settings: dict[str, Any],
    *,
    overrides: dict[str, Any] | None = None,
    config_file: str | os.PathLike[str] | None = None,
) -> PrepareConfig:
    """A validated config from a mapping (e.g. YAML content) and ``overrides`` (e.g. flags) on top of it.

    Unknown keys are errors with the nearest known one suggested; every value is type-checked. With
    ``config_file``, messages about settings that came from ``settings`` name the file and the key.
    """
    where = f"{os.fspath(config_file)}: " if config_file is not None else ""
    from_file = {str(key).replace("-", "_"): value for key, value in settings.items()}
    flags = {str(key).replace("-", "_"): value for key, value in (overrides or {}).items()}
    _check_known(from_file, where)
    _check_known(flags, "")
    labels = _file_labels(from_file, flags, where) if config_file is not None else {}

    def label(name: str) -> str:
        if name in NESTED:
            return labels.get(name) or name  # a mapping in YAML or Python; its flags are its fields'
        return labels.get(name) or flag_name(*reversed(name.split(".", 1)))

    given = _merged(from_file, flags)
    if given.get("input") and not given.get("trainpref"):  # Megatron's --input becomes the train files: name it so
        labels.setdefault("trainpref", labels.get("input") or flag_name("input"))
    merged = preset_defaults(megatron_defaults(given))
    values = {key: _value(key, value, merged, label) for key, value in merged.items()}
    return PrepareConfig(labels=labels, **values).validate()


def _check_known(given: dict[str, Any], where: str) -> None:
    for key in given:
        if key not in PLACES:
            raise ConfigError(f"{where}unknown setting {key!r}{_suggest(key)}; `tokenmill prepare --help` lists them")


def _file_labels(from_file: dict[str, Any], flags: dict[str, Any], where: str) -> dict[str, str]:
    """``file: key`` for each setting that came from the file and no flag overrode (nested keys one by one)."""
    labels: dict[str, str] = {}
    for key, value in from_file.items():
        if key in NESTED and isinstance(value, dict):
            overridden = flags.get(key) or {}
            labels[key] = f"{where}{key}"
            labels.update({f"{key}.{name}": f"{where}{key}.{name}" for name in value if name not in overridden})
        elif key not in flags:
            labels[key] = f"{where}{key}"
    return labels


def _merged(from_file: dict[str, Any], flags: dict[str, Any]) -> dict[str, Any]:
    """The file's settings with the flags on top (a nested group's flags change its keys one by one)."""
    merged = {**from_file}
    for key, value in flags.items():
        if key in NESTED and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _value(key: str, value: Any, merged: dict[str, Any], label: Label) -> Any:
    """Setting ``key``'s value as its section holds it, checked against its type hint."""
    if key == "directions":
        return direction_files(value, merged, label(key))
    if key in _MAPPINGS:
        return mapping_setting(value, label(key))
    if key in NESTED:
        return nested_settings(NESTED[key], value, key, label)
    hint = hints(PLACES[key].owner)[PLACES[key].name]
    if is_sequence(hint):
        return as_list(value, label(key))
    issue = problem(hint, value, label(key))
    if issue:
        raise ConfigError(issue)
    return value


def _suggest(key: str) -> str:
    """`` (did you mean ...)`` for an unknown top-level key: a setting, or a nested one written at the top
    (``nfkc`` -> ``normalize: {nfkc: ...}``; ``filter_max_tokens`` -> ``filters: {max_tokens: ...}``)."""
    candidates = {known: repr(known) for known in PLACES}
    for group, kind in NESTED.items():
        for item in fields(kind):
            nested = f"{group}: {{{item.name}: ...}}"
            candidates.setdefault(item.name, nested)
            candidates.setdefault(FLAG_PREFIX[group].replace("-", "_") + item.name, nested)
    close = key if key in candidates else next(iter(difflib.get_close_matches(key, list(candidates), n=1)), None)
    return f" (did you mean {candidates[close]}?)" if close else ""
