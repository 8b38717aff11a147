"""The T2T subword backend: Tensor2Tensor vocab files through tokenmill's ``SubwordTextEncoder``.

Ids as T2T gives them: ``<pad>`` = 0, ``<EOS>`` = 1 (also the ``eod``); there is no unknown token
(unseen characters are escaped). Encoding is vectorized on the calling thread. Training builds to a
target size from the given lines the way T2T's ``build_from_generator`` does; to reproduce T2T's
``get_or_generate_vocab`` on files, pass the lines :func:`t2t_sample` draws from them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.vocab.t2t.escape import ESCAPE_CHARS
from tokenmill.vocab.t2t.sampling import sample_files, sample_stream
from tokenmill.vocab.t2t.tokenizer import count_tokens
from tokenmill.vocab.t2t_subword import EOS_ID, PAD_ID, SubwordTextEncoder
from tokenmill.vocab.tokenizer import TokenizerBase, bad_model

RESERVED = ("<pad>", "<EOS>")


@dataclasses.dataclass
class T2TTrainSettings:
    target_size: int = 8192
    """The approximate vocabulary size aimed at (T2T's ``approx_vocab_size``)."""
    max_subtoken_length: int | None = None
    """Longest subtoken considered (None: unbounded, as T2T's default)."""
    reserved_tokens: list[str] = dataclasses.field(default_factory=lambda: list(RESERVED))
    """First ids; must start with ``<pad>``, ``<EOS>`` (T2T's rule). Add language tags after them."""
    num_iterations: int = 4
    """Segmentation/recount rounds per probe."""


def t2t_sample(paths: Sequence[str | os.PathLike[str]], file_byte_budget: float = 1e6) -> list[str]:
    """The lines T2T reads from ``paths`` to build a vocabulary (``generate_lines_for_vocab``)."""
    return list(sample_files(paths, file_byte_budget))


def t2t_sample_streams(streams: Sequence[tuple[str, int, Iterable[bytes]]], file_byte_budget: float = 1e6) -> list[str]:
    """:func:`t2t_sample` over texts given as (name, size in bytes, raw lines) instead of files on disk: the
    same lines as from files holding those bytes."""
    return [line for name, size, lines in streams for line in sample_stream(lines, size, file_byte_budget, name)]


class T2TSubwordTokenizer(TokenizerBase):
    """A T2T vocab file (one quoted subtoken a line)."""

    name = "t2t-subword"
    filename = "vocab.subwords"
    samples_by_bytes = True
    TrainSettings = T2TTrainSettings

    def __init__(self, path: str | os.PathLike[str], settings: Any = None) -> None:
        super().__init__(path, settings)
        what = "T2T subword vocab file"
        try:
            self.encoder = SubwordTextEncoder.load(self.path)
        except TokenmillError as error:
            raise bad_model(self.path, self.name, what, error) from None
        head = [s.removesuffix("_") for s in self.encoder.all_subtoken_strings[: len(RESERVED)]]
        if head != list(RESERVED):  # T2T puts them first (escaped: '<pad>_', '<EOS>_') in every vocabulary
            raise bad_model(self.path, self.name, what, "it does not start with '<pad>_', '<EOS>_'")
        unspelt = sorted(ESCAPE_CHARS - set(self.encoder.all_subtoken_strings))
        if unspelt:  # every T2T vocabulary lists them: without one, no character outside it can be escaped
            raise bad_model(self.path, self.name, what, f"escape character {unspelt[0]!r} is not a subtoken of its "
                            "own, as in every vocabulary T2T builds")
        self._id_of: dict[str, int] | None = None

    @classmethod
    def _train(cls, lines: list[str], settings: T2TTrainSettings, out_path: Path) -> None:
        reserved = list(settings.reserved_tokens)
        if reserved[: len(RESERVED)] != list(RESERVED):
            raise ConfigError(f"T2T reserved_tokens must start with {', '.join(RESERVED)}, got {reserved[:2]!r}")
        encoder = SubwordTextEncoder.build_to_target_size(
            settings.target_size,
            count_tokens(lines),
            1,
            1000,
            max_subtoken_length=settings.max_subtoken_length,
            reserved_tokens=reserved,
            num_iterations=settings.num_iterations,
        )
        encoder.save(out_path)

    @property
    def vocab_size(self) -> int:
        return self.encoder.vocab_size

    @property
    def special_ids(self) -> dict[str, int]:
        return {"eos": EOS_ID, "pad": PAD_ID, "eod": EOS_ID}

    def encode_batch(self, lines: Sequence[str], num_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        if not lines:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        try:
            return self.encoder.encode_batch(list(lines), append_eos=False, dtype=np.int64)
        except TokenmillError as error:  # a character its vocabulary lists in subtokens but not on its own
            raise ConfigError(f"{self.path}: {error}") from None

    def decode(self, ids: Iterable[int]) -> str:
        return self.encoder.decode(ids)

    def id_to_token(self, token_id: int) -> str:
        return self.encoder.all_subtoken_strings[self._check_id(token_id)]

    def token_to_id(self, token: str) -> int | None:
        if self._id_of is None:  # later duplicates win, as in T2T
            self._id_of = {s: i for i, s in enumerate(self.encoder.all_subtoken_strings) if s}
        return self._id_of.get(token)
