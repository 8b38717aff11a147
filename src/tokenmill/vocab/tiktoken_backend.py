"""The tiktoken backend: a local ``.tiktoken`` ranks file (one ``base64(token bytes) rank`` a line).

Nothing is downloaded: the encoding is built from the file, the split pattern and the special
tokens. Without settings, a file named like a known encoding (``cl100k_base.tiktoken``) gets that
encoding's pattern and special tokens; any other gets the cl100k pattern and ``<|endoftext|>`` as
the id after the last rank (as GPT-2 numbered it). Lines are encoded as ordinary text
(``encode_ordinary``: the text ``<|endoftext|>`` in a line is not the special token), split into
one contiguous share per thread. tiktoken cannot train.

Token strings (``id_to_token``) spell bytes as GPT-2's byte-level alphabet does (a space is ``Ġ``),
so every token is one whitespace-free string and ``token_to_id`` inverts it.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import tiktoken

from tokenmill.errors import ConfigError
from tokenmill.vocab.tiktoken_patterns import CL100K_PATTERN, ENDOFTEXT, PRESETS
from tokenmill.vocab.tokenizer import TokenizerBase, bad_model, flatten

_CANDIDATES = {
    "bos": ("<|startoftext|>", "<|begin_of_text|>", "<s>"),
    "eos": (ENDOFTEXT, "<|end_of_text|>", "</s>"),
    "pad": ("<|pad|>", "<pad>"),
    "eod": (ENDOFTEXT, "<|end_of_text|>", "</s>"),
}
_MIN_SHARE = 256  # fewer lines a thread are not worth a thread
MAX_RANK = 2**31 - 2
"""The largest rank a ranks file may give: ids are stored as int32, and a special token follows the ranks."""


@dataclasses.dataclass
class TiktokenSettings:
    preset: str | None = None
    """gpt2 | r50k_base | p50k_base | cl100k_base | o200k_base: that encoding's pattern and special
    tokens (guessed from the file name when nothing here is set)."""
    pattern: str | None = None
    """The pre-split regex (``pat_str``); default: the preset's, else cl100k's."""
    special_tokens: dict[str, int] | None = None
    """Special token text -> id; default: the preset's, else ``<|endoftext|>`` after the last rank."""
    eod_token: str | None = None
    """The special token that ends a document; default ``<|endoftext|>``."""


def byte_alphabet() -> list[str]:
    """GPT-2's printable stand-in for each byte value: visible bytes stand for themselves, the
    others (controls, space, ...) take the code points from 256 on, in byte order."""
    visible = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars: dict[int, str] = {b: chr(b) for b in visible}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


_ALPHABET = byte_alphabet()
_BYTE_OF = {c: b for b, c in enumerate(_ALPHABET)}


def read_ranks(path: os.PathLike[str]) -> dict[bytes, int]:
    """The token bytes -> rank map of a ``.tiktoken`` file, checked line by line."""
    what = "tiktoken ranks file"
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}") from None
    ranks: dict[bytes, int] = {}
    seen_ranks: set[int] = set()
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError(f"{len(parts)} fields")
            token, rank = base64.b64decode(parts[0], validate=True), int(parts[1])
        except (ValueError, binascii.Error) as error:
            detail = f"line {number} is not '<base64 token> <rank>': {line[:40]!r}, {error}"
            raise bad_model(path, "tiktoken", what, detail) from None
        if token in ranks or rank in seen_ranks or not 0 <= rank <= MAX_RANK:
            raise bad_model(path, "tiktoken", what, f"line {number}: token or rank {rank} given twice, negative "
                            f"or above {MAX_RANK} (token ids are stored as int32)")
        ranks[token] = rank
        seen_ranks.add(rank)
    if not ranks:
        raise bad_model(path, "tiktoken", what, "no ranks")
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise bad_model(
            path, "tiktoken", what, f"{len(missing)} of the 256 single bytes have no rank (byte {missing[0]} first)"
        )
    return ranks


class TiktokenTokenizer(TokenizerBase):
    """A ``.tiktoken`` ranks file with a split pattern and special tokens."""

    name = "tiktoken"
    filename = "tokenizer.tiktoken"
    Settings = TiktokenSettings

    def __init__(self, path: str | os.PathLike[str], settings: Any = None) -> None:
        super().__init__(path, settings)
        self.ranks = read_ranks(self.path)
        self.settings = resolved = self._resolve(self.settings, len(self.ranks))
        specials = resolved.special_tokens or {}
        rank_values = set(self.ranks.values())
        for token, token_id in specials.items():
            if token_id in rank_values:
                raise ConfigError(
                    f"special token {token!r} has id {token_id}, which {self.path} gives to an ordinary token; "
                    "set tiktoken special_tokens to ids the ranks file leaves free"
                )
        if len(set(specials.values())) != len(specials):
            raise ConfigError(f"tiktoken special_tokens give two tokens the same id: {specials}")
        try:
            self.encoding = tiktoken.Encoding(
                self.path.name, pat_str=resolved.pattern, mergeable_ranks=self.ranks, special_tokens=specials
            )
        except ValueError as error:
            raise ConfigError(f"tiktoken cannot use pattern {resolved.pattern!r}: {error}") from None
        self._specials = self._special_ids(specials, resolved.eod_token)
        self._token_of: dict[int, str] | None = None

    @staticmethod
    def _resolve(settings: TiktokenSettings, n_ranks: int) -> TiktokenSettings:
        preset = settings.preset
        if preset is not None and preset not in PRESETS:
            raise ConfigError(f"unknown tiktoken preset {preset!r}; choose one of {', '.join(PRESETS)}")
        pattern, specials = PRESETS.get(preset or "", (CL100K_PATTERN, {ENDOFTEXT: n_ranks}))
        return TiktokenSettings(
            preset=preset,
            pattern=settings.pattern or pattern,
            special_tokens=dict(specials if settings.special_tokens is None else settings.special_tokens),
            eod_token=settings.eod_token,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str], settings: Any = None) -> TiktokenTokenizer:
        stem = Path(path).name.removesuffix(".tiktoken")
        if settings is None and stem in PRESETS:
            settings = TiktokenSettings(preset=stem)
        return super().load(path, settings)  # type: ignore[return-value]

    def _special_ids(self, specials: dict[str, int], eod_token: str | None) -> dict[str, int]:
        if eod_token is not None and eod_token not in specials:
            raise ConfigError(
                f"tiktoken eod_token {eod_token!r} is not one of the special tokens ({', '.join(specials) or 'none'})"
            )
        ids = {}
        for key, candidates in _CANDIDATES.items():
            for token in (eod_token,) if key == "eod" and eod_token else candidates:
                if token in specials:
                    ids[key] = specials[token]
                    break
        return {key: ids[key] for key in ("bos", "eos", "pad", "eod") if key in ids}

    @property
    def vocab_size(self) -> int:
        return self.encoding.n_vocab

    @property
    def special_ids(self) -> dict[str, int]:
        return dict(self._specials)

    def encode_batch(self, lines: Sequence[str], num_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        lines = list(lines)
        encode = self.encoding.encode_ordinary
        threads = min(max(1, num_threads), len(lines) // _MIN_SHARE)
        if threads <= 1:
            return flatten([encode(line) for line in lines])
        bounds = np.linspace(0, len(lines), threads + 1).astype(np.int64).tolist()
        with ThreadPoolExecutor(threads) as pool:  # the Rust core lets go of the GIL
            shares = pool.map(lambda a, b: [encode(line) for line in lines[a:b]], bounds[:-1], bounds[1:])
            return flatten(list(chain.from_iterable(shares)))

    def decode(self, ids: Iterable[int]) -> str:
        return self.encoding.decode([int(i) for i in ids])

    def _tokens(self) -> dict[int, str]:
        """Id -> token string, for the ids in use (a mapping, not a list as long as the largest rank: ranks
        may leave gaps, and the file's largest rank is no measure of its size)."""
        if self._token_of is None:
            tokens: dict[int, str] = {}
            for token, rank in self.ranks.items():
                tokens[rank] = "".join(_ALPHABET[b] for b in token)
            for text, token_id in (self.settings.special_tokens or {}).items():
                tokens[token_id] = text
            self._token_of = tokens
        return self._token_of

    def id_to_token(self, token_id: int) -> str:
        token = self._tokens().get(self._check_id(token_id))
        if token is None:
            raise IndexError(f"id {token_id} is unused in {self.path}")
        return token

    def token_to_id(self, token: str) -> int | None:
        specials = self.settings.special_tokens or {}
        if token in specials:
            return specials[token]
        try:
            return self.ranks.get(bytes(_BYTE_OF[c] for c in token))
        except KeyError:
            return None
