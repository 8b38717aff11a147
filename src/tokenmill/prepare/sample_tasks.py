"""The tokenizer's training sample of a tasked run: candidates per clean part in tasks, the ``k`` smallest
keys merged on the coordinator.

Task i reads clean part i through its duplicate mask and keeps, per model, the part's ``k`` lines with the
smallest seeded keys of their global line numbers, among those below the text's key limit (its share of
``k`` plus a margin, :func:`~tokenmill.prepare.line_sample.key_limit`: 200 parts of a 1B-line text write
about ``k`` lines in all, not 200 ``k``) (:class:`~tokenmill.prepare.line_sample.SmallestKeys`;
a model's sides count one after another: side ``j``'s line ``n`` is number ``j * total + n``). It writes
them sorted by key: ``{model}.keys.npy``, ``{model}.numbers.npy``, ``{model}.lines.jsonl`` (one JSON string
a line) and ``{model}.ends.npy`` (where each line ends in it).

The coordinator finds the ``k``-th smallest key of all parts by bisecting on the key's value (one binary
search per part and step, through maps: a few pages each), then reads from each part only the lines below
it: about ``k`` lines in all, whatever the number of parts. Sorted by line number they are the sample one
pass over the whole cleaned text keeps. Should the parts hold fewer than ``k`` keys below the limit (odds of
about e^-32), the merge says so and the sample is drawn in one pass over the parts.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tokenmill.fsutil import atomic_path, atomic_write
from tokenmill.prepare.clean_parts import CleanParts
from tokenmill.prepare.line_sample import SmallestKeys, key_limit

_TOP = (1 << 64) - 1


def _save(path: Path, array: np.ndarray) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.save(handle, array, allow_pickle=False)


def part_candidates(
    parts: CleanParts, index: int, langs: list[str], base: int, total: int, capacity: int, seed: int,
    folder: Path, name: str,
) -> int:
    """Write part ``index``'s candidates for the model ``name`` of ``langs`` into ``folder``; ``base``: the
    global number of the part's first line that stays, ``total``: lines that stay in all parts (per side).
    Returns the candidates written."""
    sample = SmallestKeys(capacity, seed, limit=key_limit(capacity, len(langs) * total))
    for side, lang in enumerate(langs):
        sample.seen = side * total + base
        for lines in parts.part_chunks(index, lang):
            sample.add(lines)
    keys, numbers, lines = sample.to_arrays()
    order = np.argsort(keys)
    encoded = [json.dumps(lines[i], ensure_ascii=False).encode("utf-8") + b"\n" for i in order.tolist()]
    with atomic_write(folder / f"{name}.lines.jsonl", "wb") as handle:
        handle.write(b"".join(encoded))
    ends = np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)))
    _save(folder / f"{name}.ends.npy", ends)
    _save(folder / f"{name}.numbers.npy", numbers[order].astype(np.int64))
    _save(folder / f"{name}.keys.npy", keys[order].astype(np.uint64))  # last: the task's marker follows
    return len(encoded)


def merged_sample(folders: list[Path], name: str, capacity: int, population: int) -> list[str] | None:
    """The ``capacity`` candidates of all parts with the smallest keys, in line order; None when the parts'
    key limit left fewer than ``capacity`` of the ``population`` lines (draw the sample in one pass then)."""
    maps = [np.load(folder / f"{name}.keys.npy", mmap_mode="r") for folder in folders]

    def count_below(limit: int) -> list[int]:
        return [int(np.searchsorted(keys, np.uint64(limit), side="right")) for keys in maps]

    counts = count_below(_TOP)
    if sum(counts) < min(capacity, population):
        return None
    if sum(counts) > capacity:
        lo, hi = 0, _TOP  # the smallest limit with ``capacity`` keys at or below it (keys are distinct)
        while lo < hi:
            mid = (lo + hi) // 2
            if sum(count_below(mid)) >= capacity:
                hi = mid
            else:
                lo = mid + 1
        counts = count_below(lo)
    maps.clear()
    numbers: list[np.ndarray] = []
    lines: list[str] = []
    for folder, count in zip(folders, counts, strict=True):
        if not count:
            continue
        numbers.append(np.array(np.load(folder / f"{name}.numbers.npy", mmap_mode="r")[:count]))
        end = int(np.load(folder / f"{name}.ends.npy", mmap_mode="r")[count - 1])
        with open(folder / f"{name}.lines.jsonl", "rb") as handle:
            lines.extend(json.loads(line) for line in handle.read(end).split(b"\n")[:-1])
    if not numbers:
        return []
    order = np.argsort(np.concatenate(numbers), kind="stable")
    return [lines[i] for i in order.tolist()]


__all__ = ["merged_sample", "part_candidates"]
