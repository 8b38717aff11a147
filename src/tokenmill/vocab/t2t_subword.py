"""Tensor2Tensor-compatible SubwordTextEncoder: same vocabulary, same ids, same vocab files, faster.

Users with T2T-trained models keep their vocabularies and ids: this encoder builds the vocabulary
T2T's ``text_encoder.SubwordTextEncoder`` builds (same sampled lines, token counts, bisection over
``min_count`` and list order), encodes and decodes exactly as T2T does, and reads and writes T2T's
vocab files (one subtoken per line, in single quotes).  Ids: ``<pad>`` = 0, ``<EOS>`` = 1.

    enc = SubwordTextEncoder.build_from_files(["train.en"], target_size=8192, file_byte_budget=1e6)
    ids = enc.encode("Hello world")                   # list[int]
    flat, lengths = enc.encode_batch(lines, append_eos=True)   # for binarization
    enc.decode(ids); enc.save("vocab.subwords"); SubwordTextEncoder.load("vocab.subwords")

The vocabulary build is vectorized (``tokenmill.vocab.t2t.builder``); encoding segments each
distinct token once and caches its ids.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from pathlib import Path

import numpy as np

from tokenmill.errors import FormatError, TokenmillError
from tokenmill.fsutil import atomic_write
from tokenmill.vocab.t2t.builder import SubwordBuilder, build_to_target_size
from tokenmill.vocab.t2t.escape import ESCAPE_CHARS, escape_token, unescape_token
from tokenmill.vocab.t2t.matcher import VocabTrie
from tokenmill.vocab.t2t.sampling import sample_files
from tokenmill.vocab.t2t.tokenizer import count_tokens, detokenize, token_spans, tokenize

PAD_ID = 0
EOS_ID = 1
NUM_RESERVED_IDS = 2  # what T2T strips in decode(strip_extraneous=True)
_CACHE_LIMIT = 1 << 20  # distinct tokens kept with their ids (T2T caches 2**20 too)
_BATCH_SEGMENT_MIN = 64  # from this many new distinct tokens on, segment them in one numpy pass


class SubwordTextEncoder:
    """An invertible subword encoder over a fixed list of subtoken strings (id = position in the list)."""

    PAD_ID = PAD_ID
    EOS_ID = EOS_ID

    def __init__(self, subtoken_strings: Sequence[str]) -> None:
        strings = list(subtoken_strings)
        if not strings:
            raise FormatError("a subword vocabulary needs at least one subtoken string")
        self._strings = strings
        # Later duplicates win and empty strings get no id, as in T2T's dict comprehension.
        self._id_of = {s: i for i, s in enumerate(strings) if s}
        self._alphabet = frozenset(chain.from_iterable(strings)) | ESCAPE_CHARS
        lengths_by_first: dict[str, set[int]] = {}
        for s in self._id_of:
            lengths_by_first.setdefault(s[0], set()).add(len(s))
        self._lengths_by_first = {c: tuple(sorted(ls, reverse=True)) for c, ls in lengths_by_first.items()}
        self._cache: dict[str, tuple[int, ...]] = {}
        self._trie: VocabTrie | None = None  # built on the first large batch
        self._reset_rows()
        self._in_alphabet = np.zeros(0, dtype=bool)  # code point -> in the alphabet (with the trie)

    def clear_cache(self) -> None:
        """Forget the cached ids of tokens seen so far (memory; cold-cache timings)."""
        self._cache.clear()
        self._reset_rows()

    def _reset_rows(self) -> None:
        """Empty the batch cache: token -> row; a row's ids are row_ids[row_start : + row_len]."""
        self._rows: dict[str, int] = {}
        self._row_start = np.zeros(0, dtype=np.int64)
        self._row_len = np.zeros(0, dtype=np.int64)
        self._row_ids = np.zeros(0, dtype=np.int64)

    # ----------------------------------------------------------------- building
    @classmethod
    def build_from_token_counts(
        cls,
        token_counts: Mapping[str, int],
        min_count: float,
        num_iterations: int = 4,
        reserved_tokens: Sequence[str] | None = None,
        max_subtoken_length: int | None = None,
    ) -> SubwordTextEncoder:
        """T2T's ``build_from_token_counts`` with one fixed ``min_count``."""
        builder = SubwordBuilder(token_counts, reserved_tokens, max_subtoken_length)
        return cls(builder.build(min_count, num_iterations))

    @classmethod
    def build_to_target_size(
        cls,
        target_size: int,
        token_counts: Mapping[str, int],
        min_val: float = 1,
        max_val: float = 1000,
        max_subtoken_length: int | None = None,
        reserved_tokens: Sequence[str] | None = None,
        num_iterations: int = 4,
        on_probe: Callable[[float, int], None] | None = None,
    ) -> SubwordTextEncoder:
        """T2T's ``build_to_target_size``: bisect ``min_count`` in [min_val, max_val] for ~target_size.

        ``on_probe(min_count, vocab_size)`` is called after each probe (for progress reports)."""
        builder = SubwordBuilder(token_counts, reserved_tokens, max_subtoken_length)
        return cls(build_to_target_size(builder, target_size, min_val, max_val, num_iterations, on_probe))

    @classmethod
    def build_from_generator(
        cls,
        lines: Iterable[str],
        target_size: int,
        max_subtoken_length: int | None = None,
        reserved_tokens: Sequence[str] | None = None,
    ) -> SubwordTextEncoder:
        """T2T's ``build_from_generator``: count tokens of ``lines``, bisect min_count in [1, 1000]."""
        return cls.build_to_target_size(target_size, count_tokens(lines), 1, 1000, max_subtoken_length, reserved_tokens)

    @classmethod
    def build_from_files(
        cls,
        paths: Sequence[str | os.PathLike[str]],
        target_size: int,
        file_byte_budget: float = 1e6,
        max_subtoken_length: int | None = None,
        reserved_tokens: Sequence[str] | None = None,
        on_probe: Callable[[float, int], None] | None = None,
    ) -> SubwordTextEncoder:
        """T2T's ``get_or_generate_vocab`` path: sample each file within ``file_byte_budget``
        (``generate_lines_for_vocab``), count tokens, build to ``target_size``."""
        counts = count_tokens(sample_files(paths, file_byte_budget))
        return cls.build_to_target_size(
            target_size, counts, 1, 1000, max_subtoken_length, reserved_tokens, on_probe=on_probe
        )

    # --------------------------------------------------------------- vocab files
    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SubwordTextEncoder:
        """Read a T2T vocab file: one subtoken a line (TensorFlow's line reader: ``\\r`` is dropped),
        trailing whitespace removed, then one pair of surrounding single or double quotes removed
        (T2T's ``_load_from_file_object``)."""
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as err:
            raise FormatError(f"cannot read T2T vocab file {path}: {err.strerror}") from err
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            line = data.count(b"\n", 0, err.start) + 1
            raise FormatError(f"{path}:{line}: not valid UTF-8; a T2T vocab file is UTF-8 text") from None
        lines = text.replace("\r", "").split("\n")  # TensorFlow's reader: lines end at \n, \r is dropped
        if lines and lines[-1] == "":
            lines.pop()
        strings = []
        for line in lines:
            s = line.rstrip()
            if (s.startswith("'") and s.endswith("'")) or (s.startswith('"') and s.endswith('"')):
                s = s[1:-1]
            strings.append(s)
        if not strings:
            raise FormatError(f"{path}: empty T2T vocab file (expected one quoted subtoken per line)")
        return cls(strings)

    def save(self, path: str | os.PathLike[str], add_single_quotes: bool = True) -> None:
        """Write T2T's vocab file format (``store_to_file``) atomically."""
        for i, s in enumerate(self._strings):
            if "\n" in s or "\r" in s:
                raise FormatError(
                    f"subtoken {i} ({s!r}) contains a newline or carriage return, which T2T's "
                    "one-per-line vocab file cannot hold (its reader splits at \\n and drops \\r); "
                    "remove them from the training text"
                )
        if add_single_quotes:
            body = "".join(f"'{s}'\n" for s in self._strings)
        else:
            body = "".join(f"{s}\n" for s in self._strings)
        with atomic_write(path, mode="wb", encoding=None) as handle:
            handle.write(body.encode("utf-8", "surrogatepass"))

    # --------------------------------------------------------------- properties
    @property
    def vocab_size(self) -> int:
        """Number of subtoken strings (ids are 0 .. vocab_size-1)."""
        return len(self._strings)

    @property
    def all_subtoken_strings(self) -> tuple[str, ...]:
        """The subtoken strings in id order (escaped form, words end with ``_``)."""
        return tuple(self._strings)

    @property
    def alphabet(self) -> frozenset[str]:
        """Characters that are never escaped as ``\\NNN;``."""
        return self._alphabet

    # ------------------------------------------------------------------ encoding
    def _segment(self, escaped: str) -> list[int]:
        """Greedy longest match from the left (T2T's ``_escaped_token_to_subtoken_ids``)."""
        id_of = self._id_of
        lengths_by_first = self._lengths_by_first
        ids: list[int] = []
        start = 0
        n = len(escaped)
        while start < n:
            for length in lengths_by_first.get(escaped[start], ()):
                if start + length <= n:
                    sid = id_of.get(escaped[start : start + length])
                    if sid is not None:
                        ids.append(sid)
                        start += length
                        break
            else:
                raise TokenmillError(
                    f"the vocabulary cannot spell {escaped[start:]!r}: character {escaped[start]!r} is "
                    "not a subtoken of its own (not a vocabulary T2T built?)"
                )
        return ids

    def _token_ids(self, token: str) -> tuple[int, ...]:
        ids = self._cache.get(token)
        if ids is None:
            ids = tuple(self._segment(escape_token(token, self._alphabet)))
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[token] = ids
        return ids

    def _segment_many(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Ids of many distinct tokens: ``(flat ids, count per token)``, vectorized for large lists."""
        alphabet = self._alphabet
        if len(tokens) < _BATCH_SEGMENT_MIN:
            seqs = [self._segment(escape_token(t, alphabet)) for t in tokens]
            counts = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
            return np.fromiter(chain.from_iterable(seqs), dtype=np.int64, count=int(counts.sum())), counts
        if self._trie is None:
            self._trie = VocabTrie(self._id_of)
            inside = np.zeros(0x110001, dtype=bool)
            inside[[ord(c) for c in alphabet]] = True
            inside[ord("\n")] = False  # a newline is always escaped
            self._in_alphabet = inside
        # Tokens made only of alphabet characters (nearly all) escape with two replaces.
        codes = np.frombuffer("".join(tokens).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        outside = np.zeros(len(tokens), dtype=np.int64)
        if len(codes):
            starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
            bad = (~self._in_alphabet[codes]).astype(np.int64)
            nonempty = lengths > 0
            outside[nonempty] = np.add.reduceat(bad, starts[nonempty])
        escaped = [
            t.replace("\\", "\\\\").replace("_", "\\u") + "_" if not o else escape_token(t, alphabet)
            for t, o in zip(tokens, outside.tolist(), strict=True)
        ]
        return self._trie.segment(escaped)

    def _add_rows(self, tokens: list[str]) -> None:
        """Give each new distinct token a row in the batch cache (its ids, stored contiguously)."""
        ids, counts = self._segment_many(tokens)
        first = len(self._rows)
        self._rows.update(zip(tokens, range(first, first + len(tokens)), strict=True))
        starts = len(self._row_ids) + np.cumsum(counts) - counts
        self._row_start = np.concatenate((self._row_start, starts))
        self._row_len = np.concatenate((self._row_len, counts))
        self._row_ids = np.concatenate((self._row_ids, ids))

    def encode(self, text: str) -> list[int]:
        """Subtoken ids of ``text`` (T2T's ``encode``; no EOS appended)."""
        out: list[int] = []
        for token in tokenize(text):
            out.extend(self._token_ids(token))
        return out

    def encode_without_tokenizing(self, token_text: str) -> list[int]:
        """Ids of ``token_text`` treated as one token (T2T's ``encode_without_tokenizing``)."""
        return list(self._token_ids(token_text))

    def encode_batch(
        self, texts: Sequence[str], append_eos: bool = False, dtype: np.dtype | type = np.int32
    ) -> tuple[np.ndarray, np.ndarray]:
        """Encode many lines at once: ``(flat ids, ids per line)``.

        With ``append_eos`` every line ends with EOS (id 1), as T2T's ``text2text_generate_encoded``
        writes training examples.  ``lengths`` is int64; ``flat`` has ``dtype``."""
        joined, starts, ends, counts = token_spans(texts)
        tokens = [joined[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
        rows = self._rows
        missing = set(tokens).difference(rows)
        if len(rows) + len(missing) > _CACHE_LIMIT:
            self._reset_rows()
            rows = self._rows
            missing = set(tokens)
        if missing:
            self._add_rows(list(missing))
        row = np.fromiter(map(rows.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        per_token = self._row_len[row]
        total = int(per_token.sum())
        # ragged gather: the ids of token k are row_ids[row_start[row[k]] : + per_token[k]]
        shift = np.repeat(self._row_start[row] - (np.cumsum(per_token) - per_token), per_token)
        flat_ids = self._row_ids[shift + np.arange(total, dtype=np.int64)]
        lengths = np.zeros(len(texts), dtype=np.int64)
        nonempty = counts > 0
        if len(per_token):
            token_offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
            lengths[nonempty] = np.add.reduceat(per_token, token_offsets[nonempty])
        if append_eos:
            line_end = np.cumsum(lengths)
            flat_ids = np.insert(flat_ids, line_end, EOS_ID)
            lengths = lengths + 1
        return flat_ids.astype(dtype, copy=False), lengths

    # ------------------------------------------------------------------ decoding
    def decode_list(self, ids: Iterable[int]) -> list[str]:
        """The subtoken string of each id ('' for ids outside the vocabulary)."""
        strings, size = self._strings, len(self._strings)
        return [strings[i] if 0 <= i < size else "" for i in map(int, ids)]

    def decode(self, ids: Iterable[int], strip_extraneous: bool = False) -> str:
        """Text of ``ids`` (T2T's ``decode``): subtokens joined, split at ``_``, unescaped, detokenized.

        ``strip_extraneous`` drops trailing pad/EOS ids first."""
        ids = [int(i) for i in ids]
        if strip_extraneous:
            while ids and 0 <= ids[-1] < NUM_RESERVED_IDS:
                ids.pop()
        concatenated = "".join(self.decode_list(ids))
        tokens = []
        for piece in concatenated.split("_"):
            if piece:
                token = unescape_token(piece + "_")
                if token:
                    tokens.append(token)
        return detokenize(tokens)
