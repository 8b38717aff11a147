"""How prepare's settings choose and configure a tokenizer backend (:mod:`tokenmill.vocab.tokenizer`).

The pipeline itself only talks to the :class:`~tokenmill.vocab.tokenizer.Tokenizer` interface; this
module maps the flags (``--tokenizer``, ``--tokenizer-model``, spm_train's options, Megatron's
``--tokenizer-type``/``--vocab-file``/``--merge-file``) onto a backend name, its load settings and
its training settings, and decides which ids a store holds:

* ``dictionary`` ids (fairseq): the tokenizer's pieces become words of a fairseq ``dict.txt`` and
  are remapped through it, as ``spm_encode`` + ``fairseq-preprocess`` do (SentencePiece and
  whitespace-tokenized input);
* ``tokenizer`` ids: the tokenizer's own ids are stored (Hugging Face, tiktoken, T2T subwords, and
  every run made with Megatron's flags), uint16 or int32 as the vocabulary needs.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from tokenmill.prepare.config import PrepareConfig
from tokenmill.text.filters import FilterConfig, piece_filters
from tokenmill.vocab.dictionary import Dictionary
from tokenmill.vocab.sentencepiece import SentencePieceOptions
from tokenmill.vocab.tokenizer import Tokenizer, TokenizerBase, get_backend

WHITESPACE = "whitespace"
Found = tuple[np.ndarray, list[str]]
"""Positions of unknown pieces in a batch's flat ids, and the surface text of each."""


def backend_name(config: PrepareConfig) -> str:
    """The registry name of the backend: ``none`` is whitespace-tokenized input."""
    return WHITESPACE if config.tokenizer.name == "none" else config.tokenizer.name


def backend(config: PrepareConfig) -> type[TokenizerBase]:
    """The backend class the settings choose (what prepare asks about it are its class attributes)."""
    return get_backend(backend_name(config))


def stores_tokenizer_ids(config: PrepareConfig) -> bool:
    """Whether stores hold the tokenizer's own ids (no fairseq dictionary remap): a backend that stores its
    own ids, or any backend with Megatron's flags."""
    return backend(config).stores_own_ids or bool(config.megatron.output_prefix)


def splits_words(config: PrepareConfig) -> bool:
    """Whether the text is whitespace-tokenized (no model: the encode stage numbers the words it meets)."""
    return not backend(config).needs_model


def samples_by_bytes(config: PrepareConfig) -> bool:
    """Whether the tokenizer learns from a byte budget of each cleaned file (T2T's vocabulary builder)
    rather than from a line sample."""
    return backend(config).samples_by_bytes


def warns_small_vocabulary(config: PrepareConfig) -> bool:
    """Whether a trained model may hold fewer pieces than --vocab-size asked for (SentencePiece)."""
    return backend(config).may_stop_short


def keeps_unknown_surfaces(config: PrepareConfig) -> bool:
    """fairseq-preprocess reads spm_encode's piece text, where a piece SentencePiece calls unknown is its
    surface text: those become words of the dictionary (fairseq's ids), so we keep them too."""
    return backend(config).has_unknown_surfaces and not stores_tokenizer_ids(config)


def piece_filter(config: PrepareConfig) -> FilterConfig | None:
    """The token-count and ratio filters, when they count the tokenizer's pieces (as fairseq's max
    positions do) rather than whitespace words: every subword tokenizer. None when there are none."""
    if splits_words(config):
        return None
    return piece_filters(config.cleaning.filters)


def given_model(config: PrepareConfig) -> str | None:
    """The model file the user gave (``--tokenizer-model``, or ``--spm-model``), if any."""
    return config.tokenizer.tokenizer_model or config.tokenizer.spm_model


def load_settings(config: PrepareConfig) -> dict[str, Any]:
    """Settings the backend reads a model with (``--tokenizer-options``)."""
    return dict(config.tokenizer.tokenizer_options)


def spm_options(config: PrepareConfig) -> SentencePieceOptions:
    """spm_train's options as given (defaults leave the trainer's behaviour as before)."""
    return config.tokenizer.sentencepiece.train_settings(config)


def train_settings(config: PrepareConfig) -> Any:
    """What the backend trains with when no model is given: its training sub-section's settings (None for a
    backend without one)."""
    training = config.tokenizer.training(backend_name(config))
    return None if training is None else training.train_settings(config)


def piece_lookup(tokenizer: Tokenizer, dictionary: Dictionary) -> np.ndarray:
    """Tokenizer id -> fairseq dictionary id, as one array (the unknown piece and pieces missing from the
    dictionary -> ``<unk>``), so binarizing a block is one fancy-indexing step."""
    unk = tokenizer.special_ids.get("unk")
    index = dictionary.indices.get
    tokens = (tokenizer.id_to_token(i) for i in range(tokenizer.vocab_size))
    lookup = np.fromiter((index(t, dictionary.unk_index) for t in tokens), dtype=np.int64, count=tokenizer.vocab_size)
    if unk is not None:
        lookup[unk] = dictionary.unk_index
    return lookup


class UnknownSurfaces:
    """Pieces SentencePiece maps to ``<unk>``, kept as their surface text, as ``spm_encode`` prints them.

    fairseq-preprocess builds its dictionary from that piece text, so a character the model does not
    cover (” © á) becomes a word of its own there. To give the same dictionary and ids, each distinct
    surface gets a work id past the model's vocabulary (``vocab_size + k``, in order of first
    appearance); only lines that hold an unknown piece are encoded again as piece text.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.unk = tokenizer.special_ids.get("unk")
        self.ids: dict[str, int] = {}
        self.counts: Counter[str] = Counter()

    def find(self, lines: list[str], flat: np.ndarray, lengths: np.ndarray, num_threads: int = 1) -> Found:
        """Where ``flat`` holds the unknown piece, and its surface text there: the lines that hold one are
        encoded again as piece text, in one call. Depends on the batch only (any thread may run it)."""
        if self.unk is None:
            return np.empty(0, dtype=np.int64), []
        where = np.flatnonzero(flat == self.unk)
        if not len(where):
            return where, []
        starts = np.cumsum(lengths) - lengths
        line_of = np.searchsorted(starts, where, side="right") - 1
        holding, row = np.unique(line_of, return_inverse=True)
        pieces = self.tokenizer.encode_pieces_batch(  # type: ignore[attr-defined]
            [lines[i] for i in holding.tolist()], num_threads=num_threads
        )
        positions = (where - starts[line_of]).tolist()
        return where, [pieces[r][p] for r, p in zip(row.tolist(), positions, strict=True)]

    def assign(self, flat: np.ndarray, found: Found) -> np.ndarray:
        """``flat`` with each unknown piece :meth:`find` found replaced by its surface's work id (new surfaces
        numbered in order of first appearance: call batch after batch in input order)."""
        where, surfaces = found
        if not len(where):
            return flat
        out = flat.copy()
        ids, size = self.ids, self.tokenizer.vocab_size
        out[where] = [ids.setdefault(surface, size + len(ids)) for surface in surfaces]
        self.counts.update(surfaces)
        return out

    def table(self) -> dict[str, list[int]]:
        """surface -> [work id, count]."""
        return {surface: [work_id, self.counts[surface]] for surface, work_id in self.ids.items()}
