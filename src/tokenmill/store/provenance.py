"""The provenance map beside a store: which input item (file and line or row) each stored item came from.

``{prefix}.prov`` (name from :func:`tokenmill.store.layout.provenance_path`) holds, for the stored items in
order, their 0-based numbers among the split's input items: all input files of the split one after another,
as the manifest lists them. Cleaning, dedup and filters only drop items and never reorder them, tasks and
shards cut them into consecutive runs, so the numbers of one store rise strictly; the file stores them in the
smaller of two encodings:

* ``runs``: consecutive numbers as runs, ``uint64`` starts then ``uint32`` lengths (12 bytes a run: a few
  bytes per corpus when nothing is dropped);
* ``bitmap``: one bit per input item from the first number to the last, set for the stored ones (1/8 byte per
  input item, whatever is dropped).

Layout (little-endian): the 8-byte magic ``TMPROV01``, a ``uint32`` header length, a JSON header
(``encoding``, ``items``: stored items, ``runs`` or ``first``/``span``, ``unit``: ``line`` or ``row``,
``files``: the input files, each one name or a ``[source, target]`` pair, ``counts``: items read per
file), then the body. Everything in it is a pure function of the inputs and settings.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.errors import FormatError
from tokenmill.fsutil import atomic_write

MAGIC = b"TMPROV01"
MAX_RUN = (1 << 32) - 1
POPCOUNT = np.array([bin(value).count("1") for value in range(256)], dtype=np.int64)
"""Set bits of each byte value."""
SELECT = np.array([[([bit for bit in range(8) if value >> bit & 1] + [0] * 8)[k] for k in range(8)]
                   for value in range(256)], dtype=np.int64)
"""``SELECT[value, k]``: the place of the k-th set bit (little-endian bit order) of a byte value."""


@dataclass(frozen=True)
class InputTable:
    """The input files of a split in order (a pair of files per entry for a parallel corpus) and the items
    read from each: item number ``n`` (0-based over all files) is item ``n - start`` of file ``f``."""

    files: list[Any]
    counts: list[int]
    unit: str = "line"

    @property
    def starts(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(np.asarray(self.counts, dtype=np.int64))]).astype(np.int64)

    def locate(self, numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(file index, 1-based line or row in it) of 0-based input item ``numbers``."""
        numbers = np.asarray(numbers, dtype=np.int64)
        starts = self.starts
        files = np.searchsorted(starts, numbers, side="right") - 1
        return files, numbers - starts[files] + 1

    def number_of(self, file: int, line: int) -> int:
        """The 0-based input item number of 1-based ``line`` of file ``file``."""
        if not 0 <= file < len(self.counts):
            raise FormatError(f"there is no input file number {file} (this split has {len(self.counts)})")
        if not 1 <= line <= self.counts[file]:
            raise FormatError(f"{self.name(file)} has {self.counts[file]} {self.unit}s; {self.unit} {line} is not one")
        return int(self.starts[file]) + line - 1

    def name(self, file: int) -> str:
        """The file (the source side's for a pair) as a user names it."""
        entry = self.files[file]
        return str(entry[0] if isinstance(entry, list | tuple) else entry)

    def find(self, name: str) -> list[int]:
        """The files whose path (either side of a pair), or its last part, is ``name``."""
        found = []
        for i, entry in enumerate(self.files):
            paths = [str(p) for p in (entry if isinstance(entry, list | tuple) else [entry])]
            if name in paths or any(os.path.basename(p) == name or p.endswith("/" + name) for p in paths):
                found.append(i)
        return found


def encode_numbers(numbers: np.ndarray) -> tuple[dict[str, Any], bytes]:
    """The smaller encoding of strictly rising 0-based item numbers: (header fields, body)."""
    numbers = np.asarray(numbers, dtype=np.int64)
    n = len(numbers)
    if n == 0:
        return {"encoding": "runs", "items": 0, "runs": 0}, b""
    breaks = np.flatnonzero(np.diff(numbers) != 1) + 1
    firsts = np.concatenate([[0], breaks])
    lengths = np.diff(np.concatenate([firsts, [n]]))
    first, span = int(numbers[0]), int(numbers[-1] - numbers[0] + 1)
    runs_bytes, bitmap_bytes = 12 * len(firsts), (span + 7) // 8
    if runs_bytes <= bitmap_bytes and int(lengths.max()) <= MAX_RUN:
        body = numbers[firsts].astype("<u8").tobytes() + lengths.astype("<u4").tobytes()
        return {"encoding": "runs", "items": n, "runs": len(firsts)}, body
    bits = np.zeros(span, dtype=bool)
    bits[numbers - first] = True
    body = np.packbits(bits, bitorder="little").tobytes()
    return {"encoding": "bitmap", "items": n, "first": first, "span": span}, body


def write_provenance(path: str | os.PathLike[str], numbers: np.ndarray, table: InputTable) -> Path:
    """Write the map of a store's items (``numbers``: their 0-based input item numbers, rising) atomically."""
    fields, body = encode_numbers(numbers)
    header = {**fields, "unit": table.unit, "files": table.files, "counts": [int(c) for c in table.counts]}
    raw = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    with atomic_write(Path(path), "wb") as handle:
        handle.write(MAGIC + np.uint32(len(raw)).astype("<u4").tobytes() + raw + body)
    return Path(path)


class Provenance:
    """A store's provenance map as read back (see the module's docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        data = self.path.read_bytes()
        if data[:8] != MAGIC or len(data) < 12:
            raise FormatError(f"{self.path}: not a tokenmill provenance map (no {MAGIC.decode()} header)")
        size = int(np.frombuffer(data[8:12], "<u4")[0])
        header = json.loads(data[12:12 + size].decode("utf-8"))
        self.header = header
        self.table = InputTable(header["files"], header["counts"], header.get("unit", "line"))
        self.items = int(header["items"])
        self._body = data[12 + size:]
        self._numbers: np.ndarray | None = None
        self._counts: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._run_arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def numbers(self) -> np.ndarray:
        """The 0-based input item number of every stored item (int64, decoded once)."""
        if self._numbers is None:
            self._numbers = _decode(self.header, self._body, self.path)
        return self._numbers

    def numbers_of(self, items: np.ndarray) -> np.ndarray:
        """The input item numbers of stored ``items``, without decoding the whole map (a search in the runs,
        or in the bitmap's running count of set bits per byte)."""
        items = np.asarray(items, dtype=np.int64)
        if items.size and (int(items.min()) < 0 or int(items.max()) >= self.items):
            raise FormatError(f"{self.path}: item out of range (the map holds {self.items} items)")
        if self._numbers is not None:
            return self._numbers[items]
        if self.header["encoding"] == "runs":
            starts, _, firsts = self._runs()
            run = np.searchsorted(firsts, items, side="right") - 1
            return starts[run] + items - firsts[run]
        data, before, through = self._bitmap()
        byte = np.searchsorted(through, items, side="right")
        return int(self.header["first"]) + 8 * byte + SELECT[data[byte], items - before[byte]]

    def item_of(self, number: int) -> int | None:
        """The stored item that input item ``number`` became; None when it was dropped (cleaning, dedup,
        filters) or went to another store (shard)."""
        if self.header["encoding"] == "runs":
            starts, lengths, firsts = self._runs()
            run = int(np.searchsorted(starts, number, side="right")) - 1
            inside = run >= 0 and number < starts[run] + lengths[run]
            return int(firsts[run] + number - starts[run]) if inside else None
        data, before, _ = self._bitmap()
        offset = number - int(self.header["first"])
        if not 0 <= offset < int(self.header.get("span", 0)):
            return None
        byte, bit = divmod(offset, 8)
        value = int(data[byte])
        return int(before[byte]) + (value & ((1 << bit) - 1)).bit_count() if value >> bit & 1 else None

    def _runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(starts, lengths, the first stored item of each run) of a ``runs`` map (read once)."""
        if self._run_arrays is None:
            runs = int(self.header["runs"])
            starts = np.frombuffer(self._body[: 8 * runs], "<u8").astype(np.int64)
            lengths = np.frombuffer(self._body[8 * runs:], "<u4").astype(np.int64)
            self._run_arrays = (starts, lengths, np.cumsum(lengths) - lengths)
        return self._run_arrays

    def _bitmap(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The bitmap's bytes and the set bits before each byte and through it (computed once, 16 bytes per
        byte of the bitmap: 2 bytes per input item while a trace runs)."""
        if self._counts is None:
            data = np.frombuffer(self._body, np.uint8)
            through = np.cumsum(POPCOUNT[data], dtype=np.int64)
            self._counts = (data, through - POPCOUNT[data], through)
        return self._counts


def _decode(header: dict[str, Any], body: bytes, path: Path) -> np.ndarray:
    n = int(header["items"])
    if header["encoding"] == "runs":
        runs = int(header["runs"])
        if len(body) != 12 * runs:
            raise FormatError(f"{path}: {len(body)} bytes of runs for {runs} runs (the file is cut short)")
        starts = np.frombuffer(body[: 8 * runs], "<u8").astype(np.int64)
        lengths = np.frombuffer(body[8 * runs:], "<u4").astype(np.int64)
        if int(lengths.sum()) != n:
            raise FormatError(f"{path}: the runs hold {int(lengths.sum())} items, the header says {n}")
        firsts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        return np.arange(n, dtype=np.int64) + np.repeat(starts - firsts, lengths)
    if header["encoding"] == "bitmap":
        span = int(header["span"])
        bits = np.unpackbits(np.frombuffer(body, np.uint8), count=span, bitorder="little")
        numbers = np.flatnonzero(bits).astype(np.int64) + int(header["first"])
        if len(numbers) != n:
            raise FormatError(f"{path}: the bitmap holds {len(numbers)} items, the header says {n}")
        return numbers
    raise FormatError(f"{path}: unknown provenance encoding {header['encoding']!r}")


__all__ = ["InputTable", "Provenance", "encode_numbers", "write_provenance"]
