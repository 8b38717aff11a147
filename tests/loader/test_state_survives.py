"""A damaged resume state (wrong types, wrong counts, huge or negative positions, missing keys) given to
``load_state_dict`` gives one tokenmill error, or resumes and serves batches; never another exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.survive.harness import budget, survived
from tests.survive.mutations import value_edits
from tests.survive.seeds import state_iterator
from tokenmill.errors import TokenmillError


@budget(40)
@given(st.data())
def test_a_damaged_resume_state_is_refused_or_resumes(survive_seeds, sandbox, data):
    state = json.loads(survive_seeds.state.read_text())
    edit = data.draw(value_edits(state), label="edit")
    survived(sandbox.call("resume", pair=str(survive_seeds.pair), state=edit.apply(state)),
             ["state", "resume", "step", "epoch"])


@pytest.mark.parametrize("field, value", [
    ("consumed", None), ("step", [1]), ("step", "1"), ("epoch", -1), ("epoch", True), ("world_size", 0),
    ("segments", [[1]]), ("segments", {"a": 1}), ("config", [1, 2]),
])
def test_a_resume_state_field_of_the_wrong_type_is_named(survive_seeds, field, value):
    """set['consumed']=None, set['step']=[...] and others: a TypeError or ValueError from int() in
    load_state_dict, or a negative position taken as it came."""
    state = {**json.loads(survive_seeds.state.read_text()), field: value}
    with pytest.raises(TokenmillError, match=rf"iterator state field '{field}' is "):
        state_iterator(survive_seeds.pair).load_state_dict(state)
