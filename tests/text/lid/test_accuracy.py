"""Language-ID accuracy per language on UDHR sentences (tests/text/lid/udhr.py; FLORES-200 is not installable
here), printed in the test output, with a floor on the mean over the languages each backend knows."""

from __future__ import annotations

import numpy as np
import pytest

from tests.text.lid.udhr import accuracy, udhr_samples
from tokenmill.text.lid import make_backend

FLOORS = {"heliport": (150, 0.93), "py3langid": (100, 0.90)}
"""backend -> (at least this many languages scored, mean accuracy at least this)."""


@pytest.mark.parametrize("name", ["heliport", "py3langid"])
def test_accuracy_per_language(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip(name)
    scores = accuracy(make_backend(name), udhr_samples())
    mean = float(np.mean([share for share, _ in scores.values()]))
    rows = [f"{label:<10} {share:6.1%} {lines:3d} lines" for label, (share, lines) in sorted(scores.items())]
    with capsys.disabled():
        print(f"\n{name}: {len(scores)} languages, mean accuracy {mean:.1%} (UDHR sentences, per language:)")
        print("\n".join(rows))
    languages, floor = FLOORS[name]
    assert len(scores) >= languages
    assert mean >= floor
