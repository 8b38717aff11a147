"""The reads the survive tests make, each through a public entry point, run inside the sandbox child.

Each reader returns ``{"violations": [...], ...}``: what a read that *succeeded* got wrong (ids its bytes do
not say, ids outside the vocabulary, a tokenizer that does not round-trip). Exceptions are not caught
here: the sandbox reports them, and the tests accept only :class:`tokenmill.errors.TokenmillError`.

The token-store oracle (:func:`reference_items`) reads the ``.idx``/``.bin`` bytes with ``struct`` and
``numpy`` alone, from the published layouts, not through tokenmill's index code.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import struct
import time
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

import tokenmill
from tests.survive.seeds import SAMPLE_TEXT, state_iterator
from tokenmill.cli import main as cli_main
from tokenmill.data.pairs import PairDataset
from tokenmill.prepare import build_config, load_yaml
from tokenmill.store import IndexedDataset
from tokenmill.store.manifest import verify_directory
from tokenmill.vocab.tiktoken_ranks import ranks_from_byte_level_bpe
from tokenmill.vocab.tokenizer import load_saved, load_tokenizer

_DTYPES = {"fairseq": {1: "u1", 2: "i1", 3: "<i2", 4: "<i4", 5: "<i8", 6: "<f8", 7: "<f8", 8: "<u2", 9: "<u4",
                       10: "<u8"},
           "megatron": {1: "u1", 2: "i1", 3: "<i2", 4: "<i4", 5: "<i8", 6: "<f8", 7: "<f4", 8: "<u2"}}


def reference_items(prefix: str) -> list[np.ndarray] | None:
    """Every item of the store at ``prefix`` as its bytes say (None where they describe no store)."""
    idx, data = Path(prefix + ".idx").read_bytes(), Path(prefix + ".bin").read_bytes()
    if len(idx) < 26 or idx[:9] != b"MMIDIDX\0\0" or struct.unpack_from("<Q", idx, 9)[0] != 1:
        return None
    code, count = idx[17], struct.unpack_from("<Q", idx, 18)[0]
    if len(idx) == 26 + 12 * count:
        layout, header = "fairseq", 26
    elif len(idx) >= 34 and len(idx) == 34 + 12 * count + 8 * struct.unpack_from("<Q", idx, 26)[0]:
        layout, header = "megatron", 34
    else:
        return None
    if code not in _DTYPES[layout]:
        return None
    dtype = np.dtype(_DTYPES[layout][code])
    sizes = np.frombuffer(idx, "<i4", count, header)
    pointers = np.frombuffer(idx, "<i8", count, header + 4 * count)
    items = []
    for size, pointer in zip(sizes.tolist(), pointers.tolist(), strict=True):
        end = pointer + size * dtype.itemsize
        if size < 0 or pointer < 0 or end > len(data) or pointer % dtype.itemsize:
            return None
        items.append(np.frombuffer(data, dtype, size, pointer))
    return items


def _compare_store(store: IndexedDataset) -> list[str]:
    """What an opened store serves that its bytes do not say."""
    expected = reference_items(store.prefix)
    if expected is None:
        return [f"{store.prefix} opened, but its bytes describe no store"]
    problems = []
    if len(store) != len(expected):
        problems.append(f"{len(store)} items served, the bytes hold {len(expected)}")
        return problems
    served = [np.asarray(store[i]) for i in range(len(store))]
    wrong = [i for i, (a, b) in enumerate(zip(served, expected, strict=True)) if not np.array_equal(a, b)]
    if wrong:
        problems.append(f"items {wrong[:5]} differ from the bytes")
    if len(store):
        flat, offsets = store.gather(np.arange(len(store)))
        joined = np.concatenate(expected)
        if not np.array_equal(flat, joined) or offsets[-1] != len(joined):
            problems.append("gather differs from the bytes")
    return problems


def _digest(arrays: list[np.ndarray]) -> str:
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(np.asarray(array, np.int64).tobytes() + b"|")
    return digest.hexdigest()


def read_store(prefix: str) -> dict[str, Any]:
    """``tokenmill.open`` of one store by its prefix (fairseq or Megatron layout)."""
    store = tokenmill.open(prefix)
    return {"violations": _compare_store(store), "items": len(store)}


def read_gpt(prefix: str) -> dict[str, Any]:
    """A Megatron store through ``GPTDataset`` and its batches (samples within the store's tokens)."""
    store = tokenmill.open(prefix)
    problems = _compare_store(store)
    dataset = tokenmill.GPTDataset(store, tokenmill.GPTDatasetConfig(seq_length=8, num_epochs=1), cache=False)
    config = tokenmill.GPTBatchConfig(global_batch_size=2, micro_batch_size=2)
    known = set(np.unique(store.tokens).tolist()) | {0}
    for batch in islice(tokenmill.batches(dataset, config), 20):
        tokens = np.asarray(batch["tokens"] if isinstance(batch, dict) else batch[0])
        if not set(np.unique(tokens).tolist()) <= known:
            problems.append("a GPT sample holds ids the store does not")
            break
    return {"violations": problems}


def open_directory(directory: str, seed_digest: str, data_changed: bool) -> dict[str, Any]:
    """``tokenmill.open`` of a prepared directory, all its items and an epoch of batches; an open that serves
    other ids than the seed's after a data file changed must fail ``verify``."""
    dataset = tokenmill.open(directory)
    problems: list[str] = []
    if isinstance(dataset, PairDataset):
        served = []
        for store in (dataset.src, dataset.tgt):
            if isinstance(store, IndexedDataset):
                problems += _compare_store(store)
        for i in range(len(dataset)):
            item = dataset[i]
            served += [item["source"], item["target"]]
        for batch in islice(tokenmill.batches(dataset, tokenmill.BatchConfig(max_tokens=64)), 200):
            del batch
    else:
        served = [np.asarray(dataset[i]) for i in range(len(dataset))]
    changed = _digest(served) != seed_digest
    if changed and data_changed and not verify_directory(directory):
        problems.append("serves other ids than the seed, and verify finds nothing wrong")
    return {"violations": problems, "served_changed": changed}


def seed_digest(directory: str) -> dict[str, Any]:
    """What :func:`open_directory` compares against (computed on the unmutated seed)."""
    dataset = tokenmill.open(directory)
    if isinstance(dataset, PairDataset):
        served = [array for i in range(len(dataset)) for array in (dataset[i]["source"], dataset[i]["target"])]
    else:
        served = [np.asarray(dataset[i]) for i in range(len(dataset))]
    return {"violations": [], "digest": _digest(served)}


def verify(directory: str) -> dict[str, Any]:
    """``verify_directory``: a list of problems, whatever the directory holds."""
    problems = verify_directory(directory)
    return {"violations": [] if isinstance(problems, list) else ["verify did not return a list"],
            "problems": len(problems)}


def cli(args: list[str]) -> dict[str, Any]:
    """The ``tokenmill`` command line, in process: exit status 2 comes with an ``error:`` line, any other
    failure status with what failed on stderr (``verify``'s mismatches), never a traceback."""
    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli_main(args)
        except SystemExit as done:
            code = done.code
    text = err.getvalue()
    problems = []
    if code == 2 and not any(line.startswith("error: ") for line in text.splitlines()):
        problems.append(f"exit status 2 without an error: line ({text[-300:]!r})")
    if code not in (0, None, 2) and not text.strip():
        problems.append(f"exit status {code} with nothing on stderr")
    if "Traceback" in text:
        problems.append("a traceback on stderr")
    return {"violations": problems, "code": code, "stderr": text[-2000:]}


def _check_tokenizer(tokenizer: Any, backend: str) -> list[str]:
    problems = []
    size = tokenizer.vocab_size
    lines = [SAMPLE_TEXT, "", "x  y", "\u00e9\u00e9 9"]
    flat, lengths = tokenizer.encode_batch(lines, num_threads=1)
    if int(np.sum(lengths)) != len(flat) or len(lengths) != len(lines):
        problems.append("encode_batch lengths do not add up")
    if len(flat) and not (0 <= int(np.min(flat)) and int(np.max(flat)) < size):
        problems.append(f"ids outside 0..{size - 1}")
    bad_specials = {k: v for k, v in tokenizer.special_ids.items() if not 0 <= v < size}
    if bad_specials:
        problems.append(f"special ids outside the vocabulary: {bad_specials}")
    tokenizer.decode(flat[: lengths[0]])
    for token_id in set(flat.tolist()):
        tokenizer.id_to_token(token_id)
    if backend == "t2t-subword":
        start = 0
        for line, length in zip(lines, lengths.tolist(), strict=True):
            if tokenizer.decode(flat[start : start + length]) != line:
                problems.append(f"T2T does not round-trip {line!r}")
            start += length
    return problems


def tokenizer(backend: str, path: str) -> dict[str, Any]:
    """``load_tokenizer`` of a model file, then an encode, a decode and the id lookups."""
    loaded = load_tokenizer(backend, path)
    return {"violations": _check_tokenizer(loaded, backend), "vocab_size": loaded.vocab_size}


def saved_tokenizer(directory: str) -> dict[str, Any]:
    """``load_saved``: the tokenizer a directory's ``tokenmill-tokenizer.json`` names."""
    loaded = load_saved(directory)
    return {"violations": _check_tokenizer(loaded, loaded.name)}


def dictionary(path: str) -> dict[str, Any]:
    """A ``dict.txt`` through the whitespace tokenizer: its symbols are the file's tokens, in order."""
    loaded = load_tokenizer("whitespace", path)
    symbols = loaded.dictionary.symbols
    text = Path(path).read_bytes().decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    lines = [line for line in text.split("\n") if line.strip()]
    problems = _check_tokenizer(loaded, "whitespace")
    if loaded.dictionary.format == "fairseq":
        tokens = [line.removesuffix(" #fairseq:overwrite").rpartition(" ")[0] for line in lines]
        if symbols[4:] != tokens:
            problems.append("the symbols are not the file's tokens in order")
    elif not set(symbols[4:]) <= {line.split()[0] if line.split() else line for line in lines} | set(lines):
        problems.append("symbols the file does not hold")
    return {"violations": problems, "size": len(symbols)}


def bpe_ranks(path: str) -> dict[str, Any]:
    """``ranks_from_byte_level_bpe``: ranks 0..n-1, each once."""
    ranks = ranks_from_byte_level_bpe(path)
    ok = sorted(ranks.values()) == list(range(len(ranks)))
    return {"violations": [] if ok else ["ranks are not 0..n-1"], "ranks": len(ranks)}


def config(path: str) -> dict[str, Any]:
    """``load_yaml`` then ``build_config`` (what ``prepare -c`` and ``tokenmill.prepare(path)`` do)."""
    built = build_config(load_yaml(path), config_file=path)
    json.dumps(built.to_dict(), default=str)
    return {"violations": []}


def resume(pair: str, state: Any) -> dict[str, Any]:
    """``load_state_dict`` of a batch iterator over the seed pair directory, then batches from there."""
    iterator = state_iterator(Path(pair))
    iterator.load_state_dict(state)
    for batch in islice(iterator, 100):
        del batch
    json.dumps(iterator.state_dict())
    return {"violations": []}


def misbehave(how: str) -> dict[str, Any]:
    """What the sandbox must catch, for its own test: a native crash, a hang, a huge allocation."""
    if how == "crash":
        os.abort()
    if how == "hang":
        time.sleep(3600)
    return {"violations": [], "size": len(np.ones(1 << 29, np.uint8))}


READERS: dict[str, Callable[..., dict[str, Any]]] = {
    "misbehave": misbehave,
    "store": read_store, "gpt": read_gpt, "open": open_directory, "seed_digest": seed_digest, "verify": verify,
    "cli": cli, "tokenizer": tokenizer, "saved_tokenizer": saved_tokenizer, "dictionary": dictionary,
    "bpe_ranks": bpe_ranks, "config": config, "resume": resume,
}
