"""tiktoken ranks from a byte-level BPE ``tokenizer.json`` (GPT-2 style, or one ``--tokenizer hf`` trained).

A byte-level BPE spells every byte with GPT-2's printable alphabet (a space is ``Ġ``) and numbers its
merged tokens in merge order, which is what a tiktoken rank is: the merge that makes the lower-ranked
token happens first. So the ranks are the vocabulary's tokens turned back into bytes, in id order,
special (added) tokens left out; they become the special tokens of the encoding instead. This lets a
tokenizer trained with ``tokenizers`` be used through tiktoken (or checked against it) with a file
that never needs a download.

A vocabulary whose ids do not follow its merges (a merge producing a token numbered before one of its
parts) would make tiktoken merge in another order than the BPE: refused with one ``error:`` line.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

from tokenmill.errors import ConfigError
from tokenmill.fsutil import atomic_write
from tokenmill.vocab.tiktoken_backend import byte_alphabet


def ranks_from_byte_level_bpe(path: str | os.PathLike[str]) -> dict[bytes, int]:
    """Token bytes -> rank of the byte-level BPE in the ``tokenizer.json`` at ``path`` (see the module)."""
    spec = _read_spec(path)
    model = spec.get("model") if isinstance(spec.get("model"), dict) else {}
    vocab = model.get("vocab")
    if model.get("type") != "BPE" or not isinstance(vocab, dict) or not all(type(v) is int for v in vocab.values()):
        raise ConfigError(f"{path}: not a BPE tokenizer.json (model type {model.get('type')!r}); tiktoken ranks "
                          "come from a byte-level BPE such as GPT-2's or one `tokenmill prepare --tokenizer hf` trains")
    byte_of = {char: value for value, char in enumerate(byte_alphabet())}
    added = spec.get("added_tokens") if isinstance(spec.get("added_tokens"), list) else []
    specials = {token.get("content") for token in added if isinstance(token, dict)}
    ranks: dict[bytes, int] = {}
    for token, _ in sorted(vocab.items(), key=lambda item: item[1]):
        if token in specials:
            continue
        try:
            ranks[bytes(byte_of[char] for char in token)] = len(ranks)
        except KeyError:
            raise ConfigError(
                f"{path}: token {token!r} is not spelt in GPT-2's byte alphabet: this BPE is not byte-level, "
                "so it has no tiktoken ranks"
            ) from None
    missing = [value for value in range(256) if bytes([value]) not in ranks]
    if missing:
        raise ConfigError(f"{path}: {len(missing)} of the 256 single bytes are not in the vocabulary "
                          f"(byte {missing[0]} first): tiktoken needs all of them")
    merges = model.get("merges") or []
    _check_merge_order(path, merges if isinstance(merges, list) else [merges], ranks, byte_of)
    return ranks


def write_ranks(ranks: dict[bytes, int], path: str | os.PathLike[str]) -> Path:
    """Write ``ranks`` as a ``.tiktoken`` file (``base64(token) rank`` a line, rank order), atomically."""
    lines = (base64.b64encode(token) + b" %d\n" % rank for token, rank in sorted(ranks.items(), key=lambda i: i[1]))
    with atomic_write(path, "wb") as handle:
        handle.writelines(lines)
    return Path(path)


def _read_spec(path: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        spec = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:  # RecursionError: nested too deep
        raise ConfigError(f"{path}: not a tokenizer.json ({error})") from None
    if not isinstance(spec, dict):
        raise ConfigError(f"{path}: not a tokenizer.json (a JSON object is expected)")
    return spec


def _check_merge_order(
    path: str | os.PathLike[str], merges: list[Any], ranks: dict[bytes, int], byte_of: dict[str, int]
) -> None:
    """The merges' results must be numbered in merge order, after their parts (see the module docstring)."""
    def rank_of(token: str) -> int | None:
        try:
            return ranks.get(bytes(byte_of[char] for char in token))
        except KeyError:  # a character outside the byte alphabet: no such token
            return None

    last = -1
    for number, merge in enumerate(merges, start=1):
        pair = merge.split(" ") if isinstance(merge, str) else merge
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(part, str) for part in pair):
            raise ConfigError(f"{path}: merge {number} ({merge!r}) is not two tokens (\"left right\" or a pair)")
        left, right = pair
        made, parts = rank_of(left + right), [rank_of(left), rank_of(right)]
        if made is None or None in parts or made <= max(parts) or made <= last:  # type: ignore[type-var]
            raise ConfigError(
                f"{path}: merge {number} ({left!r} + {right!r}) makes a token not numbered after its parts and the "
                "merges before it; tiktoken would merge in another order than this BPE, so it has no tiktoken ranks"
            )
        last = made
