"""fairseq-compatible token dictionaries (``dict.{lang}.txt``).

Ids: ``<s>``=0, ``<pad>``=1, ``</s>``=2, ``<unk>``=3, then the file's ``token count`` lines in
order, then ``madeupwordNNNN`` fillers up to a multiple of ``padding_factor``. Built from counts
the way fairseq's ``Dictionary.finalize`` does it: most frequent first, ties by token text,
``threshold`` and ``nwords`` applied, so a dictionary we build equals fairseq-preprocess's.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from tokenmill.errors import FormatError
from tokenmill.fsutil import atomic_write

BOS, PAD, EOS, UNK = "<s>", "<pad>", "</s>", "<unk>"
SPECIALS = (BOS, PAD, EOS, UNK)
_OVERWRITE_FLAG = "#fairseq:overwrite"


class Dictionary:
    """A token <-> id map with fairseq's special symbols and file format."""

    def __init__(self) -> None:
        self.symbols: list[str] = list(SPECIALS)
        self.counts: list[int] = [1] * len(SPECIALS)
        self.indices: dict[str, int] = {s: i for i, s in enumerate(SPECIALS)}
        self.nspecial = len(SPECIALS)

    bos_index, pad_index, eos_index, unk_index = 0, 1, 2, 3

    def __len__(self) -> int:
        return len(self.symbols)

    def __contains__(self, symbol: str) -> bool:
        return symbol in self.indices

    def index(self, symbol: str) -> int:
        """Id of ``symbol``, ``<unk>``'s id when absent."""
        return self.indices.get(symbol, self.unk_index)

    def add_symbol(self, symbol: str, count: int = 1, overwrite: bool = False) -> int:
        """Add (or count again) ``symbol``; returns its id."""
        if symbol in self.indices and not overwrite:
            index = self.indices[symbol]
            self.counts[index] += count
            return index
        index = len(self.symbols)
        self.indices[symbol] = index
        self.symbols.append(symbol)
        self.counts.append(count)
        return index

    # ---------------------------------------------------------------- files
    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Dictionary:
        """Read a fairseq ``dict.txt``: one ``token count [#fairseq:overwrite]`` per line."""
        dictionary = cls()
        with open(path, encoding="utf-8") as handle:
            for line_number, raw in enumerate(handle, start=1):
                line = raw.rstrip("\n")
                if not line.strip():
                    continue
                overwrite = False
                token_and_count = line
                if line.endswith(" " + _OVERWRITE_FLAG):
                    overwrite = True
                    token_and_count = line[: -len(_OVERWRITE_FLAG) - 1]
                token, _, count_text = token_and_count.rpartition(" ")
                if not token or not count_text.lstrip("-").isdigit():
                    raise FormatError(f"{path}:{line_number}: expected '<token> <count>', got {line!r}")
                if token in dictionary.indices and not overwrite:
                    raise FormatError(
                        f"{path}:{line_number}: duplicate token {token!r}; fairseq needs '{_OVERWRITE_FLAG}' "
                        "at the end of the line to allow it"
                    )
                dictionary.add_symbol(token, int(count_text), overwrite=overwrite)
        return dictionary

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the non-special symbols with their counts, atomically."""
        with atomic_write(path) as handle:
            for symbol, count in zip(self.symbols[self.nspecial :], self.counts[self.nspecial :], strict=True):
                handle.write(f"{symbol} {count}\n")

    # ---------------------------------------------------------------- building
    @classmethod
    def from_counts(
        cls,
        counts: Mapping[str, int] | Counter[str],
        *,
        threshold: int = -1,
        nwords: int = -1,
        padding_factor: int = 8,
        extra_symbols: Iterable[str] = (),
    ) -> Dictionary:
        """fairseq's ``finalize``: most frequent first (ties by token), keep counts >= ``threshold``,
        at most ``nwords`` entries in all (specials included), pad to a multiple of ``padding_factor``.

        ``extra_symbols`` (language tags, user symbols) follow the specials, before counted words.
        """
        dictionary = cls()
        for symbol in extra_symbols:
            dictionary.add_symbol(symbol, 1)
        limit = len(dictionary) + len(counts) if nwords <= 0 else nwords
        ordered = Counter(dict(sorted(counts.items())))
        for symbol, count in ordered.most_common(max(limit - len(dictionary), 0)):
            if count >= threshold and symbol not in dictionary.indices:
                dictionary.add_symbol(symbol, count)
        dictionary.pad_to_multiple(padding_factor)
        return dictionary

    def pad_to_multiple(self, padding_factor: int) -> None:
        """Append ``madeupwordNNNN`` fillers until the size is a multiple of ``padding_factor``."""
        if padding_factor > 1:
            filler = 0
            while len(self) % padding_factor:
                self.add_symbol(f"madeupword{filler:04d}", 0)
                filler += 1

    # ---------------------------------------------------------------- encode / decode
    def encode_tokens(self, tokens: Iterable[str], append_eos: bool = True) -> np.ndarray:
        """Ids of whitespace tokens (``<unk>`` for unknown), ``</s>`` appended by default."""
        lookup = self.indices.get
        ids = [lookup(token, self.unk_index) for token in tokens]
        if append_eos:
            ids.append(self.eos_index)
        return np.asarray(ids, dtype=np.int64)

    def decode(self, ids: Iterable[int], *, skip_special: bool = False) -> str:
        """Tokens of ``ids`` joined by spaces; ids outside the dictionary show as ``<id?N>``."""
        size = len(self.symbols)
        words = []
        for token_id in ids:
            token_id = int(token_id)
            if skip_special and token_id in (self.bos_index, self.pad_index, self.eos_index):
                continue
            words.append(self.symbols[token_id] if 0 <= token_id < size else f"<id?{token_id}>")
        return " ".join(words)

    @property
    def special_ids(self) -> dict[str, int]:
        return {"bos": self.bos_index, "pad": self.pad_index, "eos": self.eos_index, "unk": self.unk_index}


def dictionary_path(directory: str | os.PathLike[str], lang: str) -> Path:
    """fairseq's name for the dictionary of ``lang`` in a data directory."""
    return Path(directory) / f"dict.{lang}.txt"
