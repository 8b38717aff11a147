"""gigatoken as the fast encoder of byte-level BPE ``tokenizer.json`` files, tiktoken ranks and SentencePiece
BPE models with byte fallback (one builder each; see :mod:`tokenmill.vocab.fast_encoder`).

gigatoken (PyPI, Rust) encodes a batch on its own thread pool and returns the ids as one flat ``uint32``
buffer with offsets, which become the ``(flat ids, lengths)`` pair without a Python object per token. It
refuses what it cannot reproduce (unigram and WordPiece models, BPE without byte fallback or a byte-level
alphabet): those refusals are :class:`~tokenmill.vocab.fast_encoder.Unsupported`, and the reference
library encodes. Its thread pool is sized like ``tokenizers``' (``RAYON_NUM_THREADS``, set from the first
parallel call's ``num_threads`` when nobody set it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from tokenmill._core.optional import require
from tokenmill.vocab.fast_encoder import FAST_EXTRA, FastBuild, Unsupported
from tokenmill.vocab.tiktoken_patterns import PRESETS, SCHEME_OF_PRESET
from tokenmill.vocab.tokenizer import Tokenizer

gigatoken = require("gigatoken", extra=FAST_EXTRA, needed_by="tokenmill.vocab.fast_gigatoken")
awkward = require("awkward", extra=FAST_EXTRA, needed_by="tokenmill.vocab.fast_gigatoken")

try:
    LIBRARY = f"gigatoken {version('gigatoken')}"
except PackageNotFoundError:  # imported from a source tree
    LIBRARY = "gigatoken"

def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def _encoder(tokenizer: Any) -> Any:
    """``encode_batch`` of a loaded gigatoken tokenizer as ``(lines, num_threads) -> (flat, lengths)``."""

    def encode(lines: Sequence[str], num_threads: int) -> tuple[np.ndarray, np.ndarray]:
        parallel = num_threads > 1
        if parallel:
            os.environ.setdefault("RAYON_NUM_THREADS", str(num_threads))  # read once, when the pool starts
        layout = awkward.to_layout(tokenizer.encode_batch(list(lines), parallel=parallel))
        offsets = np.asarray(layout.offsets.data)
        flat = np.asarray(layout.content.data)[offsets[0] : offsets[-1]].astype(np.int64)
        return flat, np.diff(offsets)

    return encode


def from_hf(reference: Tokenizer) -> FastBuild:
    """A BPE ``tokenizer.json`` (byte-level, or SentencePiece-style with byte fallback)."""
    data = reference.path.read_bytes()
    try:
        spec = json.loads(data)
        kind = spec["model"].get("type")
    except (ValueError, KeyError, AttributeError, TypeError):
        raise Unsupported(f"{reference.path} is not a tokenizer.json gigatoken reads") from None
    if kind != "BPE":
        raise Unsupported(f"gigatoken encodes BPE models, not {kind}")
    try:
        tokenizer = gigatoken.Tokenizer.from_json(data)
    except (RuntimeError, ValueError) as error:
        raise Unsupported(f"gigatoken cannot load {reference.path.name}: {_first_line(error)}") from None
    added = tuple(str(token["content"]) for token in spec.get("added_tokens") or () if token.get("content"))
    return FastBuild(_encoder(tokenizer), LIBRARY, added)


def from_tiktoken(reference: Tokenizer) -> FastBuild:
    """A ``.tiktoken`` ranks file with one of the r50k/cl100k/o200k split patterns, encoded as ordinary text
    (the reference's ``encode_ordinary``: special-token text is not the special token)."""
    settings = reference.settings  # type: ignore[attr-defined]
    schemes = {PRESETS[preset][0]: scheme for preset, scheme in SCHEME_OF_PRESET.items()}
    scheme = schemes.get(settings.pattern)
    if scheme is None:
        raise Unsupported("gigatoken knows the r50k, cl100k and o200k split patterns, not this one")
    try:
        tokenizer = gigatoken.Tokenizer.from_tiktoken(reference.path, pretokenizer=scheme, special_tokens={})
    except (RuntimeError, ValueError) as error:
        raise Unsupported(f"gigatoken cannot load {reference.path.name}: {_first_line(error)}") from None
    return FastBuild(_encoder(tokenizer), LIBRARY, tuple(settings.special_tokens or ()))


def from_sentencepiece(reference: Tokenizer) -> FastBuild:
    """A SentencePiece BPE ``.model`` with byte fallback."""
    try:
        tokenizer = gigatoken.Tokenizer.from_sentencepiece(reference.path)
    except (RuntimeError, ValueError) as error:
        raise Unsupported(f"gigatoken cannot load {reference.path.name}: {_first_line(error)}") from None
    specials = {reference.id_to_token(i) for i in reference.special_ids.values()}
    return FastBuild(_encoder(tokenizer), LIBRARY, tuple(sorted(specials)))
