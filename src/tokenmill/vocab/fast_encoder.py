"""Fast encoders behind the :class:`~tokenmill.vocab.tokenizer.Tokenizer` interface.

A fast encoder is a library that reproduces a backend's ids many times faster than the backend's own
library (gigatoken today, chosen by ``benchmarks/bench_fast_encoders.py``). It only encodes: a
:class:`FastEncoder` wraps the reference tokenizer, answers ``encode_batch`` itself and hands every other
question (vocabulary, special ids, token strings, fingerprint, save) to the reference, so the pipeline
cannot tell the two apart except by speed.

Which backends have one is a registry, one small builder per variant (``module:function`` taking the
reference tokenizer and returning a :class:`FastBuild`, or raising :class:`Unsupported` with the reason)::

    register_fast_encoder("hf", "tokenmill.vocab.fast_gigatoken:from_hf")
    encoder = fast_encoder(reference)      # FastEncoder, or Unsupported("...why...")

Models no builder takes (SentencePiece unigram, WordPiece, T2T subwords, whitespace words) keep their
library. A builder never decides alone that its ids are right: :mod:`tokenmill.vocab.encoder_check`
proves them on a sample of every run's documents.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tokenmill.vocab.spm_proto import model_settings
from tokenmill.vocab.tokenizer import Tokenizer

FAST_EXTRA = "fast"
"""The pip extra that installs the fast encoders: ``pip install 'tokenmill[fast]'``."""

EncodeFn = Callable[[Sequence[str], int], tuple[np.ndarray, np.ndarray]]
"""``(lines, num_threads) -> (flat ids, int64 lengths)``, as :meth:`Tokenizer.encode_batch`; the flat ids may be
int32 (the library's own buffer, handed on without a widening copy: the work-id stores are int32)."""


class Unsupported(Exception):
    """The fast encoder cannot stand in for this model; the message says why (one line)."""


@dataclass(frozen=True)
class FastBuild:
    """What a builder gives back: the encode function, its library's name and version, and the text of the
    model's special and added tokens (documents holding one are always part of the check's sample)."""

    encode: EncodeFn
    library: str
    special_texts: tuple[str, ...] = ()


Precheck = Callable[[Tokenizer], None]
"""Turns a model down (raises :class:`Unsupported`) before the builder's module and library are imported."""

FAST_BUILDERS: dict[str, str] = {}
"""Backend name -> ``module:function`` of its fast encoder's builder."""
FAST_PRECHECKS: dict[str, Precheck] = {}
"""Backend name -> a cheap check run before its builder (see :func:`register_fast_encoder`)."""


def register_fast_encoder(backend: str, target: str, precheck: Precheck | None = None) -> None:
    """Add (or replace) the fast encoder of ``backend``: ``target`` is ``module:function``, a builder that
    takes the reference tokenizer and returns a :class:`FastBuild` or raises :class:`Unsupported`.
    ``precheck`` (optional) raises :class:`Unsupported` first for models the builder is known to refuse,
    when telling costs far less than the library's import and model read (every encode stage asks)."""
    FAST_BUILDERS[backend] = target
    if precheck is None:
        FAST_PRECHECKS.pop(backend, None)
    else:
        FAST_PRECHECKS[backend] = precheck


def sentencepiece_bpe_with_byte_fallback(reference: Tokenizer) -> None:
    """gigatoken encodes SentencePiece BPE models with byte fallback only: others are turned down from two
    fields of the model file (milliseconds) instead of gigatoken's import and full read (about a second of
    CPU for an 8k-piece unigram model, in every encode stage)."""
    settings = model_settings(reference.path.read_bytes())
    if settings is None:  # not read here: the builder's own reader says what is wrong
        return
    name = reference.path.name
    if settings.model_type != "bpe":
        raise Unsupported(f"gigatoken cannot load {name}: it takes SentencePiece BPE models only, not "
                          f"{settings.model_type} ones")
    if not settings.byte_fallback:
        raise Unsupported(f"gigatoken cannot load {name}: it takes SentencePiece BPE models with byte fallback only")


register_fast_encoder("hf", "tokenmill.vocab.fast_gigatoken:from_hf")
register_fast_encoder("tiktoken", "tokenmill.vocab.fast_gigatoken:from_tiktoken")
register_fast_encoder("sentencepiece", "tokenmill.vocab.fast_gigatoken:from_sentencepiece",
                      sentencepiece_bpe_with_byte_fallback)


class FastEncoder:
    """The reference tokenizer with a fast ``encode_batch``: every other attribute is the reference's, its
    declared abilities included (``stores_own_ids``, ``has_unknown_surfaces``, ...: looked up on the reference
    by ``__getattr__``, so define none of them here), except how its batches share the cores: each call encodes
    on the calling thread with the GIL released (``num_threads=1``), and ``threads`` calls run at once. On two
    cores that took ~15% less CPU than one call spread over the library's own pool (which waits for the batch's
    last documents and spins between calls), the same ids."""

    overlaps_batches = True
    batch_per_thread = True

    def __init__(self, reference: Tokenizer, build: FastBuild) -> None:
        self.reference = reference
        self.library = build.library
        self.special_texts = build.special_texts
        self._encode = build.encode

    def encode_batch(self, lines: Sequence[str], num_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        if not lines:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        try:
            return self._encode(lines, num_threads)
        except (TypeError, UnicodeError):  # text it cannot take (a lone surrogate): the reference's own way
            return self.reference.encode_batch(lines, num_threads=num_threads)

    def __getattr__(self, name: str) -> Any:
        if name == "reference":  # not set yet (copying, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.reference, name)

    def __repr__(self) -> str:
        return f"<FastEncoder {self.library} for {self.reference!r}>"


def fast_encoder(reference: Tokenizer) -> FastEncoder:
    """The fast encoder of ``reference``; :class:`Unsupported` (with the reason, and the install hint when the
    library is missing) when there is none for its backend or model."""
    target = FAST_BUILDERS.get(reference.name)
    if target is None:
        raise Unsupported(f"no fast encoder for the {reference.name} tokenizer")
    precheck = FAST_PRECHECKS.get(reference.name)
    if precheck is not None:
        precheck(reference)
    module_name, _, function = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        raise Unsupported(f"{error.name or 'the fast encoder'} is not installed (pip install "
                          f"'tokenmill[{FAST_EXTRA}]')") from None
    return FastEncoder(reference, getattr(module, function)(reference))


__all__ = ["FAST_BUILDERS", "FAST_EXTRA", "FAST_PRECHECKS", "FastBuild", "FastEncoder", "Unsupported", "fast_encoder",
           "register_fast_encoder"]
