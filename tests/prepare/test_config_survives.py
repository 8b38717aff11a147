"""A damaged YAML config (bytes, wrong types, deep nests, alias bombs, Python tags) read by ``load_yaml`` and
``build_config`` (what ``prepare -c`` does) gives one tokenmill error naming the file, or a valid config."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.survive.harness import budget, mutated, survived
from tests.survive.mutations import yaml_edits
from tokenmill.errors import ConfigError
from tokenmill.prepare import load_yaml


@budget(40)
@given(st.data())
def test_a_damaged_config_is_refused_or_read(survive_seeds, sandbox, data):
    seed = survive_seeds.config
    edit = data.draw(yaml_edits(seed.read_bytes()), label="edit")
    with mutated(seed, None, edit) as copy:
        # a value's error names its key as the flag or as "file: key"; a missing required key, its flag
        survived(sandbox.call("config", path=str(copy)), [copy.name, "--"])


def test_a_config_nested_too_deep_is_refused_at_once(tmp_path):
    """yaml-deep (``a: [[[[...``): PyYAML took quadratic time on it (a hang), then a RecursionError."""
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * 100_000)
    began = time.perf_counter()
    with pytest.raises(ConfigError, match=r"deep\.yaml: brackets nested deeper than 64"):
        load_yaml(path)
    assert time.perf_counter() - began < 5


def test_a_config_with_an_integer_of_thousands_of_digits_names_the_file(tmp_path):
    """yaml-huge-int: Python's int() limit raised a ValueError out of yaml.safe_load."""
    path = tmp_path / "huge.yaml"
    path.write_text("workers: " + "9" * 5000 + "\n")
    with pytest.raises(ConfigError, match=r"huge\.yaml: not valid YAML \(Exceeds the limit"):
        load_yaml(path)
