"""A damaged YAML config (bytes, wrong types, deep nests, alias bombs, Python tags) read by ``load_yaml`` and
``build_config`` (what ``prepare -c`` does) gives one tokenmill error naming the file, or a valid config."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.survive.harness import budget, mutated, survived
from tests.survive.mutations import yaml_edits


@budget(60)
@given(st.data())
def test_a_damaged_config_is_refused_or_read(survive_seeds, sandbox, data):
    seed = survive_seeds.config
    edit = data.draw(yaml_edits(seed.read_bytes()), label="edit")
    with mutated(seed, None, edit) as copy:
        # a value's error names its key as the flag or as "file: key"; a missing required key, its flag
        survived(sandbox.call("config", path=str(copy)), [copy.name, "--"])
