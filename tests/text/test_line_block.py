"""LineBlock: the kept lines of a block are the lines of the mask, in order, as bytes."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from tokenmill.text.line_block import LineBlock, line_text, newline_offsets


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


@pytest.mark.parametrize("quoted", [False, True])
def test_a_blocks_line_ends_travel_with_it_and_equal_a_scan_of_its_bytes(quoted: bool) -> None:
    lines = ["first", "", "中文 line", "a\tb", "two\nlines" if quoted else "two", "last 😀"]
    block = LineBlock.from_lines(lines, quoted)
    assert block._ends is not None  # found by the worker that built it, not by the parent
    scanned = [i for i, byte in enumerate(block.data) if byte == 10]
    assert block.ends.tolist() == scanned and block.ends.dtype == np.int32
    assert newline_offsets(block.data).tolist() == scanned
    received = pickle.loads(pickle.dumps(block))
    assert received._ends is not None and received.ends.tolist() == scanned
    assert [received[i] for i in range(len(received))] == lines
    assert LineBlock(block.data, quoted).ends.tolist() == scanned  # a block made from bytes scans them


@pytest.mark.parametrize("quoted", [False, True])
def test_kept_runs_are_views_of_the_kept_bytes(quoted: bool) -> None:
    rng = np.random.default_rng(11)
    lines = ["y" * int(n) + "é" for n in rng.integers(0, 30, 3000)]
    block = LineBlock.from_lines(lines, quoted)
    for p in (0.0, 0.02, 0.5, 1.0):
        keep = rng.random(len(lines)) >= p
        want = [x for x, k in zip(lines, keep, strict=True) if k]
        runs = block.kept_runs(keep)
        assert all(isinstance(run, memoryview) for run in runs)
        assert b"".join(runs) == block.kept(keep) == (line_text(want, quoted).encode() if want else b"")
        edges = np.count_nonzero(np.diff(keep.view(np.int8), prepend=0) == 1)
        assert len(runs) == edges or (keep.all() and len(runs) == 1)
