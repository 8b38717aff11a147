"""A small, deterministic sample of what each cleaning step dropped, for people to look at.

For every reason (a filter step such as ``tokens`` or ``ratio``, ``leakage``, ``dedup``) a
:class:`DropSample` keeps the ``size`` dropped items whose *line number* has the smallest seeded
hash. The hash depends on the line number only, so:

* the sample is a pure function of the input: the same lines are kept whatever the chunk size,
  the number of worker processes or the order in which chunks finish;
* samples of disjoint parts merge exactly: :meth:`DropSample.merge` takes the union and keeps the
  ``size`` smallest hashes again, which is the sample a single pass would have kept;
* a re-run gives the same sample, and the chosen lines are spread over the whole file (a hash, not
  the first lines).

Line numbers are 1-based positions of the items in a split's input (over all its files, in order;
``Chunk.start + i + 1``). Texts are kept as the step saw them (after normalization), cut to
:data:`MAX_CHARS` characters so an over-long line cannot blow up the sample.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from tokenmill.errors import FormatError
from tokenmill.fsutil import write_json

DEFAULT_SIZE = 20
"""Items kept per reason."""
DEFAULT_SEED = 0x746F6B656E6D696C
"""Seed of the line-number hash ("tokenmil" in ASCII): fixed, so every run picks the same lines."""
MAX_CHARS = 1000
"""Longest text kept per side; longer texts end in an ellipsis."""

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)

Item = tuple[int, int, str, "str | None"]  # (hash key, line, src, tgt)


def line_keys(lines: np.ndarray | Sequence[int], seed: int = DEFAULT_SEED) -> np.ndarray:
    """uint64 SplitMix64 hash of each line number mixed with ``seed`` (vectorized, bijective per seed)."""
    with np.errstate(over="ignore"):
        z = np.asarray(lines, dtype=np.int64).astype(np.uint64) + np.uint64(seed % (1 << 64)) * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


class DropSample:
    """Per reason, the ``size`` dropped items with the smallest line hash; mergeable and JSON-able."""

    def __init__(self, size: int = DEFAULT_SIZE, seed: int = DEFAULT_SEED) -> None:
        if size < 0:
            raise ValueError(f"size must be >= 0, got {size}")
        self.size = int(size)
        self.seed = int(seed)
        self._items: dict[str, list[Item]] = {}  # reason -> items sorted by key, at most size

    # ---------------------------------------------------------------- recording
    def add(
        self,
        reason: str,
        lines: np.ndarray | Sequence[int],
        src: Sequence[str],
        tgt: Sequence[str] | None = None,
        positions: np.ndarray | Sequence[int] | None = None,
    ) -> None:
        """Offer dropped items: ``lines[i]`` is the line number of ``src[positions[i]]`` (and of
        ``tgt[positions[i]]``); ``positions`` None means ``0..len(lines)-1``. Only the texts of the
        items that enter the sample are read, so offering a whole chunk's drops is cheap."""
        lines = np.asarray(lines, dtype=np.int64)
        if not len(lines) or not self.size:
            return
        where = np.arange(len(lines)) if positions is None else np.asarray(positions, dtype=np.int64)
        if len(where) != len(lines):
            raise ValueError(f"{len(lines)} line numbers for {len(where)} positions")
        keys = line_keys(lines, self.seed)
        current = self._items.get(reason, [])
        if len(current) >= self.size:  # only keys below the current largest can get in
            below = np.flatnonzero(keys < np.uint64(current[-1][0]))
            keys, lines, where = keys[below], lines[below], where[below]
        if len(keys) > self.size:
            best = np.argpartition(keys, self.size - 1)[: self.size]
            keys, lines, where = keys[best], lines[best], where[best]
        offered = [
            (int(k), int(n), _clip(src[p]), None if tgt is None else _clip(tgt[p]))
            for k, n, p in zip(keys.tolist(), lines.tolist(), where.tolist(), strict=True)
        ]
        self._insert(reason, offered)

    def _insert(self, reason: str, items: Iterable[Item]) -> None:
        merged = {item[1]: item for item in self._items.get(reason, [])}  # a line counts once
        merged.update((item[1], item) for item in items)
        self._items[reason] = sorted(merged.values())[: self.size]

    def merge(self, other: DropSample) -> DropSample:
        """Add ``other``'s items (e.g. a worker's chunk) into this sample; returns self for chaining."""
        if other.seed != self.seed:
            raise ValueError(f"cannot merge drop samples with different seeds ({other.seed} vs {self.seed})")
        for reason, items in other._items.items():
            self._insert(reason, items)
        return self

    # ---------------------------------------------------------------- reading
    @property
    def reasons(self) -> list[str]:
        """Reasons with at least one item, in first-recorded order."""
        return [reason for reason, items in self._items.items() if items]

    def get(self, reason: str) -> list[dict[str, Any]]:
        """The sample of one reason as ``{"line", "src", "tgt"}`` records, in line order."""
        items = sorted(self._items.get(reason, []), key=lambda item: item[1])
        return [{"line": line, "src": src, "tgt": tgt} for _, line, src, tgt in items]

    def __len__(self) -> int:
        return sum(len(items) for items in self._items.values())

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """``{reason: [{"line", "src", "tgt"}, ...]}`` (reasons sorted, items in line order)."""
        return {reason: self.get(reason) for reason in sorted(self.reasons)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], size: int = DEFAULT_SIZE, seed: int = DEFAULT_SEED
    ) -> DropSample:
        """Rebuild a sample from :meth:`to_dict` output (hash keys are recomputed from the lines)."""
        sample = cls(size, seed)
        for reason, records in data.items():
            if not isinstance(reason, str) or not isinstance(records, list):
                raise FormatError(f"not a drop sample: {reason!r} -> {type(records).__name__}")
            items = []
            for record in records:
                if not isinstance(record, Mapping) or type(record.get("line")) is not int:
                    raise FormatError(f"drop sample {reason!r}: bad record {record!r}")
                src, tgt = record.get("src"), record.get("tgt")
                if not isinstance(src, str) or not (tgt is None or isinstance(tgt, str)):
                    raise FormatError(f"drop sample {reason!r}: bad texts in {record!r}")
                line = record["line"]
                items.append((int(line_keys([line], seed)[0]), line, src, tgt))
            sample._insert(reason, items)
        return sample

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_dict` as JSON atomically (``DESTDIR/.work/dropped/{split}.json``)."""
        os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
        write_json(path, self.to_dict())


__all__ = ["DEFAULT_SEED", "DEFAULT_SIZE", "MAX_CHARS", "DropSample", "line_keys"]
