"""Reading a YAML config file: ``yaml.safe_load`` only, with one clear error for each way a file can be wrong."""

from __future__ import annotations

import os
import re
from typing import Any

import yaml

from tokenmill.errors import ConfigError, opening

MAX_YAML_DEPTH = 64
"""Deepest nest of ``[``/``{`` a config may have (settings nest two or three deep)."""


def _flow_depth(text: str) -> int:
    """The deepest nest of brackets and braces in ``text``, counted over the bracket characters alone (quoting
    is ignored: an overestimate only for strings of many unclosed brackets)."""
    depth = deepest = 0
    for bracket in re.findall(r"[\[\]{}]", text):
        depth = depth + 1 if bracket in "[{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest



def load_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a YAML config (``yaml.safe_load`` only); relative data paths stay relative to the CWD."""
    fix = "give a YAML file of settings (see examples/config.yaml)"
    with opening(path, "a config file", fix), open(path, encoding="utf-8") as handle:
        text = handle.read()
    if _flow_depth(text) > MAX_YAML_DEPTH:  # YAML's parsers take quadratic time (then recurse) on deep nests
        raise ConfigError(f"{path}: brackets nested deeper than {MAX_YAML_DEPTH}; {fix}")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        place = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        reason = getattr(error, "problem", None) or " ".join(str(error).split())
        raise ConfigError(f"{place}: not valid YAML ({reason})") from None
    except (ValueError, RecursionError) as error:  # e.g. an integer of more digits than Python converts
        raise ConfigError(f"{path}: not valid YAML ({' '.join(str(error).split())[:200]}); {fix}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of settings (key: value lines); {fix}")
    return data
