"""Section 2 of the report: per split and language, what the stored items look like.

Lengths come from the index arrays only (``sizes``: tokens per item, ``</s>`` included), so they
cost O(items) however many tokens there are. Token frequencies read tokens: a seeded sample of
whole items, at most ``budget`` tokens per store (every token when the store is smaller, and then
the counts are exact). The per-language counts the pipeline recorded (sentences, tokens, ``<unk>``)
are copied from the manifest's summary and checked against the stores.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.report.layout import DataDir, Part
from tokenmill.store.manifest import file_checksum
from tokenmill.store.meaning import vocabulary_symbols
from tokenmill.store.reader import IndexedDataset

PERCENTILES = (50, 90, 95, 99, 99.9)
HISTOGRAM_BINS = 80
JOINT_BINS = 60
JOINT_QUANTILE = 99.5
OFF_DIAGONAL_RATIO = 3.0
TOP_TOKENS = 15


def length_summary(sizes: np.ndarray) -> dict[str, Any]:
    """Count, min, max, mean and :data:`PERCENTILES` of item lengths."""
    if not len(sizes):
        return {"count": 0, "min": 0, "max": 0, "mean": 0.0, "percentiles": {str(q): 0 for q in PERCENTILES}}
    values = np.percentile(sizes, PERCENTILES, method="lower")
    return {
        "count": len(sizes),
        "min": int(sizes.min()),
        "max": int(sizes.max()),
        "mean": float(sizes.mean(dtype=np.float64)),
        "percentiles": {str(q): int(v) for q, v in zip(PERCENTILES, values, strict=True)},
    }


def bin_width(largest: int, bins: int) -> int:
    """Integer bin width so that lengths 0..largest fit in at most ``bins`` bins."""
    return max(1, -(-(int(largest) + 1) // bins))


def length_histogram(sizes: np.ndarray, bins: int = HISTOGRAM_BINS) -> dict[str, Any]:
    """Items per length bin ``[k*width, (k+1)*width)``, from length 0 to the longest item."""
    largest = int(sizes.max()) if len(sizes) else 0
    width = bin_width(largest, bins)
    counts = np.bincount(np.asarray(sizes, dtype=np.int64) // width, minlength=largest // width + 1)
    return {"width": width, "edges": (np.arange(len(counts) + 1) * width).tolist(), "counts": counts.tolist()}


def joint_histogram(src: np.ndarray, tgt: np.ndarray, bins: int = JOINT_BINS) -> dict[str, Any]:
    """Pairs per (source length, target length) cell, both axes to the same limit (the
    :data:`JOINT_QUANTILE` percentile of either side), so the diagonal is where equal lengths lie;
    longer items are counted in the last row or column. ``counts[t][s]``: target bin t, source bin s."""
    if not len(src):
        return {"limit": 1, "width": 1, "bins": 1, "counts": [[0]], "clipped": 0, "off_diagonal": 0,
                "off_diagonal_share": 0.0, "correlation": None}
    limit = int(max(np.percentile(src, JOINT_QUANTILE), np.percentile(tgt, JOINT_QUANTILE), 1))
    width = bin_width(limit, bins)
    n = limit // width + 1
    s = np.minimum(np.asarray(src, dtype=np.int64) // width, n - 1)
    t = np.minimum(np.asarray(tgt, dtype=np.int64) // width, n - 1)
    counts = np.bincount(t * n + s, minlength=n * n).reshape(n, n)
    a, b = np.asarray(src, dtype=np.float64), np.asarray(tgt, dtype=np.float64)
    lo, hi = np.maximum(np.minimum(a, b), 1.0), np.maximum(a, b)
    off = int(np.count_nonzero(hi > OFF_DIAGONAL_RATIO * lo))
    correlation = float(np.corrcoef(a, b)[0, 1]) if len(a) > 1 and a.std() > 0 and b.std() > 0 else None
    return {
        "limit": limit, "width": width, "bins": n, "counts": counts.tolist(),
        "clipped": int(np.count_nonzero((src > limit) | (tgt > limit))),
        "off_diagonal": off, "off_diagonal_share": off / len(src), "correlation": correlation,
    }


def token_counts(
    stores: list[IndexedDataset], budget: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """Token frequencies of a seeded sample of whole items, about ``budget`` tokens over all the
    stores (in proportion to their tokens). Returns (the ids seen, ascending; their counts; tokens
    counted; exact) where ``exact`` means every token was counted. Sparse: memory follows the ids
    seen, never a vocabulary size the manifest declares or the largest id a damaged store holds."""
    total = sum(s.num_tokens for s in stores)
    ids, counts = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    counted = 0
    exact = total <= budget
    for store in stores:
        if not store.num_tokens:
            continue
        if exact:
            tokens = np.asarray(store.tokens)
        else:
            share = budget * store.num_tokens / total
            wanted = max(1, min(len(store), round(share * len(store) / store.num_tokens)))
            items = np.sort(rng.choice(len(store), size=wanted, replace=False))
            tokens = read_items(store, items)
        seen, found = count_ids(tokens)
        ids, where = np.unique(np.concatenate([ids, seen.astype(np.int64)]), return_inverse=True)
        counts = np.bincount(where, weights=np.concatenate([counts, found]), minlength=len(ids)).astype(np.int64)
        counted += len(tokens)
    return ids, counts, counted, exact


DENSE_COUNT_IDS = 1 << 16
"""Ids below this (every id of a 16-bit store) are counted by one ``bincount``, not a sort (see :func:`count_ids`)."""


def count_ids(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the ids in ``tokens``, ascending; how often each occurs), as ``np.unique(tokens, return_counts=True)``.
    A dense ``bincount`` where no id is negative and the largest is below :data:`DENSE_COUNT_IDS` or four times
    the number of tokens (its array is then no larger than the sample's, whatever id a damaged store holds);
    else the sort. The count of 2M sampled tokens of a 16-bit store: ~5 ms instead of ~0.1 s."""
    if not len(tokens):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    low, high = int(tokens.min()), int(tokens.max())
    if low < 0 or high >= max(DENSE_COUNT_IDS, 4 * len(tokens)):
        seen, found = np.unique(tokens, return_counts=True)
        return seen.astype(np.int64), found.astype(np.int64)
    dense = np.bincount(tokens.astype(np.intp, copy=False))
    seen = np.flatnonzero(dense)
    return seen.astype(np.int64), dense[seen].astype(np.int64)


READ_GAP_BYTES = 64 << 10  # sampled items closer than this are read in one call, the bytes between them dropped
READ_SPAN_BYTES = 4 << 20  # the most one such call reads: the memory a read holds beyond the tokens kept


def read_items(store: IndexedDataset, items: np.ndarray) -> np.ndarray:
    """The tokens of ``items`` (ascending), flat, read with plain reads: a gather through the store's memory map
    faults in the kernel's read-ahead around each of thousands of items spread over the file, and those pages
    count in the process's resident memory (+370 MB for a 1 GB corpus's 412 MB store). Items close together
    are read in one call of at most :data:`READ_SPAN_BYTES` (a dense sample of a small store is a few reads,
    not one system call per item: 65k items took ~1 s of CPU)."""
    width = store.dtype.itemsize
    starts = store.pointers[items].astype(np.int64)
    ends = starts + store.sizes[items].astype(np.int64) * width
    parts = []
    with open(store.bin_file, "rb") as handle:
        for first, last in _spans(starts, ends):
            base = int(starts[first])
            data = os.pread(handle.fileno(), int(ends[last - 1]) - base, base)
            span = np.frombuffer(data, dtype=store.dtype)
            marks = np.bincount((starts[first:last] - base) // width, minlength=len(span) + 1)
            marks -= np.bincount((ends[first:last] - base) // width, minlength=len(span) + 1)
            parts.append(span[np.cumsum(marks[:-1]) > 0])  # the items' own tokens, in order
    return np.concatenate(parts) if parts else np.zeros(0, dtype=store.dtype)


def _spans(starts: np.ndarray, ends: np.ndarray) -> list[tuple[int, int]]:
    """Runs [first, last) of the (ascending) items read in one call: a new run where the gap to the previous
    item exceeds :data:`READ_GAP_BYTES` or the run would pass :data:`READ_SPAN_BYTES`."""
    if not len(starts):
        return []
    breaks = np.flatnonzero(starts[1:] - ends[:-1] > READ_GAP_BYTES) + 1
    spans = []
    for first, last in zip([0, *breaks.tolist()], [*breaks.tolist(), len(starts)], strict=True):
        while first < last:  # cut a long run where it passes the span limit (one item at least)
            stop = int(np.searchsorted(ends[first:last], starts[first] + READ_SPAN_BYTES, side="right")) + first
            stop = max(first + 1, stop)
            spans.append((first, stop))
            first = stop
    return spans


def display_symbol(symbol: str) -> str:
    """A vocabulary symbol as text: SentencePiece's word-start mark becomes a space."""
    return symbol.replace("\u2581", " ")


class Vocabularies:
    """Symbols of the vocabulary files the manifest names, loaded once per distinct content (a joined
    dictionary is written once per language, the same bytes: it is parsed once)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._loaded: dict[tuple[str, str], list[str] | None] = {}
        self._by_content: dict[tuple[str, str], list[str] | None] = {}

    def symbols(self, record: dict[str, Any]) -> list[str] | None:
        """Symbols of a store's vocabulary (its manifest record), or None when it cannot be read."""
        vocab, kind = record.get("vocab"), record.get("vocab_kind")
        if not isinstance(vocab, str) or not isinstance(kind, str):
            return None
        key = (vocab, kind)
        if key not in self._loaded:
            path = self.root / vocab
            try:
                content = (kind, file_checksum(path))  # the file as it is now, not as the manifest says
                if content not in self._by_content:
                    self._by_content[content] = vocabulary_symbols(path, kind)
                self._loaded[key] = self._by_content[content]
            except Exception:  # a report shows what it can; verify names broken vocabularies
                self._loaded[key] = None
        return self._loaded[key]


def side_numbers(
    stores: list[IndexedDataset],
    symbols: list[str] | None,
    vocab_size: int,
    skip_ids: set[int],
    budget: int,
    rng: np.random.Generator,
) -> tuple[dict[str, Any], np.ndarray]:
    """One language of one part: counts, lengths, histogram, top tokens and unused vocabulary."""
    sizes = np.concatenate([s.sizes for s in stores]) if stores else np.zeros(0, np.int32)
    ids, counts, counted, exact = token_counts(stores, budget, rng)
    order = np.argsort(-counts, kind="stable")  # ids ascend: ties in id order
    top = []
    for token_id, count in zip(ids[order].tolist(), counts[order].tolist(), strict=True):
        if token_id in skip_ids:
            continue
        symbol = symbols[token_id] if symbols is not None and 0 <= token_id < len(symbols) else str(token_id)
        top.append({"id": token_id, "symbol": symbol, "text": display_symbol(symbol),
                    "count": count, "share": float(count / max(counted, 1))})
        if len(top) == TOP_TOKENS:
            break
    size = vocab_size or max(int(ids[-1]) + 1 if len(ids) else 0, 1)
    unused = size - int(np.count_nonzero((ids >= 0) & (ids < size)))
    return {
        "items": len(sizes),
        "tokens": int(sizes.sum(dtype=np.int64)),
        "lengths": length_summary(sizes),
        "histogram": length_histogram(sizes),
        "top_tokens": top,
        "sampled_tokens": counted,
        "sample_exact": exact,
        "vocab_size": size,
        "unused": unused,
        "unused_share": unused / size if size else 0.0,
    }, sizes


def _listed_total(values: list[Any]) -> int | str:
    """The sum of counts a manifest lists, or the values as written when one is not an integer (a damaged
    manifest: the report shows the mismatch instead of failing on it)."""
    if all(type(value) is int for value in values):
        return sum(values)
    return " + ".join(map(repr, values))


def summary_langs(data: DataDir, part: Part) -> dict[str, Any]:
    """The per-language counts ``prepare`` recorded for this part (empty when there are none)."""
    summary = data.manifest.summary
    if part.direction and isinstance(summary.get("directions"), dict):
        summary = summary["directions"].get(part.direction) or {}
    split = (summary.get("splits") or {}).get(part.split) or {}
    return split.get("langs") or {}


def part_numbers(
    data: DataDir, part: Part, vocabularies: Vocabularies, budget: int, seed: int
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Every number of section 2 for one part; also the length arrays of its sides (for later sections)."""
    rng = np.random.default_rng(seed)
    special = _special_ids(data)
    recorded = summary_langs(data, part)
    sides: dict[str, Any] = {}
    lengths: dict[str, np.ndarray] = {}
    checks: list[str] = []
    for lang in part.langs:
        numbers, sizes = _side(data, part.stores.get(lang, []), vocabularies, special, budget, rng)
        checks += _listed_checks(data, lang, numbers)
        info = recorded.get(lang) if isinstance(recorded, dict) else None
        if isinstance(info, dict):
            numbers["recorded"] = {k: info[k] for k in ("sentences", "tokens", "unk", "unk_percent", "shards")
                                   if k in info}
            checks += _recorded_checks(lang, numbers, info)
        sides[lang] = numbers
        lengths[lang] = sizes
    out: dict[str, Any] = {
        "key": f"{part.direction}/{part.split}" if data.kind == "multilingual" else part.split,
        "split": part.split,
        "direction": part.direction,
        "langs": part.langs,
        "shards": [s or "." for s in part.shards],
        "items": sides[part.langs[0]]["items"] if part.langs else 0,
        "sides": sides,
        "checks": checks,
    }
    if part.paired and all(lang in lengths for lang in part.langs):
        src, tgt = (lengths[lang] for lang in part.langs)
        if len(src) == len(tgt):
            out["joint"] = joint_histogram(src, tgt)
        else:
            checks.append(f"sides differ in length: {len(src)} vs {len(tgt)} items")
    return out, lengths


def _special_ids(data: DataDir) -> dict[str, Any]:
    """The special ids the manifest records (its vocab record, else the summary's)."""
    special = data.manifest.vocab.get("special") or {}
    if not special and isinstance(data.manifest.summary.get("vocab"), dict):
        special = data.manifest.summary["vocab"].get("special") or {}
    return special


def _side(
    data: DataDir, prefixes: list[str], vocabularies: Vocabularies, special: dict[str, Any], budget: int,
    rng: np.random.Generator,
) -> tuple[dict[str, Any], np.ndarray]:
    """The numbers of one side (its stores ``prefixes``) and its lengths; ``</s>`` left out of the token counts."""
    stores = [IndexedDataset(data.root / p, check_pointers=False) for p in prefixes]
    record = data.store(prefixes[0]) if prefixes else {}
    symbols = vocabularies.symbols(record)
    declared = record.get("vocab_size")  # the manifest's word, whatever its type (verify checks it)
    vocab_size = declared if type(declared) is int and declared > 0 else (len(symbols) if symbols else 0)
    eos = record.get("eos", special.get("eos"))
    skip = {int(eos)} if isinstance(eos, int) else set()
    numbers, sizes = side_numbers(stores, symbols, vocab_size, skip, budget, rng)
    numbers["stores"] = prefixes
    numbers["eos"] = eos
    return numbers, sizes


def _listed_checks(data: DataDir, lang: str, numbers: dict[str, Any]) -> list[str]:
    """A mismatch between what the side's stores hold and what the manifest lists for them."""
    prefixes = numbers["stores"]
    listed_items = _listed_total([data.store(p).get("items", 0) for p in prefixes])
    listed_tokens = _listed_total([data.store(p).get("tokens", 0) for p in prefixes])
    if (listed_items, listed_tokens) != (numbers["items"], numbers["tokens"]):
        return [f"{lang}: stores hold {numbers['items']} items / {numbers['tokens']} tokens, manifest "
                f"lists {listed_items} / {listed_tokens}"]
    return []


def _recorded_checks(lang: str, numbers: dict[str, Any], info: dict[str, Any]) -> list[str]:
    """Mismatches between what the side's stores hold and what prepare's summary recorded."""
    checks = []
    if info.get("sentences") is not None and info["sentences"] != numbers["items"]:
        checks.append(f"{lang}: {numbers['items']} items stored, summary says {info['sentences']} sentences")
    if info.get("tokens") is not None and info["tokens"] != numbers["tokens"]:
        checks.append(f"{lang}: {numbers['tokens']} tokens stored, summary says {info['tokens']}")
    return checks


__all__ = [
    "PERCENTILES",
    "Vocabularies",
    "count_ids",
    "display_symbol",
    "joint_histogram",
    "length_histogram",
    "length_summary",
    "part_numbers",
    "side_numbers",
    "summary_langs",
    "token_counts",
]
