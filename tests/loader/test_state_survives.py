"""A damaged resume state (wrong types, wrong counts, huge or negative positions, missing keys) given to
``load_state_dict`` gives one tokenmill error, or resumes and serves batches; never another exception."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tests.survive.harness import budget, survived
from tests.survive.mutations import value_edits


@budget(50)
@given(st.data())
def test_a_damaged_resume_state_is_refused_or_resumes(survive_seeds, sandbox, data):
    state = json.loads(survive_seeds.state.read_text())
    edit = data.draw(value_edits(state), label="edit")
    survived(sandbox.call("resume", pair=str(survive_seeds.pair), state=edit.apply(state)), ["state", "resume"])
