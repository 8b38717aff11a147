"""Per-line letter / whitespace / script counts computed over whole chunks."""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.text.charclass import nonletter_fraction, script_fraction


def slow_nonletter(line: str) -> float:
    visible = [c for c in line if not c.isspace()]
    if not visible:
        return 0.0
    letters = sum(unicodedata.category(c)[0] in "LM" for c in visible)
    return (len(visible) - letters) / len(visible)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab1 !\t中é\u0301\u093f\u2028😀")), max_size=10), max_size=20))
def test_nonletter_fraction_matches_per_char_definition(lines: list[str]) -> None:
    np.testing.assert_allclose(nonletter_fraction(lines), [slow_nonletter(x) for x in lines])


def test_script_fraction() -> None:
    pytest.importorskip("regex")
    got = script_fraction(["这是ABC", "abc", "123", "カタカナ漢字", ""], "Han")
    np.testing.assert_allclose(got, [0.4, 0.0, 1.0, 2 / 6, 1.0])
    np.testing.assert_allclose(script_fraction(["カタカナ漢字"], "Han+Katakana"), [1.0])
