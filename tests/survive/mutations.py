"""Hypothesis strategies that break a valid file the ways real files break, and the ways a hostile one would.

Every strategy draws an :class:`Edit`: a function of the seed's bytes (or decoded value) with a readable
``repr``, so a failing example names the mutation. Kinds:

- bytes of any file: truncation, bit flips, overwrites, insertions, deletions, an empty file;
- a ``.idx``: one header field or one entry of sizes, pointers or document indices set to a boundary
  value (wrong counts, huge declared lengths, negative sizes);
- a JSON or YAML value (``manifest.json``, ``tokenizer.json``, a config, a resume state): one node replaced
  by a value of the wrong type, a huge number, a deep nest, or deleted;
- a text file of lines (``dict.txt``, ``.tiktoken``, ``vocab.subwords``): a line's count made huge, negative
  or not a number, a line repeated, dropped or garbled.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from hypothesis import strategies as st

BOUNDARY_INTS = (0, 1, 2, 3, -1, -2, 7, 255, 2**15, 2**31 - 1, -(2**31), 2**32, 2**40, 2**62, 2**63 - 1, -(2**63),
                 2**64 - 1, 10**30)
"""Values that break counts and lengths: off by one, sign, width overflow, larger than any file."""
WRONG_VALUES = (None, True, False, 0, -1, 1.5, float("inf"), 2**63, 10**30, "", "x", "../../../etc/passwd",
                "\u00e9\x00", [], [1, 2], [[[]]], {}, {"a": 1}, {"format": "tokenmill"})
"""Values of the wrong type (or right type, wrong meaning) for any JSON/YAML node."""


@dataclass(frozen=True)
class Edit:
    """One mutation: ``apply`` maps the seed (bytes or a decoded value) to the mutated one."""

    name: str
    apply: Callable[[Any], Any]

    def __repr__(self) -> str:
        return self.name


def _truncate(at: int) -> Edit:
    return Edit(f"truncate({at})", lambda data: data[:at])


def _flips(positions: list[tuple[int, int]]) -> Edit:
    def apply(data: bytes) -> bytes:
        raw = bytearray(data)
        for position, bit in positions:
            if raw:
                raw[position % len(raw)] ^= 1 << bit
        return bytes(raw)

    return Edit(f"flip{positions}", apply)


def _splice(start: int, stop: int, insert: bytes) -> Edit:
    return Edit(f"splice({start}:{stop} <- {insert[:40]!r}{'...' if len(insert) > 40 else ''})",
                lambda data: data[:start] + insert + data[stop:])


INSERTS = st.sampled_from([b"\0", b"\xff\xfe", b"\n", b"\r", b"\t", b" ", b"\xc3", b"\x80" * 3, b"{", b"[" * 5000,
                           b"-", b"9" * 30]) | st.binary(min_size=1, max_size=16)


def byte_edits(size: int) -> st.SearchStrategy[Edit]:
    """Any byte-level damage to a file of ``size`` bytes."""
    position = st.integers(0, max(size, 0))
    return st.one_of(
        position.map(_truncate),
        st.lists(st.tuples(st.integers(0, max(size - 1, 0)), st.integers(0, 7)), min_size=1, max_size=4).map(_flips),
        st.builds(lambda a, b, insert: _splice(min(a, b), max(a, b), insert), position,
                  position, INSERTS | st.just(b"")),
        st.just(Edit("empty", lambda data: b"")),
    )


# ----------------------------------------------------------------------------- .idx fields
def _put(offset: int, form: str, value: int) -> Edit:
    bits = struct.calcsize(form) * 8
    value &= (1 << bits) - 1  # any integer, as the field's width stores it
    unsigned = form.replace("q", "Q").replace("i", "I").replace("b", "B")

    def apply(data: bytes) -> bytes:
        raw = bytearray(data)
        if offset + struct.calcsize(unsigned) <= len(raw):
            struct.pack_into(unsigned, raw, offset, value)
        return bytes(raw)

    return Edit(f"idx[{offset}]:{form}={value}", apply)


def _recount(items: int | None, docs: int | None) -> Edit:
    """The index rewritten whole, self-consistent in size, for another item (or document) count: the arrays cut
    short or padded (zero sizes, the last pointer repeated; document indices ending at the new count)."""
    def apply(data: bytes) -> bytes:
        count = struct.unpack_from("<Q", data, 18)[0]
        megatron = len(data) != 26 + 12 * count
        header = 34 if megatron else 26
        sizes = list(struct.unpack_from(f"<{count}i", data, header))
        pointers = list(struct.unpack_from(f"<{count}q", data, header + 4 * count))
        n = count if items is None else items
        last = pointers[-1] if pointers else 0
        sizes, pointers = (sizes + [0] * n)[:n], (pointers + [last] * n)[:n]
        head = bytearray(data[:header])
        struct.pack_into("<Q", head, 18, n)
        body = struct.pack(f"<{n}i{n}q", *sizes, *pointers)
        if not megatron:
            return bytes(head) + body
        old_docs = struct.unpack_from("<Q", data, 26)[0]
        doc_idx = list(struct.unpack_from(f"<{old_docs}q", data, header + 12 * count))
        d = old_docs if docs is None else docs
        doc_idx = (doc_idx + [n] * d)[:d]
        struct.pack_into("<Q", head, 26, d)
        return bytes(head) + body + struct.pack(f"<{d}q", *doc_idx)

    return Edit(f"recount(items={items}, documents={docs})", apply)


def idx_edits(data: bytes) -> st.SearchStrategy[Edit]:
    """One header field or array entry of a (valid) ``.idx`` set to a boundary value, or the whole index
    rewritten for another count (a consistent size, so only the counts and the ``.bin`` can tell)."""
    count = struct.unpack_from("<Q", data, 18)[0]
    megatron = len(data) != 26 + 12 * count
    header = 34 if megatron else 26
    docs = struct.unpack_from("<Q", data, 26)[0] if megatron else 0
    fields = [(9, "<Q"), (17, "<B"), (18, "<Q")] + ([(26, "<Q")] if megatron else [])
    places = st.sampled_from(fields)
    if count:
        places |= st.integers(0, count - 1).map(lambda i: (header + 4 * i, "<i"))
        places |= st.integers(0, count - 1).map(lambda i: (header + 4 * count + 8 * i, "<q"))
    if docs:
        places |= st.integers(0, docs - 1).map(lambda i: (header + 12 * count + 8 * i, "<q"))
    values = st.sampled_from(BOUNDARY_INTS) | st.integers(-4 * count - 8, 4 * count + 8)
    recounts = st.builds(_recount, st.integers(0, count + 3) | st.none(),
                         (st.integers(0, docs + 3) | st.none()) if megatron else st.none())
    return st.builds(lambda place, value: _put(*place, value), places, values) | recounts


# ----------------------------------------------------------------------------- JSON / YAML values
def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value[:8]):
            found += _paths(child, (*prefix, index))
    return found


def _replace(value: Any, path: tuple, new: Any, delete: bool) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        copy = dict(value)
        if delete and not rest:
            copy.pop(head, None)
        else:
            copy[head] = _replace(value[head], rest, new, delete)
        return copy
    copy = list(value)
    if delete and not rest:
        del copy[head]
    else:
        copy[head] = _replace(value[head], rest, new, delete)
    return copy


def _deep(depth: int) -> Any:
    nested: Any = 0
    for _ in range(depth):
        nested = [nested]
    return nested


def value_edits(seed: Any) -> st.SearchStrategy[Edit]:
    """One node of a decoded JSON/YAML value replaced by a wrong value, or deleted."""
    paths = _paths(seed)
    new_values = st.sampled_from(WRONG_VALUES) | st.sampled_from(BOUNDARY_INTS) | st.just(_deep(50))
    replace = st.builds(lambda path, new: Edit(f"set{list(path)}={new!r:.60}",
                                               lambda value: _replace(value, path, new, False)),
                        st.sampled_from(paths), new_values)
    deletable = [path for path in paths if path]
    if not deletable:
        return replace
    delete = st.sampled_from(deletable).map(
        lambda path: Edit(f"delete{list(path)}", lambda value: _replace(value, path, None, True)))
    return replace | delete


def json_edits(data: bytes) -> st.SearchStrategy[Edit]:
    """A JSON file: a structural edit written back as JSON, byte damage, or a nest too deep to parse."""
    structural = value_edits(json.loads(data)).map(
        lambda edit: Edit(edit.name, lambda raw: json.dumps(edit.apply(json.loads(raw))).encode()))
    hostile = st.sampled_from([Edit("deep-json", lambda raw: b"[" * 200_000 + b"]" * 200_000),
                               Edit("json-nan", lambda raw: raw.replace(b"1", b"NaN", 1)),
                               Edit("json-huge-int", lambda raw: raw.replace(b"1", b"9" * 5000, 1))])
    return st.one_of(structural, structural, byte_edits(len(data)), hostile)


def yaml_edits(data: bytes) -> st.SearchStrategy[Edit]:
    """A YAML config: a structural edit, byte damage, or documents built to hurt a parser."""
    structural = value_edits(yaml.safe_load(data)).map(
        lambda edit: Edit(edit.name, lambda raw: yaml.safe_dump(edit.apply(yaml.safe_load(raw))).encode()))
    bomb = "a: &a [x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 8)}]\n" for i in range(8))
    hostile = st.sampled_from([
        Edit("yaml-alias-bomb", lambda raw: (bomb + "filters: *i\n").encode()),
        Edit("yaml-deep", lambda raw: b"a: " + b"[" * 100_000),
        Edit("yaml-python-tag", lambda raw: raw + b"\nworkers: !!python/object/apply:os.system ['true']\n"),
        Edit("yaml-duplicate-key", lambda raw: raw + b"\nsource_lang: fr\n"),
        Edit("yaml-non-string-key", lambda raw: raw + b"\n1: 2\n"),
        Edit("yaml-huge-int", lambda raw: raw + b"\nworkers: " + b"9" * 5000 + b"\n"),
    ])
    return st.one_of(structural, structural, byte_edits(len(data)), hostile)


# ----------------------------------------------------------------------------- text files of lines
LINE_VALUES = ("-1", "0", "99999999999999999999999999999999", "1.5", "x", "", " ", "1e9", "٣", "NaN")


def line_edits(data: bytes) -> st.SearchStrategy[Edit]:
    """A file of ``token value`` lines: one line's last field replaced, a line repeated, dropped, garbled."""
    lines = data.split(b"\n")
    count = max(len(lines) - 1, 1)
    index = st.integers(0, count - 1)

    def on_line(name: str, change: Callable[[list[bytes], int], list[bytes]]) -> Callable[[int], Edit]:
        return lambda i: Edit(f"{name}(line {i + 1})", lambda raw: b"\n".join(change(raw.split(b"\n"), i)))

    def field(value: str) -> Callable[[list[bytes], int], list[bytes]]:
        def change(rows: list[bytes], i: int) -> list[bytes]:
            head, sep, _ = rows[i].rpartition(b" ")
            rows[i] = (head + sep if sep else rows[i] + b" ") + value.encode()
            return rows
        return change

    return st.one_of(
        st.builds(lambda value, i: on_line(f"value={value!r}", field(value))(i), st.sampled_from(LINE_VALUES), index),
        index.map(on_line("repeat", lambda rows, i: rows[: i + 1] + rows[i:])),
        index.map(on_line("drop", lambda rows, i: rows[:i] + rows[i + 1 :])),
        index.map(on_line("blank-token", lambda rows, i: [*rows[:i], b" " + rows[i].rpartition(b" ")[2],
                                                          *rows[i + 1:]])),
        index.map(on_line("long-line", lambda rows, i: [*rows[:i], b"x" * 100_000 + b" 1", *rows[i + 1:]])),
        byte_edits(len(data)),
    )
