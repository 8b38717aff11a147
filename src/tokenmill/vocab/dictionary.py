"""fairseq-compatible token dictionaries (``dict.{lang}.txt``), and OpenNMT vocabularies read as one.

Ids: ``<s>``=0, ``<pad>``=1, ``</s>``=2, ``<unk>``=3, then the file's ``token count`` lines in
order, then ``madeupwordNNNN`` fillers up to a multiple of ``padding_factor``. Built from counts
the way fairseq's ``Dictionary.finalize`` does it: most frequent first, ties by token text,
``threshold`` and ``nwords`` applied, so a dictionary we build equals fairseq-preprocess's.

:meth:`Dictionary.load` also reads OpenNMT vocabularies (OpenNMT-tf's one token per line,
OpenNMT-py's ``token<TAB>count``), so they can be given as ``--srcdict``/``--tgtdict``; see its
docstring for the rule. :func:`write_opennmt_tf_vocab` writes a dictionary back as an OpenNMT-tf
vocabulary, and :func:`opennmt_tf_id_table` maps our ids to that file's ids (what
``CollateOptions(ids="opennmt")`` gives the OpenNMT collate).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping
from operator import itemgetter
from pathlib import Path

import numpy as np

from tokenmill.errors import FormatError
from tokenmill.fsutil import atomic_write

BOS, PAD, EOS, UNK = "<s>", "<pad>", "</s>", "<unk>"
SPECIALS = (BOS, PAD, EOS, UNK)
_OVERWRITE_FLAG = "#fairseq:overwrite"
_FAIRSEQ_COUNT = re.compile(r" (-?[0-9]+)$", re.MULTILINE)
"""The end of a plain fairseq dictionary line: a space and an integer count (the token is what precedes)."""

OPENNMT_BLANK = "<blank>"
"""OpenNMT's padding token (OpenNMT-py's ``DefaultTokens.PAD``, OpenNMT-tf's ``PADDING_TOKEN``)."""
OPENNMT_SPECIALS = {OPENNMT_BLANK: PAD, "<pad>": PAD, BOS: BOS, EOS: EOS, UNK: UNK}
"""Special tokens an OpenNMT vocabulary may list, and the fairseq special each one is: skipped on load."""
OPENNMT_TF_HEAD = (OPENNMT_BLANK, BOS, EOS)
"""The first lines of an OpenNMT-tf vocabulary: ``<blank>``=0, ``<s>``=1, ``</s>``=2 (``<unk>`` is not
in the file: OpenNMT-tf gives it the id after the last line, its one out-of-vocabulary bucket)."""


class Dictionary:
    """A token <-> id map with fairseq's special symbols and file format."""

    def __init__(self) -> None:
        self.symbols: list[str] = list(SPECIALS)
        self.counts: list[int] = [1] * len(SPECIALS)
        self.indices: dict[str, int] = {s: i for i, s in enumerate(SPECIALS)}
        self.nspecial = len(SPECIALS)
        self.format = "fairseq"
        """What :meth:`load` read: ``fairseq``, ``opennmt-tf`` (one token per line), ``opennmt-py``
        (``token<TAB>count``) or ``opennmt-counts`` (``token count`` starting with an OpenNMT special)."""

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
        """Read a fairseq ``dict.txt`` or an OpenNMT vocabulary; the first non-blank line tells which.

        - ``token count`` (space, integer count, optionally `` #fairseq:overwrite``): a fairseq
          dictionary, read exactly as fairseq's ``Dictionary.add_from_file`` reads it (a repeated
          token needs the overwrite flag) -- unless the first token is an OpenNMT special (below)
          without the flag: then an OpenNMT vocabulary with counts (``token count``).
        - ``token<TAB>count`` (integer count): an OpenNMT-py vocabulary (``onmt_build_vocab``).
        - one token, no space or tab: an OpenNMT-tf vocabulary (``onmt-build-vocab``), one token per line.

        Every later line must have the first line's form; blank lines are skipped. An OpenNMT
        vocabulary becomes a fairseq dictionary: ids 0-3 are fairseq's ``<s> <pad> </s> <unk>``, and
        the file's tokens follow in file order, skipping the OpenNMT specials fairseq's already
        cover (``<blank>`` and ``<pad>`` are ``<pad>``; ``<s>``, ``</s>``, ``<unk>`` are themselves)
        wherever they stand. Counts are the file's, 1 when it has none. A token listed twice is an
        error, and so is any line of another form: one :class:`FormatError` naming the file and line.
        No ``madeupword`` padding is added (the file is taken as it is).
        """
        with open(path, "rb") as handle:
            raw = handle.read()
        key = hashlib.blake2b(raw, digest_size=16).digest()
        dictionary = cls()
        if _READ.copy_into(key, dictionary):
            return dictionary
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            line = raw.count(b"\n", 0, error.start) + 1
            raise FormatError(f"{path} is not a fairseq dictionary (not UTF-8 text, line {line})") from None
        if "\r" in text:  # universal newlines, as fairseq's text-mode reading sees the file
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if dictionary._add_fairseq_fast(text):
            _READ.keep(key, dictionary)
            return dictionary
        numbered = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
        if not numbered:
            return dictionary
        first = numbered[0][1]
        if "\t" in first:
            dictionary.format = "opennmt-py"
            dictionary._add_opennmt(path, numbered, "\t")
        elif " " not in first:
            dictionary.format = "opennmt-tf"
            dictionary._add_opennmt(path, numbered, None)
        elif _split_counted(first, " ") is not None and first.rpartition(" ")[0] in OPENNMT_SPECIALS:
            dictionary.format = "opennmt-counts"
            dictionary._add_opennmt(path, numbered, " ")
        else:
            dictionary._add_fairseq(path, numbered)
        return dictionary

    def _add_fairseq_fast(self, text: str) -> bool:
        """Add the lines of a well-formed fairseq dictionary in a few C-level passes (regex scans for the
        counts and the tokens, one dict update) instead of a Python call per line; False, adding
        nothing, when the text is anything else (blank lines, the overwrite flag, a repeated token, a
        count that is not plain digits, an OpenNMT vocabulary): :meth:`load`'s line-by-line reading
        then decides, with its error messages."""
        body = text[:-1] if text.endswith("\n") else text
        counts = _FAIRSEQ_COUNT.findall(body)  # at most one per line: all lines have one when the numbers agree
        if not body or len(counts) != body.count("\n") + 1:
            return False
        tokens = _FAIRSEQ_COUNT.sub("", body).split("\n")  # each line up to its last space
        if "" in tokens or "\t" in tokens[0] or tokens[0] in OPENNMT_SPECIALS:
            return False
        indices = dict(self.indices)
        indices.update(zip(tokens, range(len(self.symbols), len(self.symbols) + len(tokens)), strict=True))
        if len(indices) != len(self.symbols) + len(tokens):  # a repeated token or a special: the slow path says which
            return False
        self.indices = indices
        self.symbols.extend(tokens)
        self.counts.extend(map(int, counts))
        return True

    def _add_fairseq(self, path: str | os.PathLike[str], numbered: list[tuple[int, str]]) -> None:
        for line_number, line in numbered:
            overwrite = False
            token_and_count = line
            if line.endswith(" " + _OVERWRITE_FLAG):
                overwrite = True
                token_and_count = line[: -len(_OVERWRITE_FLAG) - 1]
            token, _, count_text = token_and_count.rpartition(" ")
            if not token or not count_text.lstrip("-").isdigit():
                raise FormatError(f"{path}:{line_number}: expected '<token> <count>', got {line!r}")
            if token in self.indices and not overwrite:
                raise FormatError(
                    f"{path}:{line_number}: duplicate token {token!r}; fairseq needs '{_OVERWRITE_FLAG}' "
                    "at the end of the line to allow it"
                )
            self.add_symbol(token, int(count_text), overwrite=overwrite)

    def _add_opennmt(self, path: str | os.PathLike[str], numbered: list[tuple[int, str]], sep: str | None) -> None:
        first_number = numbered[0][0]
        seen: dict[str, int] = {}
        for line_number, line in numbered:
            if sep is None:
                token, count = line, 1
                if " " in token or "\t" in token:
                    raise FormatError(
                        f"{path}:{line_number}: expected one token per line, got {line!r}; line {first_number} "
                        "has no count, so the file is read as an OpenNMT-tf vocabulary (a fairseq dictionary "
                        "needs '<token> <count>' on every line)"
                    )
            else:
                parsed = _split_counted(line, sep)
                if parsed is None:
                    form = "'<token><TAB><count>'" if sep == "\t" else "'<token> <count>'"
                    raise FormatError(
                        f"{path}:{line_number}: expected {form} like line {first_number} (an OpenNMT vocabulary "
                        f"with counts), got {line!r}"
                    )
                token, count = parsed
            if token in seen:
                raise FormatError(
                    f"{path}:{line_number}: duplicate token {token!r} (first on line {seen[token]}); "
                    "a vocabulary lists each token once"
                )
            seen[token] = line_number
            if token in OPENNMT_SPECIALS:
                continue
            self.add_symbol(token, count)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the non-special symbols with their counts, atomically."""
        lines = [f"{symbol} {count}\n"
                 for symbol, count in zip(self.symbols[self.nspecial :], self.counts[self.nspecial :], strict=True)]
        data = "".join(lines)
        with atomic_write(path) as handle:
            handle.write(data)  # one write: a call per line costs more than building the lines
        if self._reads_back_as_itself():  # the next load of these bytes needs no parse
            _READ.keep(hashlib.blake2b(data.encode("utf-8"), digest_size=16).digest(), self, plain_counts=True)

    def _reads_back_as_itself(self) -> bool:
        """Whether :meth:`load` of what :meth:`save` writes gives this dictionary back, symbol for symbol:
        fairseq's specials first, each symbol once, none holding a line break or empty, counts that are
        integers, and a first symbol that does not make the file read as an OpenNMT vocabulary."""
        symbols = self.symbols
        if len(symbols) <= self.nspecial or symbols[: self.nspecial] != list(SPECIALS):
            return False
        if self.counts[: self.nspecial] != [1] * self.nspecial or len(self.indices) != len(symbols):
            return False
        first = symbols[self.nspecial]
        if "\t" in first or first in OPENNMT_SPECIALS:
            return False
        if any(not s or "\n" in s or "\r" in s for s in symbols):
            return False
        return all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in self.counts)

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
        # fairseq's Counter(dict(sorted(...))).most_common(n): by count, highest first, ties in token order
        ordered = sorted(counts.items())
        ordered.sort(key=itemgetter(1), reverse=True)  # stable: equal counts stay in token order
        present = dictionary.indices
        kept = [(symbol, count) for symbol, count in ordered[: max(limit - len(dictionary), 0)]
                if count >= threshold and symbol not in present]
        start = len(dictionary.symbols)
        dictionary.symbols.extend(symbol for symbol, _ in kept)
        dictionary.counts.extend(count for _, count in kept)
        present.update(zip(dictionary.symbols[start:], range(start, len(dictionary.symbols)), strict=True))
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


class _ReadCache:
    """The last :data:`_READ_KEPT` plain fairseq dictionaries :meth:`Dictionary.load` parsed, by a hash of
    the file's bytes: one run reads the same dictionary several times (the pipeline after building
    it, ``verify`` once per language of a joined dictionary, the report), and a copy of the lists and
    the index costs a tenth of parsing them again. Keyed by content, it cannot be stale; copies are
    handed out, never the kept lists; the strings are shared with the dictionaries handed out."""

    def __init__(self) -> None:
        self._kept: OrderedDict[bytes, tuple[tuple[str, ...], tuple[int, ...], dict[str, int]]] = OrderedDict()
        self._lock = threading.Lock()

    def copy_into(self, key: bytes, dictionary: Dictionary) -> bool:
        with self._lock:
            kept = self._kept.get(key)
            if kept is None:
                return False
            self._kept.move_to_end(key)
        symbols, counts, indices = kept
        dictionary.symbols, dictionary.counts, dictionary.indices = list(symbols), list(counts), dict(indices)
        return True

    def keep(self, key: bytes, dictionary: Dictionary, plain_counts: bool = False) -> None:
        counts = tuple(map(int, dictionary.counts)) if plain_counts else tuple(dictionary.counts)
        kept = (tuple(dictionary.symbols), counts, dict(dictionary.indices))
        with self._lock:
            self._kept[key] = kept
            while len(self._kept) > _READ_KEPT:
                self._kept.popitem(last=False)


_READ_KEPT = 2
_READ = _ReadCache()


def _split_counted(line: str, sep: str) -> tuple[str, int] | None:
    """``token<sep>count`` with an integer count (sign allowed), or None."""
    token, found, count_text = line.rpartition(sep)
    if not found or not token or not count_text.lstrip("-").isdigit():
        return None
    return token, int(count_text)


def opennmt_tf_id_table(size: int) -> np.ndarray:
    """OpenNMT-tf id of each fairseq id of a dictionary of ``size`` entries (int64, length ``size``).

    The ids are line numbers (from 0) in the vocabulary :func:`write_opennmt_tf_vocab` writes:
    ``<pad>``->0 (``<blank>``), ``<s>``->1, ``</s>``->2, symbol ``i >= 4`` -> ``i - 1`` (the file
    lists the symbols after the three specials, in id order), ``<unk>`` -> ``size - 1``: the id
    just past the file's last line, where OpenNMT-tf puts unknown tokens (its one OOV bucket).
    """
    if size < len(SPECIALS):
        raise ValueError(f"a fairseq dictionary has at least {len(SPECIALS)} entries, got {size}")
    table = np.arange(-1, size - 1, dtype=np.int64)
    table[Dictionary.bos_index] = 1
    table[Dictionary.pad_index] = 0
    table[Dictionary.eos_index] = 2
    table[Dictionary.unk_index] = size - 1
    return table


def write_opennmt_tf_vocab(dictionary: Dictionary, path: str | os.PathLike[str]) -> Path:
    """Write ``dictionary`` as an OpenNMT-tf vocabulary, atomically; returns ``path``.

    One token per line: ``<blank>``, ``<s>``, ``</s>``, then the dictionary's symbols from id 4 on
    (``madeupword`` fillers included), so token ``t`` has the OpenNMT-tf id
    ``opennmt_tf_id_table(len(dictionary))[dictionary.index(t)]`` and OpenNMT-tf's ``<unk>`` (not in
    the file) is the id after the last line. Give it to OpenNMT-tf as ``source_vocabulary`` /
    ``target_vocabulary`` with batches collated with ``CollateOptions(ids="opennmt")``.
    A symbol that OpenNMT-tf would read as a special, a repeated symbol (fairseq's overwrite flag)
    or one holding a line break cannot be written: :class:`FormatError` naming it.
    """
    reserved = {*OPENNMT_TF_HEAD, UNK}
    seen: set[str] = set()
    for index, symbol in enumerate(dictionary.symbols[dictionary.nspecial :], start=dictionary.nspecial):
        problem = None
        if symbol in reserved:
            problem = "is an OpenNMT-tf special token"
        elif symbol in seen:
            problem = "is listed twice (a '#fairseq:overwrite' entry)"
        elif any(c in symbol for c in "\n\r") or not symbol:
            problem = "is empty or holds a line break"
        if problem:
            raise FormatError(
                f"cannot write {path}: symbol {symbol!r} (id {index}) {problem}; an OpenNMT-tf vocabulary "
                "lists each token once, one per line"
            )
        seen.add(symbol)
    with atomic_write(path) as handle:
        for symbol in (*OPENNMT_TF_HEAD, *dictionary.symbols[dictionary.nspecial :]):
            handle.write(symbol + "\n")
    return Path(path)


def dictionary_path(directory: str | os.PathLike[str], lang: str) -> Path:
    """fairseq's name for the dictionary of ``lang`` in a data directory."""
    return Path(directory) / f"dict.{lang}.txt"
