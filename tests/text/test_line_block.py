"""LineBlock: the kept lines of a block are the lines of the mask, in order, as bytes."""

from __future__ import annotations

import numpy as np
import pytest

from tokenmill.text.line_block import LineBlock, line_text


@pytest.mark.parametrize("quoted", [False, True])
@pytest.mark.parametrize(
    "mask",
    ["11111", "00000", "01111", "11110", "10101", "01010", "10001", "01110", "1", "0"],
)
def test_kept_are_the_masked_lines(mask: str, quoted: bool) -> None:
    lines = ["first", "", "中文 line", "a\tb", "last 😀"][: len(mask)]
    keep = np.array([c == "1" for c in mask], dtype=bool)
    block = LineBlock.from_lines(lines, quoted)
    want = [x for x, k in zip(lines, keep, strict=True) if k]
    assert block.kept(keep) == (line_text(want, quoted).encode() if want else b"")
    assert [block[i] for i in range(len(block))] == lines


def test_kept_on_many_lines_equals_a_byte_mask() -> None:
    rng = np.random.default_rng(7)
    lines = ["x" * int(n) for n in rng.integers(0, 40, 5000)]
    block = LineBlock.from_lines(lines, False)
    for p in (0.01, 0.5, 0.99):
        keep = rng.random(len(lines)) > p
        want = "".join(line + "\n" for line, k in zip(lines, keep, strict=True) if k).encode()
        assert block.kept(keep) == want
