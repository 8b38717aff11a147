"""What a store's ids mean, recorded in the manifest and checked by ``verify``.

Checksums catch changed bytes; they do not catch a store that was encoded with another
vocabulary than the one beside it (a re-run that left stale files, a dictionary copied in by
hand). Each store therefore records its vocabulary file, that vocabulary's size and the id every
item ends with (in a store with a document index, the last item of every document: sentences of a document
made by ``--split-sentences`` end with their own ids, the document's last one with the EOD id);
:func:`check_meaning` recomputes the largest id and the last token of every item (block by block: memory flat in
the store's size) and looks up the special symbols where the manifest says they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.store.format import Layout
from tokenmill.store.index_file import CHECK_BLOCK, read_header, size_blocks, store_files, token_chunks
from tokenmill.vocab.dictionary import Dictionary
from tokenmill.vocab.t2t_subword import SubwordTextEncoder
from tokenmill.vocab.tokenizer import Tokenizer, load_tokenizer

FAIRSEQ = "fairseq"
T2T = "t2t"
TOKENIZER = "tokenizer"
"""A tokenizer's own ids (Hugging Face, tiktoken, SentencePiece with Megatron's flags): its model file."""
_FAIRSEQ_SPECIALS = {"bos": "<s>", "pad": "<pad>", "eos": "</s>", "unk": "<unk>"}


class TokenizerSymbols(Sequence[str]):
    """A tokenizer's vocabulary as a read-only sequence of token strings (looked up on demand)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer

    def __len__(self) -> int:
        return self.tokenizer.vocab_size

    def __getitem__(self, index):  # type: ignore[override]
        return self.tokenizer.id_to_token(int(index))


def vocabulary_symbols(path: Path, kind: str, backend: str | None = None) -> Sequence[str]:
    """The symbols of a vocabulary, in id order (fairseq dictionary, T2T subword list, tokenizer model)."""
    if kind == FAIRSEQ:
        return list(Dictionary.load(path).symbols)
    if kind == T2T:
        return list(SubwordTextEncoder.load(path).all_subtoken_strings)
    if kind == TOKENIZER and backend:
        return TokenizerSymbols(load_tokenizer(backend, path))
    raise TokenmillError(f"{path}: unknown vocabulary kind {kind!r} in the manifest")


def store_meaning(
    vocab: str, kind: str, size: int, eos: int | None, eos_symbol: str | None, *, backend: str | None = None
) -> dict[str, Any]:
    """The manifest's record of what one store's ids mean (``vocab`` relative to the directory)."""
    meaning = {"vocab": vocab, "vocab_kind": kind, "vocab_size": int(size), "eos": eos, "eos_symbol": eos_symbol}
    if backend:
        meaning["tokenizer"] = backend
    return meaning


def check_meaning(root: Path, prefix: str, meaning: dict[str, Any], symbols: Sequence[str]) -> list[str]:
    """Problems with the ids of store ``prefix`` given its recorded meaning and its vocabulary now."""
    problems = []
    vocab = meaning.get("vocab")
    size = len(symbols)
    if size != meaning.get("vocab_size"):
        problems.append(
            f"{vocab}: {size} entries, but {prefix} was encoded with a vocabulary of {meaning.get('vocab_size')} "
            "(a dictionary from another run?); re-run tokenmill prepare"
        )
    largest, items, wrong, ended = -1, 0, 0, 0
    eos = meaning.get("eos")
    lasts = document_lasts(root / prefix)
    for tokens, ends in token_chunks(root / prefix):  # one pass over the .bin, a chunk in memory at a time
        largest = max(largest, int(tokens.max()))
        if eos is not None:
            checked = ends if lasts is None else ends[lasts(ended, len(ends))]
            wrong += int(np.count_nonzero(checked != eos))
            ended += len(ends)
    if eos is not None:
        for sizes in size_blocks(root / prefix, CHECK_BLOCK):
            items += len(sizes)
            wrong += int(np.count_nonzero(sizes == 0))  # an empty item does not end with it either
    if largest >= size:
        problems.append(
            f"{prefix}: largest id {largest} does not fit {vocab} ({size} entries): the store was encoded with "
            "another vocabulary; re-run tokenmill prepare"
        )
    if eos is not None and items:
        if wrong:
            problems.append(f"{prefix}: {wrong} of {items} items do not end with id {eos} "
                            f"({meaning.get('eos_symbol')}) as the manifest says")
        symbol = meaning.get("eos_symbol")
        if symbol is not None and (eos >= size or symbols[eos] != symbol):
            found = symbols[eos] if eos < size else "nothing"
            problems.append(f"{vocab}: id {eos} is {found!r}, the manifest says {symbol!r}")
    return problems


def document_lasts(prefix: Path) -> Any:
    """For a store with a document index: ``lasts(first, count)``, whether each of items ``first`` to
    ``first + count - 1`` is the last item of its document (the index read through a map, a slice at a time).
    None for a store without one (every item ends with the end token)."""
    idx = store_files(prefix)[0]
    layout, _, items, documents = read_header(idx)
    if layout is not Layout.MEGATRON or not documents:
        return None
    index = np.memmap(idx, dtype="<i8", mode="r", offset=layout.header.size + 12 * items, shape=(documents,))

    def lasts(first: int, count: int) -> np.ndarray:
        after = np.arange(first + 1, first + count + 1, dtype=np.int64)
        low, high = np.searchsorted(index, [first + 1, first + count], side="left")
        return np.isin(after, index[low : high + 1])

    return lasts


def check_special_ids(vocab_file: str, symbols: Sequence[str], vocab: dict[str, Any]) -> list[str]:
    """fairseq's special symbols, language tokens and the EOD token at the ids the manifest gives."""
    expected: dict[int, str] = {}
    for name, index in (vocab.get("special") or {}).items():
        if name in _FAIRSEQ_SPECIALS and isinstance(index, int):
            expected[index] = _FAIRSEQ_SPECIALS[name]
    token_format = vocab.get("lang_token_format")
    if token_format:
        for lang, index in (vocab.get("lang_tokens") or {}).items():
            expected[int(index)] = str(token_format).replace("{lang}", str(lang))
    eod = vocab.get("eod")
    if isinstance(eod, dict) and "id" in eod:
        expected[int(eod["id"])] = str(eod["symbol"])
    problems = []
    for index, symbol in sorted(expected.items()):
        found = symbols[index] if 0 <= index < len(symbols) else None
        if found != symbol:
            problems.append(f"{vocab_file}: id {index} is {found!r}, the manifest says {symbol!r}")
    return problems
