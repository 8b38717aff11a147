"""Lines of text files: the sparse line index, byte ranges, and UTF-8 decoding with the house's rules.

* Lines end at ``\\n`` or ``\\r\\n`` only. U+2028, U+0085, ``\\x0b``, ``\\x0c``, ``\\x1c``-``\\x1e`` and a
  lone ``\\r`` stay inside a line (Python's text mode and ``str.splitlines`` split on those; we read
  bytes). A final line without ``\\n`` counts as a line (a ``\\r`` ending it is dropped as half a
  CRLF); an empty file has none.
* UTF-8 only; a UTF-8 BOM at the start of a file is dropped. Bad bytes follow ``on_invalid_utf8``:
  ``"error"`` (message with file, 1-based line and the option that helps), ``"replace"`` (U+FFFD,
  counted) or ``"skip"`` (line dropped together with its pair, counted).
* :class:`LineIndex` keeps the byte offset of every ``index_every``-th line, built in the counting pass,
  so a range of lines is read by seeking (plain files) instead of from the start. Plain files can also
  be cut by bytes (:func:`byte_ranges` + :func:`iter_byte_range`).
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.text.chunks import OnInvalidUtf8, ReadOptions
from tokenmill.text.io import READ_ERRORS, PathLike, corrupt_file, detect_compression, open_binary, read_blocks
from tokenmill.text.stats import StepStats

BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_UTF8_FIX = (
    "Fix the file (e.g. `iconv -f <its encoding> -t UTF-8`), or pass --on-invalid-utf8 replace "
    "(bad bytes become U+FFFD) or --on-invalid-utf8 skip (the line and its pair are dropped and counted)"
)


@dataclass(frozen=True)
class LineIndex:
    """Line count of one file plus the byte offset of every ``every``-th line (decompressed bytes).

    ``offsets[i]`` is where line ``i * every`` starts, for every such line that exists, followed by one
    last entry: the total size. With ``every=1`` this is the full table of line starts (n_lines + 1).
    """

    path: str
    n_lines: int
    size: int  # bytes after decompression
    every: int
    offsets: np.ndarray  # int64
    compression: str | None

    def seek_point(self, line: int) -> tuple[int, int]:
        """(first line at or before ``line`` that has a known offset, that offset)."""
        k = min(line // self.every, len(self.offsets) - 1)
        return k * self.every, int(self.offsets[k])


def scan_lines(path: PathLike, every: int = 1 << 16, block_bytes: int = 1 << 22) -> LineIndex:
    """Count lines and record the start offset of every ``every``-th line, vectorized per block."""
    if every < 1:
        raise ConfigError(f"every must be >= 1, got {every}")
    kind = detect_compression(path)
    n, pos, last = 0, 0, b"\n"
    parts: list[np.ndarray] = []
    with open_binary(path) as f:
        for data in read_blocks(f, path, block_bytes):
            counts = _piece_counts(data) if every > 1 else None
            c = data.count(b"\n") if counts is None else int(counts[-1])
            # line numbers n+1 .. n+c start right after this block's newlines; keep multiples of `every`
            if (n + c) // every != n // every:
                first = (-(n + 1)) % every  # index among the block's newlines of the first opening a kept line
                wanted = np.arange(first, c, every, dtype=np.int64)
                nl = _newlines(data, wanted, counts)
                parts.append(nl.astype(np.int64) + (pos + 1))
            n += c
            pos += len(data)
            last = data[-1:]
    n_lines = n + (last != b"\n")
    starts = [np.zeros(1 if pos else 0, dtype=np.int64), *parts, np.array([pos], dtype=np.int64)]
    offsets = np.concatenate(starts)
    if len(offsets) >= 2 and offsets[-2] == pos:  # a newline at EOF does not open a line
        offsets = np.delete(offsets, -2)
    return LineIndex(str(path), int(n_lines), int(pos), int(every), offsets, kind)


_PIECE = 1 << 16  # bytes per piece when a block's newlines are counted piece by piece


def _piece_counts(data: bytes) -> np.ndarray:
    """Cumulative newline counts of ``data`` at the end of each ``_PIECE``-byte piece: the newlines' positions
    binned by piece (one vectorized pass; ~2x ``bytes.count`` piece by piece, sparse or dense newlines)."""
    if not data:
        return np.zeros(1, dtype=np.int64)
    where = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    return np.cumsum(np.bincount(where // _PIECE, minlength=-(-len(data) // _PIECE)))


def _newlines(data: bytes, wanted: np.ndarray, counts: np.ndarray | None) -> np.ndarray:
    """Offsets in ``data`` of its newlines number ``wanted`` (0-based, ascending). With the pieces' ``counts``
    (few wanted: a scan keeping one line in many) only the pieces holding one are searched."""
    if counts is None or len(wanted) > len(counts):
        return np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)[wanted]
    pieces = np.searchsorted(counts, wanted, side="right")
    out = np.empty(len(wanted), dtype=np.int64)
    for i, (k, piece) in enumerate(zip(wanted.tolist(), pieces.tolist(), strict=True)):
        start = piece * _PIECE
        before = int(counts[piece - 1]) if piece else 0
        found = np.flatnonzero(np.frombuffer(data[start : start + _PIECE], dtype=np.uint8) == 10)
        out[i] = start + found[k - before]
    return out


def line_offsets(path: PathLike) -> np.ndarray:
    """int64 start offset of every line, then the file size (length n_lines + 1)."""
    return scan_lines(path, every=1).offsets


def byte_ranges(path: PathLike, k: int) -> list[tuple[int, int]]:
    """Cut a plain file into ``k`` contiguous ``(start, end)`` byte ranges that start at line starts.

    Ranges cover the file exactly once; some may be empty when lines are longer than size / k.
    Compressed files cannot be cut by bytes: use line ranges (:meth:`Source.ranges`) instead.
    """
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    kind = detect_compression(path)
    if kind is not None:
        raise TokenmillError(
            f"{path}: is {kind}-compressed and cannot be cut into byte ranges; read it by line ranges "
            "(Source.ranges / Source.chunks(start, stop)) or decompress it first"
        )
    size = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as f:
        for i in range(1, k):
            target = max(size * i // k, cuts[-1])
            if target == 0:
                cuts.append(0)
                continue
            f.seek(target - 1)  # a line starts at `target` when the byte before it is a newline
            pos = target - 1
            while True:
                data = f.read(1 << 16)
                j = data.find(b"\n")
                if j >= 0:
                    cuts.append(pos + j + 1)
                    break
                if not data:
                    cuts.append(size)
                    break
                pos += len(data)
    cuts.append(size)
    return [(cuts[i], cuts[i + 1]) for i in range(k)]


def _raw_blocks(
    f: BinaryIO, path: PathLike, start: int, end: int | None, block_bytes: int
) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) blocks of whole lines, each ending with ``\\n`` (one is added to a final line)."""
    consumed, carry, carry_off = start, b"", start
    while True:
        want = block_bytes if end is None else min(block_bytes, end - consumed)
        try:
            data = f.read(want) if want > 0 else b""
        except READ_ERRORS as exc:
            raise corrupt_file(path, exc) from exc
        if not data:
            if carry:
                yield carry_off, carry + b"\n"
            return
        consumed += len(data)
        if carry:
            data = carry + data
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            carry = data
            continue
        yield carry_off, data[:cut] if cut < len(data) else data
        carry, carry_off = data[cut:], carry_off + cut


def _newline_positions(block: bytes) -> np.ndarray:
    return np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)


def _take_lines(blocks: Iterator[tuple[int, bytes]], skip: int, limit: int | None) -> Iterator[tuple[int, bytes]]:
    """Drop the first ``skip`` lines, then stop after ``limit`` lines (None: to the end)."""
    for off, block in blocks:
        if not skip and limit is None:  # the rest as it comes: no need to count its lines
            yield off, block
            continue
        if limit is not None and limit <= 0:
            return
        k = block.count(b"\n")
        if skip:
            if k <= skip:
                skip -= k
                continue
            cut = int(_newline_positions(block)[skip - 1]) + 1
            off, block, k, skip = off + cut, block[cut:], k - skip, 0
        if limit is not None and k >= limit:
            yield off, block[: int(_newline_positions(block)[limit - 1]) + 1]
            return
        if limit is not None:
            limit -= k
        yield off, block


def _where(path: PathLike, line: int | None, offset: int) -> str:
    return f"{path}:{line}" if line is not None else f"{path}: line at byte offset {offset}"


def decode_block(
    block: bytes,
    offset: int,
    first_line: int | None,
    path: PathLike,
    policy: OnInvalidUtf8,
    stats: StepStats,
) -> list[str | None]:
    """Decode a block of ``\\n``-terminated lines; ``None`` marks a line dropped under ``skip``.

    ``first_line`` is the 0-based file line number of the block's first line (None when unknown, as
    for a byte range read without it); messages report 1-based lines.
    """
    if offset == 0:
        if block.startswith(BOM):
            block, offset = block[len(BOM) :], len(BOM)
            stats.add("bom_dropped")
        elif block.startswith(_UTF16_BOMS):
            raise TokenmillError(
                f"{path}: starts with a UTF-16 byte order mark; tokenmill reads UTF-8 only. "
                "Convert it first: iconv -f UTF-16 -t UTF-8"
            )
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:
        return _decode_slow(block, offset, first_line, path, policy, stats)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    lines: list[str | None] = text.split("\n")  # type: ignore[assignment]
    lines.pop()  # the block ends with "\n": drop the empty tail
    return lines


def _decode_slow(
    block: bytes,
    offset: int,
    first_line: int | None,
    path: PathLike,
    policy: OnInvalidUtf8,
    stats: StepStats,
) -> list[str | None]:
    """Decode around each bad line: good stretches in one C call, bad lines one by one."""
    out: list[str | None] = []
    view, pos = memoryview(block), 0
    while pos < len(block):
        try:
            text = codecs.utf_8_decode(view[pos:], "strict", True)[0]
        except UnicodeDecodeError as exc:
            bad = pos + exc.start
            ls = max(block.rfind(b"\n", pos, bad) + 1, pos)  # start of the bad line
            le = block.find(b"\n", bad)
            if ls > pos:
                good = codecs.utf_8_decode(view[pos:ls], "strict", True)[0].replace("\r\n", "\n")
                out.extend(good.split("\n")[:-1])
            line_no = None if first_line is None else first_line + len(out) + 1
            if policy == "error":
                raise TokenmillError(
                    f"{_where(path, line_no, offset + ls)}: invalid UTF-8 (byte {bad - ls + 1} of the line: "
                    f"{block[bad : bad + 4]!r}). {_UTF8_FIX}"
                ) from None
            if policy == "replace":
                line = block[ls:le].decode("utf-8", "replace")
                out.append(line[:-1] if line.endswith("\r") else line)
                stats.add("invalid_utf8_replaced")
            else:
                out.append(None)
                stats.add("invalid_utf8_lines")
            pos = le + 1
            continue
        out.extend(text.replace("\r\n", "\n").split("\n")[:-1])
        break
    return out


def decoded_lines(
    path: PathLike,
    opts: ReadOptions,
    stats: StepStats,
    *,
    start_line: int = 0,
    stop_line: int | None = None,
    index: LineIndex | None = None,
) -> Iterator[tuple[int, list[str | None]]]:
    """(first file line, decoded lines) blocks for file lines ``[start_line, stop_line)``."""
    line = start_line
    for off, block in line_blocks(path, opts, start_line=start_line, stop_line=stop_line, index=index):
        lines = decode_block(block, off, line, path, opts.on_invalid_utf8, stats)
        yield line, lines
        line += len(lines)


def line_blocks(
    path: PathLike,
    opts: ReadOptions,
    *,
    start_line: int = 0,
    stop_line: int | None = None,
    index: LineIndex | None = None,
) -> Iterator[tuple[int, bytes]]:
    """(byte offset, bytes) blocks of whole ``\\n``-terminated lines for file lines ``[start_line, stop_line)``,
    not decoded: :func:`decode_block` decodes one with the house's rules, or a format parses the bytes itself
    (JSONL: a JSON parser that checks UTF-8 as it goes) and decodes only a block it cannot take."""
    line0, off0 = index.seek_point(start_line) if index is not None else (0, 0)
    limit = None if stop_line is None else stop_line - start_line
    with open_binary(path) as f:
        if off0 and index is not None and index.compression is None:
            f.seek(off0)
        elif off0:  # compressed streams cannot seek: decompress and discard up to the offset
            left = off0
            while left > 0:
                try:
                    data = f.read(min(left, opts.block_bytes))
                except READ_ERRORS as exc:
                    raise corrupt_file(path, exc) from exc
                if not data:
                    raise TokenmillError(f"{path}: changed while being read (shorter than its index says)")
                left -= len(data)
        yield from _take_lines(_raw_blocks(f, path, off0, None, opts.block_bytes), start_line - line0, limit)


def iter_byte_range(
    path: PathLike,
    start: int,
    end: int | None,
    options: ReadOptions | None = None,
    stats: StepStats | None = None,
    first_line: int | None = None,
) -> Iterator[list[str]]:
    """Decoded lines of a plain file between two byte offsets that are line starts (see byte_ranges).

    Lines skipped under ``on_invalid_utf8="skip"`` are left out and counted in ``stats``. Pass
    ``first_line`` (0-based) when known, so that messages name line numbers instead of byte offsets.
    """
    opts = options or ReadOptions()
    stats = stats if stats is not None else StepStats("read")
    if detect_compression(path) is not None:
        raise TokenmillError(f"{path}: is compressed; byte ranges apply to plain files only")
    line = first_line
    with open(path, "rb") as f:
        f.seek(start)
        for off, block in _raw_blocks(f, path, start, end, opts.block_bytes):
            lines = decode_block(block, off, line, path, opts.on_invalid_utf8, stats)
            if line is not None:
                line += len(lines)
            stats.add("read", len(lines))
            if None in lines:
                lines = [x for x in lines if x is not None]
            yield lines  # type: ignore[misc]


__all__ = [
    "BOM",
    "LineIndex",
    "byte_ranges",
    "decoded_lines",
    "iter_byte_range",
    "line_offsets",
    "scan_lines",
]
