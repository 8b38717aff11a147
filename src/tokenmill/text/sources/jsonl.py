"""Format ``jsonl``: one JSON object per line; the keys name the sides."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from operator import itemgetter

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.text.chunks import MALFORMED, MALFORMED_FIX, Block, ReadOptions
from tokenmill.text.io import PathLike
from tokenmill.text.lines import BOM, decode_block, line_blocks
from tokenmill.text.sources.base import Source
from tokenmill.text.sources.line_source import LineSource
from tokenmill.text.sources.registry import OpenRequest
from tokenmill.text.stats import StepStats

try:  # ~1.4x json's speed at parsing a block of lines (benchmarks/bench_parquet.py --json); same values or an error
    from orjson import loads as fast_loads

    FAST_REFUSES_SURROGATES = True  # orjson refuses a lone surrogate escape: what it parsed is text
except ImportError:  # pragma: no cover - orjson is optional
    fast_loads = json.loads
    FAST_REFUSES_SURROGATES = False

try:  # one call for a whole block of lines: ~2x orjson's line-by-line speed (benchmarks/bench_lm_prepare.py)
    from msgspec.json import Decoder as _LinesDecoder

    _decode_lines = _LinesDecoder().decode_lines
except ImportError:  # pragma: no cover - msgspec is optional
    _decode_lines = None


class JsonlSource(LineSource):
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
        """The lines' bytes go to the JSON parser as they are (:meth:`_parse_bytes`); a block it cannot take
        whole is decoded and parsed line by line as the house's rules say (:meth:`_parse`)."""
        assert self._indexes is not None
        path, index = self.files[i], self._indexes[i]
        line0 = start
        for offset, block in line_blocks(path, self.options, start_line=start,
                                         stop_line=None if stop >= index.n_lines else stop, index=index):
            cols = self._parse_bytes(block, offset)
            if cols is None:
                lines = decode_block(block, offset, line0, path, self.options.on_invalid_utf8, stats)
                cols = self._parse(lines, path, line0, stats)
            line0 += len(cols[0])
            yield cols[0], (cols[1] if len(cols) > 1 else None)

    def _parse_bytes(self, block: bytes, offset: int) -> list[list] | None:
        """The keys' columns of a block of ``\\n``-terminated lines parsed from their bytes (no decoded copy of
        the block, no UTF-8 re-encoding inside the parser), or None when the block needs the careful path: a
        BOM, a line that is not an object with string values for the keys (or is
        empty), bytes that are not UTF-8 (the parser refuses them), a lone surrogate escape. Lines end at
        ``\\n``; a ``\\r`` before it is JSON whitespace, as the careful path's CRLF rule drops it."""
        if (offset == 0 and block.startswith(BOM)) or not FAST_REFUSES_SURROGATES:
            return None
        objs = _one_object_a_line(block)
        if objs is not None:
            try:
                cols = [list(map(itemgetter(k), objs)) for k in self.keys]
            except (KeyError, TypeError, IndexError):
                return None
            return cols if all(set(map(type, c)) <= {str} for c in cols) else None
        lines = block.split(b"\n")
        lines.pop()  # the block ends with "\n": drop the empty tail
        try:
            objs = list(map(fast_loads, lines))
            cols = [list(map(itemgetter(k), objs)) for k in self.keys]
        except (ValueError, KeyError, TypeError, IndexError):
            return None
        return cols if all(set(map(type, c)) <= {str} for c in cols) else None

    def _parse(self, lines: list[str | None], path: str, line0: int, stats: StepStats) -> list[list]:
        try:  # fast path: the whole block parses and has the keys with string values (else json's own errors
            # and values, line by line, below: a string value is the same str for both parsers)
            objs = list(map(fast_loads, lines))  # type: ignore[arg-type]
            cols = [list(map(itemgetter(k), objs)) for k in self.keys]
            if all(set(map(type, c)) <= {str} for c in cols) and (
                    FAST_REFUSES_SURROGATES or all(map(_encodable, map("".join, cols)))):
                return cols
        except (ValueError, KeyError, TypeError, IndexError):
            pass
        cols = [[] for _ in self.keys]
        for j, line in enumerate(lines):
            values = self._surrogates(self._parse_one(line, path, line0 + j + 1), path, line0 + j + 1, stats)
            for c, v in zip(cols, values, strict=True):
                c.append(v)
        return cols

    def _surrogates(self, values: list, path: str, line_no: int, stats: StepStats) -> list:
        """A value holding a lone surrogate (a JSON escape such as ``\\ud800``: valid JSON, not text a tokenizer
        can take) follows ``--on-invalid-utf8`` as an invalid byte does: an error naming the line, U+FFFD
        (counted), or the line skipped (counted)."""
        if all(not isinstance(v, str) or _encodable(v) for v in values):
            return values
        policy = self.options.on_invalid_utf8
        if policy == "error":
            raise TokenmillError(
                f"{path}:{line_no}: a string holds a lone surrogate escape (e.g. \\ud800), which is not text; "
                "fix the line, or give --on-invalid-utf8 replace (U+FFFD) or skip"
            )
        if policy == "replace":
            stats.add("invalid_utf8_replaced")
            return [v.encode("utf-16", "surrogatepass").decode("utf-16", "replace") if isinstance(v, str) else v
                    for v in values]
        stats.add("invalid_utf8_lines")
        return [None] * len(values)

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
                f"{' and '.join(map(repr, self.keys))}. {MALFORMED_FIX}"
            )
        return [MALFORMED] * len(self.keys)


def _one_object_a_line(block: bytes) -> list | None:
    """The values of a block of ``\n``-terminated lines parsed in one call (msgspec's ``decode_lines``), or
    None (not installed, or any line not exactly one JSON value from its first byte to its last: the line by
    line parsers then take the block, with their errors). ``decode_lines`` reads a stream of values, so it
    would take a blank line or two objects on one line: the block is taken only when every line starts with
    ``{`` and ends with ``}`` (no blank line, no whitespace around; a line break inside a value cannot sit
    between ``}`` and ``{``, so each value lies on its own lines) and there are as many values as lines (no
    line holds two). Strings are checked as UTF-8 and for lone surrogate escapes as orjson checks them."""
    if _decode_lines is None:
        return None
    view = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(view == 10)  # the block ends with "\n": ends[-1] is its last byte
    if not len(ends) or view[0] != 123 or not (view[ends - 1] == 125).all() or not (view[ends[:-1] + 1] == 123).all():
        return None
    try:
        objs = _decode_lines(block)
    except (ValueError, RecursionError):  # msgspec's DecodeError and UTF-8 errors are ValueErrors
        return None
    return objs if len(objs) == len(ends) else None


def _encodable(text: str) -> bool:
    """Whether ``text`` is valid Unicode text (no lone surrogate, which a JSON ``\\ud800`` escape can make)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def open_format(request: OpenRequest) -> Source:
    return JsonlSource(request.files, request.src_key, request.tgt_key, request.options)


__all__ = ["JsonlSource", "open_format"]
