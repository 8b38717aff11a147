"""Read raw text so that a parallel corpus can never misalign.

Rules this module enforces (DESIGN.md, "Rules of the house"):

* Files are opened by magic bytes first and name second: plain, gzip, bzip2, xz, zstd (several
  zstd frames or gzip members in one file are read through).
* Lines end at ``\\n`` or ``\\r\\n`` only. U+2028, U+0085, ``\\x0b``, ``\\x0c``, ``\\x1c``-``\\x1e`` and a
  lone ``\\r`` stay inside a line (Python's text mode and ``str.splitlines`` split on those; we read
  bytes). A final line without ``\\n`` counts as a line (a ``\\r`` ending it is dropped as half a
  CRLF); an empty file has none.
* UTF-8 only; a UTF-8 BOM at the start of a file is dropped. Bad bytes follow ``on_invalid_utf8``:
  ``"error"`` (message with file, 1-based line and the option that helps), ``"replace"`` (U+FFFD,
  counted) or ``"skip"`` (line dropped together with its pair, counted).
* Two sides of different length are an error naming both files and counts, raised by
  :meth:`Source.scan`, which every read calls before yielding anything.

Reading is batch-oriented: :meth:`Source.chunks` yields :class:`Chunk` objects of ``chunk_lines``
aligned items. Work can be split across processes by line numbers: :meth:`Source.ranges` cuts
``[0, len)`` into K ranges and ``chunks(start, stop)`` reads one, seeking through a sparse
:class:`LineIndex` (byte offset every ``index_every`` lines) built during the counting pass. Plain
files can also be cut by bytes (:func:`byte_ranges` + :func:`iter_byte_range`).
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import json
import lzma
import os
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np

from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.text.stats import StepStats

OnInvalidUtf8 = Literal["error", "replace", "skip"]
OnMalformed = Literal["error", "skip"]
PathLike = str | os.PathLike

BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
_EXTENSIONS = {".gz": "gzip", ".gzip": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd", ".zstd": "zstd"}
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")
_READ_ERRORS: tuple[type[BaseException], ...] = (EOFError, OSError, zlib.error, lzma.LZMAError)
try:  # zstandard is a declared dependency; stay importable if an environment lacks it
    import zstandard

    _READ_ERRORS = (*_READ_ERRORS, zstandard.ZstdError)
except ImportError:  # pragma: no cover - exercised only in broken environments
    zstandard = None  # type: ignore[assignment]

_MALFORMED = object()  # placeholder for a TSV/JSONL row that is skipped under on_malformed="skip"
_UTF8_FIX = (
    "Fix the file (e.g. `iconv -f <its encoding> -t UTF-8`), or pass --on-invalid-utf8 replace "
    "(bad bytes become U+FFFD) or --on-invalid-utf8 skip (the line and its pair are dropped and counted)"
)
_MALFORMED_FIX = "Fix the row, or pass --on-malformed skip to drop such rows (they are counted)"


@dataclass(frozen=True)
class ReadOptions:
    """How sources are read; one object is shared by every source of a run."""

    on_invalid_utf8: OnInvalidUtf8 = "error"  # "error" | "replace" (U+FFFD, counted) | "skip" (counted)
    on_malformed: OnMalformed = "error"  # TSV/JSONL rows without the expected fields: "error" | "skip"
    chunk_lines: int = 8192  # items per yielded Chunk (the last one may be shorter)
    block_bytes: int = 1 << 20  # bytes read per system call; lines longer than this still work
    index_every: int = 1 << 14  # one byte offset kept per this many lines, for seeking to a range start (the
    # pipeline cleans ranges of 16,384 items: each starts at a kept offset, nothing is read twice)

    def __post_init__(self) -> None:
        if self.on_invalid_utf8 not in ("error", "replace", "skip"):
            raise ConfigError(f"on_invalid_utf8={self.on_invalid_utf8!r}: choose one of 'error', 'replace', 'skip'")
        if self.on_malformed not in ("error", "skip"):
            raise ConfigError(f"on_malformed={self.on_malformed!r}: choose one of 'error', 'skip'")
        for name in ("chunk_lines", "block_bytes", "index_every"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be a positive integer, got {getattr(self, name)!r}")


# --------------------------------------------------------------------------------------------------
# opening and counting


def detect_compression(path: PathLike) -> str | None:
    """``"gzip" | "bz2" | "xz" | "zstd"`` or None for plain text; magic bytes win over the name.

    A name that promises compression (``.gz``...) on a non-empty file without the matching magic is
    an error: such a file is truncated, corrupt or misnamed, and reading it as text would be a guess.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(10)
    except FileNotFoundError:
        raise TokenmillError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TokenmillError(f"{path}: is a directory, expected a text file") from None
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head.startswith(b"BZh") and head[3:4].isdigit() and head[4:10] == b"1AY&SY":
        return "bz2"
    by_name = _EXTENSIONS.get(path.suffix.lower())
    if by_name and head:
        raise TokenmillError(
            f"{path}: the name says {by_name} but the file does not start with {by_name} magic bytes; "
            f"it is corrupt or misnamed. Recompress it, or drop {path.suffix!r} from the name "
            "if it is plain text"
        )
    return None


def open_binary(path: PathLike) -> BinaryIO:
    """Open ``path`` for reading decompressed bytes, whatever its compression."""
    kind = detect_compression(path)
    if kind is None:
        return open(path, "rb")
    if kind == "gzip":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if kind == "bz2":
        return bz2.open(path, "rb")  # type: ignore[return-value]
    if kind == "xz":
        return lzma.open(path, "rb")  # type: ignore[return-value]
    if zstandard is None:  # pragma: no cover
        raise TokenmillError(f"{path}: is zstd-compressed; install the 'zstandard' package to read it")
    raw = open(path, "rb")
    return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=True)  # type: ignore[return-value]


def _corrupt(path: PathLike, exc: BaseException) -> TokenmillError:
    return TokenmillError(
        f"{path}: cannot read: {exc or type(exc).__name__}. The file is truncated or corrupt; "
        "recompress or re-download it"
    )


def _read_blocks(f: BinaryIO, path: PathLike, size: int) -> Iterator[bytes]:
    """Decompressed blocks of at most ``size`` bytes until EOF; decoder errors become TokenmillError."""
    while True:
        try:
            data = f.read(size)
        except _READ_ERRORS as exc:
            raise _corrupt(path, exc) from exc
        if not data:
            return
        yield data


def count_lines(path: PathLike, block_bytes: int = 1 << 22) -> int:
    """Lines in a file: ``\\n`` count plus one for a final line without ``\\n``. Never decodes."""
    n, last = 0, b"\n"
    with open_binary(path) as f:
        for data in _read_blocks(f, path, block_bytes):
            n += data.count(b"\n")
            last = data[-1:]
    return n + (last != b"\n")


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
        for data in _read_blocks(f, path, block_bytes):
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
    """Cumulative newline counts of ``data`` at the end of each ``_PIECE``-byte piece (``bytes.count``: no array
    of the whole block is made)."""
    counts = [data.count(b"\n", a, a + _PIECE) for a in range(0, len(data), _PIECE)]
    return np.cumsum(np.array(counts or [0], dtype=np.int64))


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


# --------------------------------------------------------------------------------------------------
# line blocks and decoding


def _raw_blocks(
    f: BinaryIO, path: PathLike, start: int, end: int | None, block_bytes: int
) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) blocks of whole lines, each ending with ``\\n`` (one is added to a final line)."""
    consumed, carry, carry_off = start, b"", start
    while True:
        want = block_bytes if end is None else min(block_bytes, end - consumed)
        try:
            data = f.read(want) if want > 0 else b""
        except _READ_ERRORS as exc:
            raise _corrupt(path, exc) from exc
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


def _decode_block(
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


def _decoded_lines(
    path: PathLike,
    opts: ReadOptions,
    stats: StepStats,
    *,
    start_line: int = 0,
    stop_line: int | None = None,
    index: LineIndex | None = None,
) -> Iterator[tuple[int, list[str | None]]]:
    """(first file line, decoded lines) blocks for file lines ``[start_line, stop_line)``."""
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
                except _READ_ERRORS as exc:
                    raise _corrupt(path, exc) from exc
                if not data:
                    raise TokenmillError(f"{path}: changed while being read (shorter than its index says)")
                left -= len(data)
        blocks = _take_lines(_raw_blocks(f, path, off0, None, opts.block_bytes), start_line - line0, limit)
        line = start_line
        for off, block in blocks:
            lines = _decode_block(block, off, line, path, opts.on_invalid_utf8, stats)
            yield line, lines
            line += len(lines)


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
            lines = _decode_block(block, off, line, path, opts.on_invalid_utf8, stats)
            if line is not None:
                line += len(lines)
            stats.add("read", len(lines))
            if None in lines:
                lines = [x for x in lines if x is not None]
            yield lines  # type: ignore[misc]


# --------------------------------------------------------------------------------------------------
# sources


@dataclass
class Chunk:
    """Aligned items read from a source: ``src[i]`` pairs with ``tgt[i]`` (``tgt`` None if monolingual).

    ``start`` is the 0-based item number (over all files of the source, in order) of the first item
    consumed into this chunk; ``n_read`` counts consumed items, including any skipped under a policy,
    so consecutive chunks satisfy ``next.start == start + n_read``.
    """

    start: int
    n_read: int
    src: list[str]
    tgt: list[str] | None = None
    extra: list[str] | None = None
    """Lines carried along with the pairs (e.g. word alignments); cleaning keeps or drops them with their pair."""
    positions: np.ndarray | None = None
    """When items were skipped while reading: the position of each kept item among the ``n_read`` consumed
    (its item number is ``start + positions[i]``); None when nothing was skipped (``start + i``)."""

    @property
    def lines(self) -> list[str]:
        """The items of a monolingual chunk (alias of ``src``)."""
        return self.src

    def __len__(self) -> int:
        return len(self.src)


Block = tuple[list, "list | None"]


def _rechunk(blocks: Iterator[Block], n: int) -> Iterator[Block]:
    """Re-cut blocks of aligned lists into blocks of exactly ``n`` items (the last may be shorter)."""
    src: list = []
    tgt: list | None = None
    for s, t in blocks:
        if not src and len(s) == n:  # already the right size: pass through without copying
            yield s, t
            continue
        src += s
        if t is not None:
            tgt = t if tgt is None else tgt + t
        while len(src) >= n:
            yield src[:n], (None if tgt is None else tgt[:n])
            src = src[n:]
            tgt = None if tgt is None else tgt[n:]
    if src:
        yield src, tgt


def _to_chunk(start: int, src: list, tgt: list | None, stats: StepStats, may_skip: bool) -> Chunk:
    """Drop items marked skipped (None: invalid UTF-8; _MALFORMED: bad row) from a block, counting them.

    ``may_skip`` is False when no policy is "skip": then no item can be marked and nothing is scanned.
    """
    n = len(src)
    stats.add("read", n)
    positions = None
    if may_skip:  # the skip counters always, in this order: the counts' order does not depend on chunking
        flagged = None in src or _MALFORMED in src or (tgt is not None and None in tgt)
        bad_utf8 = bad_row = [False] * n
        if flagged:
            sides = (src,) if tgt is None else (src, tgt)
            bad_utf8 = [any(side[i] is None for side in sides) for i in range(n)]
            bad_row = [src[i] is _MALFORMED and not bad_utf8[i] for i in range(n)]
        stats.add("invalid_utf8_skipped", sum(bad_utf8))
        stats.add("malformed_skipped", sum(bad_row))
        if flagged:
            keep = [not (u or b) for u, b in zip(bad_utf8, bad_row, strict=True)]
            positions = np.flatnonzero(keep)
            src = list(compress(src, keep))
            tgt = None if tgt is None else list(compress(tgt, keep))
    stats.add("yielded", len(src))
    return Chunk(start, n, src, tgt, positions=positions)


class Source:
    """A sequence of aligned items spread over one or more files; subclasses say how a line parses.

    ``scan()`` counts items (checking alignment) before anything is read; ``len(source)`` scans if
    needed. ``chunks(start, stop)`` yields :class:`Chunk` for items ``[start, stop)``; ``ranges(k)``
    cuts the items into ``k`` contiguous ranges for parallel workers. ``stats`` accumulates counters
    of every read made through this object (pass ``stats=`` to collect them elsewhere).
    """

    parallel: bool = False

    def __init__(self, files: Sequence[PathLike], options: ReadOptions | None = None) -> None:
        if not files:
            raise ConfigError(f"{type(self).__name__}: no input files given")
        self.files = [str(p) for p in files]
        self.options = options or ReadOptions()
        self.stats = StepStats("read")
        self._indexes: list[LineIndex] | None = None
        self._bounds: np.ndarray | None = None  # cumulative item counts per file, starting at 0

    # counting ------------------------------------------------------------------------------------
    def _scan_files(self) -> list[LineIndex]:
        return [scan_lines(p, self.options.index_every) for p in self.files]

    def scan(self) -> int:
        """Count items in every file (once; cached) and check alignment; returns the total."""
        if self._indexes is None:
            self._indexes = self._scan_files()
            counts = [ix.n_lines for ix in self._indexes]
            self._bounds = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        assert self._bounds is not None
        return int(self._bounds[-1])

    def __len__(self) -> int:
        return self.scan()

    def _all_indexes(self) -> list[LineIndex]:
        assert self._indexes is not None
        return list(self._indexes)

    def _set_indexes(self, indexes: list[LineIndex]) -> None:
        self._indexes = indexes

    def index_state(self) -> list[dict[str, Any]]:
        """The counting pass as JSON-able data (per file: lines, size, seek offsets), so a process on
        another machine can read a range with :meth:`restore_index` instead of counting every file again."""
        self.scan()
        return [
            {"path": ix.path, "n_lines": ix.n_lines, "size": ix.size, "every": ix.every,
             "offsets": ix.offsets.tolist(), "compression": ix.compression}
            for ix in self._all_indexes()
        ]

    def restore_index(self, state: Sequence[dict[str, Any]]) -> None:
        """Take a counting pass saved by :meth:`index_state` (for the same files, in the same order)."""
        indexes = [
            LineIndex(str(d["path"]), int(d["n_lines"]), int(d["size"]), int(d["every"]),
                      np.asarray(d["offsets"], dtype=np.int64), d["compression"])
            for d in state
        ]
        if [os.path.realpath(ix.path) for ix in indexes] != [os.path.realpath(p) for p in self._index_paths()]:
            raise TokenmillError(
                "the saved line index is for other files than this source's; re-run the plan step "
                "(tokenmill prepare ... --phase plan)"
            )
        self._set_indexes(indexes)
        counts = [ix.n_lines for ix in self._indexes or []]
        self._bounds = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])

    def _index_paths(self) -> list[str]:
        return list(self.files)

    @property
    def file_counts(self) -> list[int]:
        """Items per file (per file pair for two-file parallel sources), after ``scan()``."""
        self.scan()
        assert self._bounds is not None
        return np.diff(self._bounds).tolist()

    def ranges(self, k: int) -> list[tuple[int, int]]:
        """``k`` contiguous ``(start, stop)`` item ranges of near-equal size covering the source."""
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        cuts = (np.arange(k + 1, dtype=np.int64) * self.scan()) // k
        return [(int(cuts[i]), int(cuts[i + 1])) for i in range(k)]

    # reading -------------------------------------------------------------------------------------
    def _file_blocks(self, i: int, start: int, stop: int, stats: StepStats) -> Iterator[Block]:
        raise NotImplementedError

    def chunks(
        self,
        start: int = 0,
        stop: int | None = None,
        *,
        chunk_lines: int | None = None,
        stats: StepStats | None = None,
    ) -> Iterator[Chunk]:
        """Yield chunks of aligned items ``[start, stop)`` (all by default), in input order.

        Counting (and the alignment check) happens on the first ``next()``, before any item is
        yielded; call :meth:`scan` yourself to fail even earlier.
        """
        total = self.scan()
        stop = total if stop is None else stop
        if not 0 <= start <= stop <= total:
            raise ConfigError(f"item range [{start}, {stop}) is outside [0, {total}) of {self.files[0]}")
        stats = stats if stats is not None else self.stats
        n = chunk_lines or self.options.chunk_lines
        assert self._bounds is not None
        pos = start
        may_skip = "skip" in (self.options.on_invalid_utf8, self.options.on_malformed)
        for s, t in _rechunk(self._blocks(start, stop, stats), n):
            yield _to_chunk(pos, s, t, stats, may_skip)
            pos += len(s)

    def _blocks(self, start: int, stop: int, stats: StepStats) -> Iterator[Block]:
        assert self._bounds is not None
        for i in range(len(self._bounds) - 1):
            lo, hi = int(self._bounds[i]), int(self._bounds[i + 1])
            a, b = max(start, lo), min(stop, hi)
            if a < b:
                yield from self._file_blocks(i, a - lo, b - lo, stats)

    def _lines(self, path: str, index: LineIndex, a: int, b: int, stats: StepStats):
        stop = None if b >= index.n_lines else b  # to the end: no need to count newlines on the way
        return _decoded_lines(path, self.options, stats, start_line=a, stop_line=stop, index=index)


class MonoSource(Source):
    """Monolingual plain text: one item per line, files concatenated in order."""

    def _file_blocks(self, i: int, start: int, stop: int, stats: StepStats) -> Iterator[Block]:
        assert self._indexes is not None
        for _, lines in self._lines(self.files[i], self._indexes[i], start, stop, stats):
            yield lines, None


class ParallelFiles(Source):
    """Two files per side (fairseq prefixes: ``train.en`` + ``train.zh``); several pairs concatenated.

    Each pair must have equal line counts; otherwise scanning raises an error naming both files
    and both counts, before anything is yielded.
    """

    parallel = True

    def __init__(self, pairs: Sequence[tuple[PathLike, PathLike]], options: ReadOptions | None = None) -> None:
        pairs = [(str(a), str(b)) for a, b in pairs]
        super().__init__([a for a, _ in pairs], options)
        self.pairs = pairs

    @classmethod
    def from_prefixes(
        cls,
        prefixes: Sequence[PathLike] | PathLike,
        src_lang: str,
        tgt_lang: str,
        options: ReadOptions | None = None,
    ) -> ParallelFiles:
        """``prefix.{src_lang}`` + ``prefix.{tgt_lang}`` for each prefix (a compressed suffix is found)."""
        if isinstance(prefixes, (str, os.PathLike)):
            prefixes = [prefixes]
        return cls([(resolve_prefix(p, src_lang), resolve_prefix(p, tgt_lang)) for p in prefixes], options)

    def _scan_files(self) -> list[LineIndex]:
        out = []
        for src, tgt in self.pairs:
            a = scan_lines(src, self.options.index_every)
            b = scan_lines(tgt, self.options.index_every)
            if a.n_lines != b.n_lines:
                raise TokenmillError(
                    f"line counts differ: {src} has {a.n_lines:,} lines but {tgt} has {b.n_lines:,}. "
                    "The two sides must align line by line: check for a truncated or wrong file. "
                    "(Only \\n and \\r\\n end a line here; U+2028, U+0085, \\x0b, \\x0c stay inside it.)"
                )
            out.append((a, b))
        self._pair_indexes = out
        return [a for a, _ in out]

    def _all_indexes(self) -> list[LineIndex]:
        return [ix for pair in self._pair_indexes for ix in pair]

    def _set_indexes(self, indexes: list[LineIndex]) -> None:
        self._pair_indexes = list(zip(indexes[::2], indexes[1::2], strict=True))
        self._indexes = indexes[::2]

    def _index_paths(self) -> list[str]:
        return [path for pair in self.pairs for path in pair]

    def _file_blocks(self, i: int, start: int, stop: int, stats: StepStats) -> Iterator[Block]:
        (src, tgt), (ia, ib) = self.pairs[i], self._pair_indexes[i]
        n = self.options.chunk_lines
        left = _rechunk(((x, None) for _, x in self._lines(src, ia, start, stop, stats)), n)
        right = _rechunk(((x, None) for _, x in self._lines(tgt, ib, start, stop, stats)), n)
        for (s, _), (t, _) in zip(left, right, strict=True):
            yield s, t


class TsvSource(Source):
    """One pair per line as ``source<TAB>target``; a row without exactly one tab is malformed."""

    parallel = True

    def _file_blocks(self, i: int, start: int, stop: int, stats: StepStats) -> Iterator[Block]:
        assert self._indexes is not None
        path = self.files[i]
        for line0, lines in self._lines(path, self._indexes[i], start, stop, stats):
            yield self._split(lines, path, line0)

    def _split(self, lines: list[str | None], path: str, line0: int) -> Block:
        if None not in lines:
            tabs = np.fromiter(map(str.count, lines, repeat("\t")), dtype=np.int64, count=len(lines))
            if (tabs == 1).all():
                parts = list(map(str.partition, lines, repeat("\t")))
                return list(map(itemgetter(0), parts)), list(map(itemgetter(2), parts))
        src: list = []
        tgt: list = []
        for j, line in enumerate(lines):
            if line is None:
                src.append(None)
                tgt.append(None)
                continue
            tabs = line.count("\t")
            if tabs == 1:
                a, _, b = line.partition("\t")
                src.append(a)
                tgt.append(b)
                continue
            if self.options.on_malformed == "error":
                raise TokenmillError(
                    f"{path}:{line0 + j + 1}: expected 2 tab-separated columns (source<TAB>target), "
                    f"found {tabs + 1}. {_MALFORMED_FIX}"
                )
            src.append(_MALFORMED)
            tgt.append(_MALFORMED)
        return src, tgt


class JsonlSource(Source):
    """One JSON object per line; ``src_key`` (and ``tgt_key`` unless monolingual) hold strings."""

    def __init__(
        self,
        files: Sequence[PathLike],
        src_key: str = "src",
        tgt_key: str | None = "tgt",
        options: ReadOptions | None = None,
    ) -> None:
        super().__init__(files, options)
        self.keys = (src_key,) if tgt_key is None else (src_key, tgt_key)
        self.parallel = tgt_key is not None

    def _file_blocks(self, i: int, start: int, stop: int, stats: StepStats) -> Iterator[Block]:
        assert self._indexes is not None
        path = self.files[i]
        for line0, lines in self._lines(path, self._indexes[i], start, stop, stats):
            cols = self._parse(lines, path, line0)
            yield cols[0], (cols[1] if len(cols) > 1 else None)

    def _parse(self, lines: list[str | None], path: str, line0: int) -> list[list]:
        try:  # fast path: the whole block parses and has the keys with string values
            objs = list(map(json.loads, lines))  # type: ignore[arg-type]
            cols = [list(map(itemgetter(k), objs)) for k in self.keys]
            if all(set(map(type, c)) <= {str} for c in cols):
                return cols
        except (ValueError, KeyError, TypeError, IndexError):
            pass
        cols = [[] for _ in self.keys]
        for j, line in enumerate(lines):
            values = self._parse_one(line, path, line0 + j + 1)
            for c, v in zip(cols, values, strict=True):
                c.append(v)
        return cols

    def _parse_one(self, line: str | None, path: str, line_no: int) -> list:
        if line is None:
            return [None] * len(self.keys)
        try:
            obj = json.loads(line)
        except ValueError as exc:
            problem = f"invalid JSON ({getattr(exc, 'msg', exc)} at column {getattr(exc, 'colno', '?')})"
        else:
            if not isinstance(obj, dict):
                problem = f"a JSON {type(obj).__name__}, not an object"
            elif missing := [k for k in self.keys if k not in obj]:
                problem = f"missing key {missing[0]!r} (keys present: {sorted(obj)[:10]})"
            elif wrong := [k for k in self.keys if not isinstance(obj[k], str)]:
                problem = f"value of {wrong[0]!r} is {type(obj[wrong[0]]).__name__}, not a string"
            else:
                return [obj[k] for k in self.keys]
        if self.options.on_malformed == "error":
            raise TokenmillError(
                f"{path}:{line_no}: {problem}; expected an object with string keys "
                f"{' and '.join(map(repr, self.keys))}. {_MALFORMED_FIX}"
            )
        return [_MALFORMED] * len(self.keys)


def resolve_prefix(prefix: PathLike, lang: str) -> str:
    """``{prefix}.{lang}``, or the one compressed variant of it (``.gz``, ``.bz2``, ``.xz``, ``.zst``)."""
    base = f"{prefix}.{lang}"
    found = [p for p in (base, *(base + s for s in COMPRESSED_SUFFIXES)) if os.path.isfile(p)]
    if not found:
        raise TokenmillError(
            f"{base}: no such file (also tried {', '.join(COMPRESSED_SUFFIXES)}); "
            "check the prefix and the language code"
        )
    if len(found) > 1:
        raise TokenmillError(f"{base}: ambiguous, several files match: {', '.join(found)}; keep one")
    return found[0]


def open_source(
    files: Sequence[PathLike],
    fmt: Literal["text", "tsv", "jsonl"] = "text",
    *,
    tgt_files: Sequence[PathLike] | None = None,
    src_key: str = "src",
    tgt_key: str | None = "tgt",
    options: ReadOptions | None = None,
) -> Source:
    """One entry point for every layout: plain text (mono, or parallel with ``tgt_files``), TSV, JSONL."""
    if fmt == "text":
        if tgt_files is None:
            return MonoSource(files, options)
        if len(tgt_files) != len(files):
            raise ConfigError(
                f"{len(files)} source files but {len(tgt_files)} target files; give them in matching pairs"
            )
        return ParallelFiles(list(zip(files, tgt_files, strict=True)), options)
    if tgt_files is not None:
        raise ConfigError(f"format {fmt!r} holds both sides in one file; do not pass target files")
    if fmt == "tsv":
        return TsvSource(files, options)
    if fmt == "jsonl":
        return JsonlSource(files, src_key, tgt_key, options)
    raise ConfigError(f"unknown input format {fmt!r}: choose 'text', 'tsv' or 'jsonl'")


__all__ = [
    "BOM",
    "COMPRESSED_SUFFIXES",
    "Chunk",
    "JsonlSource",
    "LineIndex",
    "MonoSource",
    "OnInvalidUtf8",
    "OnMalformed",
    "ParallelFiles",
    "ReadOptions",
    "Source",
    "TsvSource",
    "byte_ranges",
    "count_lines",
    "detect_compression",
    "iter_byte_range",
    "line_offsets",
    "open_binary",
    "open_source",
    "resolve_prefix",
    "scan_lines",
]
