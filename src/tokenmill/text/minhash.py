"""MinHash signatures and LSH band keys of documents or pairs, vectorized in numpy.

An item's *shingles* are its word n-grams (``ngram`` words, default 5, as datatrove's MinHash): the text
is lower-cased, punctuation becomes space and it is cut at whitespace, so whitespace and punctuation
changes do not change a shingle. An item with fewer words than ``ngram`` has one shingle, all its words;
an item with no word has none and takes no part in near-dedup. A chunk's words are found and hashed in
its UTF-8 bytes by numpy (a byte table for whitespace, a polynomial hash from prefix sums: no Python per
word); a shingle's 32-bit hash mixes its words' hashes (SplitMix64's finaliser over a polynomial of
them). Pairs: the shingles of both sides (the target's tagged so the same words on both sides are
different shingles), or of one side.

The signature is datasketch 2's (its default ``affine32`` scheme): each shingle hash ``s`` is mixed once
with MurmurHash3's 32-bit finaliser, then permutation ``p`` is ``a_p * fmix(s) + b_p`` in uint32
arithmetic (``a_p`` odd: a bijection, so the permutation adds no collisions), ``(a_p, b_p)`` drawn as
datasketch draws them from ``seed``; the signature holds each permutation's minimum. So
``datasketch.MinHash(num_perm, seed, hashfunc=int)`` fed the same shingle hashes gives the same values
(the oracle test). The signature is cut into ``bands`` bands of ``rows`` values; each band's values hash
to one uint64 *band key* (the band's number mixed in, so keys of different bands never meet). Two items
that share a band key are candidates (LSH): the chance is ``1 - (1 - J^rows)^bands`` for Jaccard
similarity ``J`` of their shingle sets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MAX_HASH = np.uint32((1 << 32) - 1)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_TARGET_TAG = np.uint64(0x5DEECE66D1F2E3A7)
_BLOCK = 1 << 16  # shingles per (shingles x permutations) matrix: 64k x 112 x 4 B = 29 MiB


@dataclass(frozen=True)
class MinHashSettings:
    """What a signature depends on: words per shingle, bands x rows (= permutations), the permutations' seed."""

    ngram: int = 5
    bands: int = 14
    rows: int = 8
    seed: int = 1

    @property
    def permutations(self) -> int:
        return self.bands * self.rows

    def parameters(self) -> tuple[np.ndarray, np.ndarray]:
        """The permutations' ``(a, b)``: uint32, ``a`` odd, drawn from ``seed`` as datasketch draws them."""
        rng = np.random.RandomState(self.seed)
        a = rng.randint(0, 1 << 31, self.permutations, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
        b = rng.randint(0, 1 << 32, self.permutations, dtype=np.uint32)
        return a, b


def mix64(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser of uint64 ``values`` (a bijection that spreads every bit)."""
    with np.errstate(over="ignore"):
        z = values ^ (values >> np.uint64(30))
        z = z * _M1
        z = z ^ (z >> np.uint64(27))
        z = z * _M2
        return z ^ (z >> np.uint64(31))


def fmix32(values: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finaliser of uint32 ``values`` (a bijection)."""
    with np.errstate(over="ignore"):
        z = values ^ (values >> np.uint32(16))
        z = z * np.uint32(0x85EBCA6B)
        z = z ^ (z >> np.uint32(13))
        z = z * np.uint32(0xC2B2AE35)
        return z ^ (z >> np.uint32(16))


_SPACE = str.maketrans({ch: " " for ch in (
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\x00\u00a0\u00a1\u00ab\u00bb\u00bf\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u200b\u2010\u2011\u2012\u2013\u2014\u2018\u2019\u201c\u201d\u2026"
    "\u3000\u3001\u3002\uff0c\uff01\uff1f\uff1a\uff1b")})
"""Punctuation and spaces that end a word (ASCII punctuation, Unicode spaces, common quotes, dashes, CJK
punctuation): made spaces before the text is cut at whitespace."""
_WHITE = np.zeros(256, dtype=bool)
_WHITE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True  # the ASCII bytes str.split() cuts at
_P = np.uint64(0x100000001B3)  # odd: invertible modulo 2^64
_P_INV = np.uint64(pow(0x100000001B3, -1, 1 << 64))


def words_of(text: str) -> list[str]:
    """The words a shingle is made of: the lower-cased text with punctuation made spaces, cut at whitespace."""
    return text.lower().translate(_SPACE).split()


def _word_runs(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first byte, end byte, item) of every word of ``texts`` in their UTF-8 bytes joined by NUL: the
    whitespace of :func:`words_of` found by a byte table, no Python per word."""
    joined = "\0".join(text.lower().translate(_SPACE) for text in texts)
    raw = np.frombuffer(joined.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    gap = _WHITE[raw] | (raw == 0)
    edges = np.flatnonzero(np.diff(np.concatenate([[True], gap, [True]]).astype(np.int8)))
    first, end = edges[0::2], edges[1::2]
    item = np.cumsum(raw == 0)[first] if len(first) else np.zeros(0, dtype=np.int64)
    return first, end, item.astype(np.int64), raw


def _word_hashes_of(raw: np.ndarray, first: np.ndarray, end: np.ndarray) -> np.ndarray:
    """uint64 hash of each byte run ``raw[first:end]``: a polynomial of its bytes modulo 2^64 from prefix
    sums (``P^-i`` undoes each run's offset), mixed with its length."""
    n = len(raw)
    with np.errstate(over="ignore"):
        powers = np.cumprod(np.concatenate([[np.uint64(1)], np.full(n, _P, dtype=np.uint64)]))
        inverse = np.cumprod(np.concatenate([[np.uint64(1)], np.full(n, _P_INV, dtype=np.uint64)]))
        prefix = np.concatenate([[np.uint64(0)], np.cumsum((raw.astype(np.uint64) + np.uint64(1)) * powers[:-1])])
        polynomial = (prefix[end] - prefix[first]) * inverse[first]
        return mix64(polynomial + (end - first).astype(np.uint64) * _GOLDEN)


def shingle_hashes(texts: Sequence[str], ngram: int, tag: np.uint64 | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(32-bit shingle hashes as uint64, the item of each) of ``texts``, items in order. ``tag`` marks a
    side (xored into the hashes of the target's words)."""
    first, end, item_of_word, raw = _word_runs(texts)
    words = _word_hashes_of(raw, first, end)
    if tag is not None:
        words ^= tag
    counts = np.bincount(item_of_word, minlength=len(texts)).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)])
    end_of_word = starts[1:][item_of_word]
    position = np.arange(len(words), dtype=np.int64)
    span = np.minimum(ngram, end_of_word - position)  # words of the n-gram that starts here
    first_word = position == starts[:-1][item_of_word]
    take = (span == ngram) | (first_word & (counts[item_of_word] < ngram))
    begin, span = position[take], span[take]
    padded = np.concatenate([words, np.zeros(ngram, dtype=np.uint64)])
    hashed = np.zeros(len(begin), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(ngram):
            hashed = hashed * _GOLDEN + np.where(k < span, mix64(padded[begin + k] + np.uint64(k + 1)), 0)
    return mix64(hashed + span.astype(np.uint64)) >> np.uint64(32), item_of_word[take]


def item_shingles(
    src: Sequence[str], tgt: Sequence[str] | None, sides: str, ngram: int
) -> tuple[np.ndarray, np.ndarray]:
    """(shingle hashes, item of each, sorted by item) of a chunk: ``sides`` is ``both``, ``src`` or ``tgt``
    (``tgt`` None: monolingual, the source is the document)."""
    if tgt is None or sides == "src":
        return shingle_hashes(src, ngram)
    if sides == "tgt":
        return shingle_hashes(tgt, ngram, _TARGET_TAG)
    s_hash, s_item = shingle_hashes(src, ngram)
    t_hash, t_item = shingle_hashes(tgt, ngram, _TARGET_TAG)
    items = np.concatenate([s_item, t_item])
    order = np.argsort(items, kind="stable")
    return np.concatenate([s_hash, t_hash])[order], items[order]


def signatures(hashes: np.ndarray, items: np.ndarray, count: int, settings: MinHashSettings) -> np.ndarray:
    """(count, permutations) uint32 MinHash signatures from shingle ``hashes`` of ``items`` (sorted); an item
    without shingles gets ``2^32 - 1`` everywhere. Blocks of shingles: memory bounded by :data:`_BLOCK`."""
    a, b = settings.parameters()
    signature = np.full((count, settings.permutations), MAX_HASH, dtype=np.uint32)
    mixed = fmix32(hashes.astype(np.uint32))
    for start in range(0, len(hashes), _BLOCK):
        block, owners = mixed[start : start + _BLOCK], items[start : start + _BLOCK]
        with np.errstate(over="ignore"):
            values = block[:, None] * a[None, :]  # uint32: wraps, the modulo 2^32 of the scheme
        values += b[None, :]
        cuts = np.flatnonzero(np.concatenate([[True], owners[1:] != owners[:-1]]))
        owner = owners[cuts]
        signature[owner] = np.minimum(signature[owner], np.minimum.reduceat(values, cuts, axis=0))
    return signature


def band_keys(signature: np.ndarray, settings: MinHashSettings) -> np.ndarray:
    """(items, bands) uint64 band keys of ``signature`` (see the module's docstring)."""
    rows = signature.reshape(len(signature), settings.bands, settings.rows).astype(np.uint64)
    key = np.zeros(rows.shape[:2], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for r in range(settings.rows):
            key = mix64(key * _GOLDEN + rows[:, :, r] + np.uint64(r + 1))
        return mix64(key + np.arange(1, settings.bands + 1, dtype=np.uint64)[None, :] * _M1)


def chunk_band_keys(
    src: Sequence[str], tgt: Sequence[str] | None, sides: str, settings: MinHashSettings
) -> tuple[np.ndarray, np.ndarray]:
    """(items, bands) band keys of a chunk, and which items have shingles (the others take no part)."""
    hashes, items = item_shingles(src, tgt, sides, settings.ngram)
    has = np.zeros(len(src), dtype=bool)
    has[items] = True
    return band_keys(signatures(hashes, items, len(src), settings), settings), has


__all__ = ["MinHashSettings", "band_keys", "chunk_band_keys", "fmix32", "item_shingles", "mix64", "shingle_hashes",
           "signatures", "words_of"]
