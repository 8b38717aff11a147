"""The plan's counting pass over the training inputs as tasks: the same line index, from byte ranges.

Cutting ``clean.train`` into line ranges needs every input file's line count and the byte offset of every
``index_every``-th line (:class:`~tokenmill.text.readers.LineIndex`, what :func:`scan_lines` makes in one
pass). Here that pass runs as two rounds of tasks over byte ranges of the plain files (a range may start
mid-line: newlines are counted, nothing is parsed):

1. :func:`count_range`: the newlines in the range (and the file's last byte, for a last line without one).
   A compressed file cannot be entered mid-stream: its one task scans it whole.
2. :func:`range_offsets`: with the newlines before the range known (a prefix sum of round 1), the start of
   every line of the range whose number is a multiple of ``every``.

:func:`file_indexes` joins them into the state :meth:`~tokenmill.text.readers.Source.restore_index` takes,
equal to the one-pass scan's, so the plan (and the output) does not change. The two sides of a parallel
corpus are indexed alike, file by file, and must count the same lines.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.text.readers import detect_compression, scan_lines

MIN_RANGE_BYTES = 1 << 20
_READ_BYTES = 1 << 22


def byte_ranges(paths: Sequence[str], pieces: int) -> list[dict[str, Any]]:
    """About ``pieces`` ranges ``{"file", "start", "stop"}`` over the files (in file order, each file's in byte
    order; at least :data:`MIN_RANGE_BYTES` each); a compressed file is one range with ``stop`` None."""
    sizes = [os.path.getsize(path) for path in paths]
    compressed = [detect_compression(path) is not None for path in paths]
    plain_bytes = sum(size for size, packed in zip(sizes, compressed, strict=True) if not packed)
    per_range = max(MIN_RANGE_BYTES, -(-plain_bytes // max(1, pieces)))
    ranges: list[dict[str, Any]] = []
    for i, (size, packed) in enumerate(zip(sizes, compressed, strict=True)):
        if packed:
            ranges.append({"file": i, "start": 0, "stop": None})
            continue
        cuts = [*range(0, size, per_range), size]
        ranges += [{"file": i, "start": a, "stop": b} for a, b in pairwise(cuts)] or [
            {"file": i, "start": 0, "stop": 0}]
    return ranges


def _blocks(path: str, start: int, stop: int) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        handle.seek(start)
        left = stop - start
        while left > 0:
            data = handle.read(min(_READ_BYTES, left))
            if not data:
                raise TokenmillError(f"{path}: shorter than planned ({stop} bytes); it changed since the plan")
            left -= len(data)
            yield data


def count_range(path: str, start: int, stop: int | None, every: int) -> dict[str, Any]:
    """Round 1 for one range: its newlines and last byte; a compressed file (``stop`` None): its whole index."""
    if stop is None:
        index = scan_lines(path, every)
        return {"index": {"n_lines": index.n_lines, "size": index.size, "offsets": index.offsets.tolist(),
                          "compression": index.compression}}
    newlines, last = 0, b""
    for data in _blocks(path, start, stop):
        newlines += data.count(b"\n")
        last = data[-1:]
    return {"newlines": newlines, "last": last.hex()}


def range_offsets(path: str, start: int, stop: int, before: int, every: int) -> list[int]:
    """Round 2 for one range: the byte offsets of the lines starting after its newlines whose numbers are
    multiples of ``every`` (``before``: the newlines in the file before ``start``)."""
    found: list[np.ndarray] = []
    n, pos = before, start
    for data in _blocks(path, start, stop):
        c = data.count(b"\n")
        if (n + c) // every != n // every:  # line numbers n+1 .. n+c start in this block
            nl = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
            found.append(nl[(-(n + 1)) % every :: every].astype(np.int64) + (pos + 1))
        n += c
        pos += len(data)
    return np.concatenate(found).tolist() if found else []


def newlines_before(ranges: Sequence[dict[str, Any]], counted: Sequence[dict[str, Any]]) -> list[int]:
    """For each range, the newlines of its file before it (a prefix sum of round 1, file by file)."""
    out, seen, file = [], 0, None
    for where, result in zip(ranges, counted, strict=True):
        if where["file"] != file:
            seen, file = 0, where["file"]
        out.append(seen)
        seen += int(result.get("newlines", 0))
    return out


def file_indexes(
    paths: Sequence[str], ranges: Sequence[dict[str, Any]], counted: Sequence[dict[str, Any]],
    offsets: Sequence[list[int]], every: int,
) -> list[dict[str, Any]]:
    """Per file, the line index :meth:`~tokenmill.text.readers.Source.index_state` gives (see the module)."""
    states = []
    for i, path in enumerate(paths):
        mine = [k for k, where in enumerate(ranges) if where["file"] == i]
        if len(mine) == 1 and "index" in counted[mine[0]]:  # a compressed file, scanned whole
            states.append({"path": path, "every": every, **counted[mine[0]]["index"]})
            continue
        size = int(ranges[mine[-1]]["stop"])
        last = bytes.fromhex(next((counted[k]["last"] for k in reversed(mine) if counted[k]["last"]), "0a"))
        n_lines = sum(int(counted[k]["newlines"]) for k in mine) + (last != b"\n")
        starts = np.array([0] if size else [], dtype=np.int64)
        found = np.concatenate([starts, *(np.asarray(offsets[k], dtype=np.int64) for k in mine),
                                np.array([size], dtype=np.int64)])
        if len(found) >= 2 and found[-2] == size:  # a newline at the end of the file opens no line
            found = np.delete(found, -2)
        states.append({"path": path, "n_lines": int(n_lines), "size": size, "every": every,
                       "offsets": found.tolist(), "compression": None})
    return states


def check_pairs(states: Sequence[dict[str, Any]]) -> None:
    """The two sides of each file pair (states in pair order: source, target, ...) count the same lines."""
    for src, tgt in zip(states[::2], states[1::2], strict=True):
        if src["n_lines"] != tgt["n_lines"]:
            raise TokenmillError(
                f"line counts differ: {src['path']} has {src['n_lines']:,} lines but {tgt['path']} has "
                f"{tgt['n_lines']:,}; the two sides must align line by line: check for a truncated or wrong file"
            )


__all__ = ["byte_ranges", "check_pairs", "count_range", "file_indexes", "newlines_before", "range_offsets"]
