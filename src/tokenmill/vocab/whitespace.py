"""The whitespace backend: text already tokenized, split on whitespace, ids from a fairseq ``dict.txt``.

Ids are fairseq's: ``<s>`` 0, ``<pad>`` 1, ``</s>`` 2 (also the ``eod``), ``<unk>`` 3, then the
file's tokens. Lines split as fairseq's ``tokenize_line`` splits them. There is nothing to train:
the vocabulary is counted over the whole corpus (:meth:`WhitespaceTokenizer.from_counts`).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.vocab.dictionary import Dictionary
from tokenmill.vocab.tokenizer import TokenizerBase, bad_model, sniff


class WhitespaceTokenizer(TokenizerBase):
    """A fairseq dictionary over whitespace-separated tokens."""

    name = "whitespace"
    filename = "dict.txt"
    stores_own_ids = False
    needs_model = False

    def __init__(
        self, path: str | os.PathLike[str], settings: Any = None, dictionary: Dictionary | None = None
    ) -> None:
        super().__init__(path, settings)
        if dictionary is None:
            try:
                dictionary = Dictionary.load(self.path)
            except (TokenmillError, UnicodeDecodeError) as error:
                raise bad_model(self.path, self.name, "fairseq dict.txt", error) from None
            counts = np.asarray(dictionary.counts[dictionary.nspecial :])
            if len(counts) > 2 and bool(np.all(np.diff(counts) > 0)) and sniff(self.path) == "tiktoken":
                # same syntax, but fairseq counts fall while tiktoken ranks rise
                raise bad_model(self.path, self.name, "fairseq dict.txt", "base64 tokens with rising ranks")
        self.dictionary = dictionary

    @classmethod
    def from_counts(cls, counts: Mapping[str, int] | Counter[str], path: str | os.PathLike[str], **finalize: Any):
        """Build the dictionary as fairseq-preprocess does (``threshold``, ``nwords``, ``padding_factor``,
        ``extra_symbols`` as in :meth:`Dictionary.from_counts`), write it to ``path``, return it."""
        dictionary = Dictionary.from_counts(counts, **finalize)
        dictionary.save(path)
        return cls(Path(path), None, dictionary)

    @property
    def vocab_size(self) -> int:
        return len(self.dictionary)

    @property
    def special_ids(self) -> dict[str, int]:
        ids = self.dictionary.special_ids
        return {"bos": ids["bos"], "eos": ids["eos"], "pad": ids["pad"], "unk": ids["unk"], "eod": ids["eos"]}

    def encode_batch(self, lines: Sequence[str], num_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        rows = [line.split() for line in lines]
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        lookup, unk = self.dictionary.indices.get, self.dictionary.unk_index
        ids = np.fromiter(
            (lookup(token, unk) for token in chain.from_iterable(rows)), dtype=np.int64, count=int(lengths.sum())
        )
        return ids, lengths

    def decode(self, ids: Iterable[int]) -> str:
        return self.dictionary.decode(ids)

    def id_to_token(self, token_id: int) -> str:
        return self.dictionary.symbols[self._check_id(token_id)]

    def token_to_id(self, token: str) -> int | None:
        return self.dictionary.indices.get(token)
