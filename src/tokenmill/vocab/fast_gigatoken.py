"""gigatoken as the fast encoder of byte-level BPE ``tokenizer.json`` files, tiktoken ranks and SentencePiece
BPE models with byte fallback (one builder each; see :mod:`tokenmill.vocab.fast_encoder`).

gigatoken (PyPI, Rust) encodes a batch on its own thread pool and returns the ids as one flat ``uint32``
buffer with offsets, which become the ``(flat ids, lengths)`` pair without a Python object per token. It
refuses what it cannot reproduce (unigram and WordPiece models, BPE without byte fallback or a byte-level
alphabet): those refusals are :class:`~tokenmill.vocab.fast_encoder.Unsupported`, and the reference
library encodes. prepare calls it with ``num_threads=1`` on ``--workers`` threads at once (each call encodes on
its own thread with the GIL released; see ``FastEncoder.batch_per_thread``); a call with more threads runs on
gigatoken's thread pool, sized like ``tokenizers``' (``RAYON_NUM_THREADS``, set from the first parallel call's
``num_threads`` when nobody set it).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from tokenmill._core.optional import require
from tokenmill.vocab.fast_encoder import FAST_EXTRA, EncodeFn, FastBuild, Unsupported
from tokenmill.vocab.tiktoken_patterns import PRESETS, SCHEME_OF_PRESET
from tokenmill.vocab.tokenizer import Tokenizer

gigatoken = require("gigatoken", extra=FAST_EXTRA, needed_by="tokenmill.vocab.fast_gigatoken")
awkward = require("awkward", extra=FAST_EXTRA, needed_by="tokenmill.vocab.fast_gigatoken")
sentencepiece_to_tokenizer_json = require(  # gigatoken's own reader of a .model (its from_sentencepiece's first step)
    "gigatoken._load.sentencepiece", extra=FAST_EXTRA, needed_by="tokenmill.vocab.fast_gigatoken"
).sentencepiece_to_tokenizer_json

try:
    LIBRARY = f"gigatoken {version('gigatoken')}"
except PackageNotFoundError:  # imported from a source tree
    LIBRARY = "gigatoken"

def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


FRESH_CACHE_CHARS = 1 << 30
"""Characters one loaded gigatoken tokenizer encodes before it is loaded again. Its thread pool's workers keep a
pretoken -> ids cache that is never trimmed (32 B a distinct pretoken, the table doubling as it fills; about
1.3M distinct pretokens in 1 GB of web text, more with every GB): loading afresh drops it, so a process's
memory is bounded by this setting, not by the corpus. Loading costs ~0.2 s (32k vocabulary); the ids are the
same (the cache only remembers them)."""


def batch_encoder(load: Callable[[], Any], fresh_after: int = FRESH_CACHE_CHARS) -> EncodeFn:
    """``encode_batch`` of the gigatoken tokenizer ``load()`` returns, as ``(lines, num_threads) -> (flat,
    lengths)``; loaded again after every ``fresh_after`` characters (see :data:`FRESH_CACHE_CHARS`)."""
    state: dict[str, Any] = {"tokenizer": load(), "chars": 0}
    swap = threading.Lock()  # calls may run on several threads at once (one batch each)

    def encode(lines: Sequence[str], num_threads: int) -> tuple[np.ndarray, np.ndarray]:
        with swap:
            if state["chars"] >= fresh_after:
                state["tokenizer"] = None  # the old one's caches go before the new one is loaded
                state["tokenizer"], state["chars"] = load(), 0
            tokenizer = state["tokenizer"]
            state["chars"] += sum(map(len, lines))
        parallel = num_threads > 1
        if parallel:
            os.environ.setdefault("RAYON_NUM_THREADS", str(num_threads))  # read once, when the pool starts
        layout = awkward.to_layout(tokenizer.encode_batch(lines if isinstance(lines, list) else list(lines),
                                                          parallel=parallel))
        offsets = np.asarray(layout.offsets.data)
        flat = np.asarray(layout.content.data)[offsets[0] : offsets[-1]]  # uint32 ids, all below 2^31:
        return flat.view(np.int32), np.diff(offsets).astype(np.int64, copy=False)  # the work-id store's dtype, no copy

    return encode


def from_hf(reference: Tokenizer) -> FastBuild:
    """A BPE ``tokenizer.json`` (byte-level, or SentencePiece-style with byte fallback)."""
    library = reference.tokenizer  # type: ignore[attr-defined]  # the loaded tokenizers.Tokenizer: no second parse
    kind = type(library.model).__name__
    if kind != "BPE":
        raise Unsupported(f"gigatoken encodes BPE models, not {kind}")
    spec = reference.path.read_bytes()
    try:
        encode = batch_encoder(lambda: gigatoken.Tokenizer.from_json(spec))
    except (RuntimeError, ValueError) as error:
        raise Unsupported(f"gigatoken cannot load {reference.path.name}: {_first_line(error)}") from None
    added = tuple(str(token.content) for token in library.get_added_tokens_decoder().values() if token.content)
    return FastBuild(encode, LIBRARY, added)


def from_tiktoken(reference: Tokenizer) -> FastBuild:
    """A ``.tiktoken`` ranks file with one of the r50k/cl100k/o200k split patterns, encoded as ordinary text
    (the reference's ``encode_ordinary``: special-token text is not the special token)."""
    settings = reference.settings  # type: ignore[attr-defined]
    schemes = {PRESETS[preset][0]: scheme for preset, scheme in SCHEME_OF_PRESET.items()}
    scheme = schemes.get(settings.pattern)
    if scheme is None:
        raise Unsupported("gigatoken knows the r50k, cl100k and o200k split patterns, not this one")
    try:
        encode = batch_encoder(lambda: gigatoken.Tokenizer.from_tiktoken(reference.path, pretokenizer=scheme,
                                                                         special_tokens={}))
    except (RuntimeError, ValueError) as error:
        raise Unsupported(f"gigatoken cannot load {reference.path.name}: {_first_line(error)}") from None
    return FastBuild(encode, LIBRARY, tuple(settings.special_tokens or ()))


def from_sentencepiece(reference: Tokenizer) -> FastBuild:
    """A SentencePiece BPE ``.model`` with byte fallback, identity normalization, ``remove_extra_whitespaces``
    off and no user-defined symbols (Llama 2's layout; gigatoken differs from SentencePiece on the others, see
    the reasons below). gigatoken reads it as the
    Hugging Face converters do, where the text of a control piece (``</s>``) in a line is that piece;
    SentencePiece encodes that text as plain text, so the control pieces are taken out of the added tokens
    (and out of the merges) before loading."""
    try:
        spec = json.loads(sentencepiece_to_tokenizer_json(reference.path.read_bytes()))
    except (RuntimeError, ValueError) as error:
        raise Unsupported(f"gigatoken cannot load {reference.path.name}: {_first_line(error)}") from None
    steps = {step.get("type") for step in spec.get("normalizer", {}).get("normalizers", [])}
    if "Precompiled" in steps:
        raise Unsupported("gigatoken's NFKC tables differ from SentencePiece's on combining sequences (é́); "
                          "it encodes models with identity normalization")
    if "Strip" in steps:
        raise Unsupported("gigatoken strips every whitespace character where SentencePiece's "
                          "remove_extra_whitespaces strips spaces only; it encodes models without that option")
    added = spec.get("added_tokens") or []
    user_defined = [token["content"] for token in added if not token.get("special")]
    if user_defined:
        raise Unsupported(f"gigatoken matches SentencePiece user-defined symbols ({', '.join(user_defined[:3])}) "
                          "with other whitespace rules than SentencePiece")
    control = {token["content"] for token in added}
    spec["added_tokens"] = []
    spec["model"]["merges"] = [m for m in spec["model"]["merges"] if "".join(m) not in control]
    text = json.dumps(spec, ensure_ascii=False)
    try:
        encode = batch_encoder(lambda: gigatoken.Tokenizer.from_json(text))
    except (RuntimeError, ValueError) as error:
        raise Unsupported(f"gigatoken cannot load {reference.path.name}: {_first_line(error)}") from None
    return FastBuild(encode, LIBRARY, tuple(sorted(control)))
