"""Tensor2Tensor's training files from a prepared directory: which records go where, and their bytes.

T2T's ``t2t-datagen`` writes a problem's examples round-robin into ``{problem}-{split}-{i:05d}-of-
{n:05d}`` shards (``generator_utils.generate_files``: example k into shard k mod n), then shuffles
each shard on its own with Python's ``random.shuffle`` (``shuffle_dataset``: train shards in order,
then dev, then test, one random state seeded by ``--random_seed``, default 429459). :func:`plan_export`
reproduces that order exactly from the seed, so the files hold the same examples in the same order
as T2T's own run over the same ids.

Each record is a ``tf.train.Example`` with int64 features ``inputs`` (the source item) and
``targets`` (the target item), both ending with T2T's ``<EOS>`` = 1, as ``text2text_generate_encoded``
makes them; a monolingual store gives ``targets`` only (T2T's language-model problems).
:func:`serialize_examples` writes the protobuf wire format of many examples at once with numpy
(the bytes ``Example.SerializeToString(deterministic=True)`` gives), far faster than building one
protobuf object per pair. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np

from tokenmill.data.pairs import ConcatStore, open_store
from tokenmill.errors import ConfigError
from tokenmill.store.layout import is_shard_name, shard_index, store_name
from tokenmill.store.manifest import MANIFEST_NAME, Manifest, read_manifest

T2T_SEED = 429459
"""``t2t-datagen --random_seed``'s default: the seed of T2T's shard shuffle."""
T2T_APPROX_VOCAB_SIZE = 2**15
"""``Text2TextProblem.approx_vocab_size``'s default, used in the vocabulary's name when the data do not say."""
SPLIT_NAMES = {"train": "train", "valid": "dev", "test": "test"}
"""Our split -> T2T's file-name tag (``dev`` is T2T's evaluation split)."""
PROBLEM_NAME = re.compile(r"^[A-Za-z0-9_]+$")
_SHARD_FILE = re.compile(r"^(?P<problem>.+)-(?P<tag>train|dev|test)-\d{5}-of-\d{5}$")


@dataclass
class SplitExport:
    """One split: its stores and the order of its records in each shard file."""

    split: str
    tag: str
    inputs: object | None
    """The source store (None: monolingual data, ``targets`` only)."""
    targets: object
    shards: list[np.ndarray] = field(default_factory=list)
    """Item ids of each shard file, in file order."""

    @property
    def num_records(self) -> int:
        return len(self.targets)  # type: ignore[arg-type]


@dataclass
class ExportPlan:
    """Everything an export writes: splits, file names, vocabulary files."""

    problem: str
    splits: list[SplitExport]
    vocab_files: dict[str, Path]
    """Destination name -> the vocabulary file to copy there."""

    def file_name(self, split: SplitExport, shard: int) -> str:
        return shard_name(self.problem, split.tag, shard, len(split.shards))


def shard_name(problem: str, tag: str, shard: int, num_shards: int) -> str:
    """T2T's ``sharded_name``: ``{problem}-{tag}-{shard:05d}-of-{num_shards:05d}``."""
    return f"{problem}-{tag}-{shard:05d}-of-{num_shards:05d}"


def is_shard_file(name: str, problem: str) -> bool:
    """Whether ``name`` is one of ``problem``'s T2T data files (any split or shard count)."""
    match = _SHARD_FILE.match(name)
    return match is not None and match.group("problem") == problem


def shard_orders(num_records: int, num_shards: int, rng: random.Random | None) -> list[np.ndarray]:
    """Item ids per shard: round-robin (item k in shard k mod n), then each shard shuffled in turn
    with ``rng`` the way ``random.shuffle`` shuffles a list of records (None: not shuffled)."""
    orders = []
    for shard in range(num_shards):
        ids = np.arange(shard, num_records, num_shards, dtype=np.int64)
        if rng is not None and len(ids) > 1:
            permutation = list(range(len(ids)))
            rng.shuffle(permutation)  # the same draws random.shuffle(records) makes for this many records
            ids = ids[np.asarray(permutation, dtype=np.int64)]
        orders.append(ids)
    return orders


def _store(root: Path, prefixes: list[str]) -> object:
    parts = [open_store(root / prefix) for prefix in prefixes]
    return parts[0] if len(parts) == 1 else ConcatStore(parts)


def _t2t_manifest(root: Path) -> Manifest:
    """The manifest of ``root``, refused unless it is one direction of T2T subword ids (what T2T's files hold)."""
    if not (root / MANIFEST_NAME).is_file():
        raise ConfigError(f"{root}: no {MANIFEST_NAME}; give a directory written by tokenmill prepare")
    manifest = read_manifest(root)
    if manifest.settings.get("directions"):
        raise ConfigError(
            f"{root} holds many directions; T2T's files hold one problem: prepare one direction, or export each "
            "direction's own prepared directory"
        )
    tokenizer = manifest.vocab.get("tokenizer") or manifest.settings.get("tokenizer")
    if tokenizer != "t2t-subword":
        raise ConfigError(
            f"{root} holds {tokenizer or 'non-T2T'} ids, not T2T subword ids (<pad>=0, <EOS>=1): prepare it with "
            "--tokenizer t2t-subword (add --tokenizer-model VOCAB to keep an existing T2T vocabulary)"
        )
    return manifest


def plan_export(
    directory: str | Path,
    problem: str,
    *,
    shards: dict[str, int],
    seed: int | None = T2T_SEED,
    vocab_name: str | None = None,
) -> ExportPlan:
    """What exporting ``directory`` as T2T problem ``problem`` writes.

    ``shards``: files per split (``train``, ``valid``, ``test``; a split the data lack is skipped,
    ``train`` is required). ``seed``: T2T's ``--random_seed`` (None: no shuffle, round-robin order).
    ``vocab_name``: the vocabulary's file name (default T2T's ``vocab.{problem}.{approx_vocab_size}.subwords``;
    separate source/target vocabularies get ``.{lang}`` appended, as T2T's translate problems name them).
    """
    root = Path(directory)
    if not PROBLEM_NAME.match(problem):
        raise ConfigError(
            f"--problem {problem!r}: a T2T problem name is letters, digits and underscores (its registered name, "
            "e.g. translate_enzh_tokenmill)"
        )
    manifest = _t2t_manifest(root)
    settings, vocab = manifest.settings, manifest.vocab
    src, tgt = settings.get("source_lang"), settings.get("target_lang")
    splits = []
    for split, tag in SPLIT_NAMES.items():
        count = shards.get(split, 0)
        if count < 1:
            continue
        if tgt:
            found = {lang: _prefixes(manifest.stores, store_name(split, src, tgt, lang)) for lang in (src, tgt)}
            inputs_prefixes, target_prefixes = found[src], found[tgt]
        else:
            inputs_prefixes, target_prefixes = [], _prefixes(manifest.stores, store_name(split, None, None, None))
        if not target_prefixes:
            if split == "train":
                raise ConfigError(f"{root} has no train split in its manifest; nothing to export")
            continue
        inputs = _store(root, inputs_prefixes) if inputs_prefixes else None
        targets = _store(root, target_prefixes)
        if inputs is not None and len(inputs) != len(targets):  # type: ignore[arg-type]
            raise ConfigError(
                f"{root}: {split} has {len(inputs)} source but {len(targets)} target items; re-run prepare"  # type: ignore[arg-type]
            )
        splits.append(SplitExport(split, tag, inputs, targets))
    rng = random.Random(seed) if seed is not None else None
    for part in splits:  # one random state through train, dev, test, as shuffle_dataset goes
        part.shards = shard_orders(part.num_records, shards[part.split], rng)
    return ExportPlan(problem, splits, _vocab_files(root, vocab, settings, problem, vocab_name))


def _prefixes(stores: dict[str, object], name: str) -> list[str]:
    """The manifest's stores named ``name``: the directory's own, else one per shard folder in shard order
    (``shardNNN/{name}``)."""
    found = []
    for prefix in stores:
        path = PurePosixPath(prefix)
        if path.name == name and (len(path.parts) == 1 or (len(path.parts) == 2 and is_shard_name(path.parts[0]))):
            found.append((shard_index(path.parts[0]) if len(path.parts) == 2 else -1, prefix))
    return [prefix for _, prefix in sorted(found)]


def _vocab_files(
    root: Path, vocab: dict[str, object], settings: dict[str, object], problem: str, vocab_name: str | None
) -> dict[str, Path]:
    models = vocab.get("models") or {}
    if not isinstance(models, dict) or not models:
        raise ConfigError(f"{root}/{MANIFEST_NAME} names no T2T vocabulary (vocab.models); re-run prepare")
    approx = settings.get("approx_vocab_size") or T2T_APPROX_VOCAB_SIZE
    name = vocab_name or f"vocab.{problem}.{approx}.subwords"
    files = {lang: root / str(model) for lang, model in models.items()}
    for path in files.values():
        if not path.is_file():
            raise ConfigError(f"{path}: the T2T vocabulary named in the manifest is missing; re-run prepare")
    if len(set(files.values())) == 1:
        return {name: next(iter(files.values()))}
    return {f"{name}.{lang}": path for lang, path in files.items()}


# ---------------------------------------------------------------- protobuf wire format, vectorized
def varint_sizes(values: np.ndarray) -> np.ndarray:
    """Bytes of each non-negative integer as a protobuf varint (7 bits a byte)."""
    values = np.asarray(values)
    sizes = np.ones(values.shape, dtype=np.int64)
    top = int(values.max()) if values.size else 0
    bits = 7
    while bits < 64 and top >= 1 << bits:
        sizes += values >= (1 << bits)
        bits += 7
    return sizes


def write_varints(out: np.ndarray, starts: np.ndarray, values: np.ndarray, sizes: np.ndarray) -> None:
    """Write ``values`` as varints into ``out`` at ``starts`` (a size of 0 writes nothing)."""
    values = np.asarray(values, dtype=np.uint64)
    for k in range(int(sizes.max()) if len(sizes) else 0):
        more = sizes > k
        chunk = (values[more] >> np.uint64(7 * k)) & np.uint64(0x7F)
        chunk |= (sizes[more] > k + 1).astype(np.uint64) << np.uint64(7)
        out[starts[more] + k] = chunk.astype(np.uint8)


def _varint_bytes(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All tokens as varints, flat, and each token's byte count: a (tokens, widest) byte matrix
    cut by a mask, so each byte position is one vectorized pass."""
    if len(tokens) and int(tokens.min()) < 0:
        raise ConfigError("a token id is negative; T2T's int64 features hold the ids as stored (>= 0)")
    sizes = varint_sizes(tokens)
    width = int(sizes.max()) if len(sizes) else 1
    if width == 1:
        return tokens.astype(np.uint8), sizes
    values = tokens.astype(np.uint32 if int(tokens.max()) < 1 << 32 else np.uint64, copy=False)
    matrix = np.empty((len(values), width), dtype=np.uint8)
    for k in range(width):
        column = (values >> (7 * k)) & 0x7F
        column |= (sizes > k + 1).astype(values.dtype) << 7
        matrix[:, k] = column
    return matrix[np.arange(width) < sizes[:, None]], sizes


class _Parts:
    """A ragged byte layout built field by field: each record gets constants, varints and payloads in
    the order they are added; a field with a ``present`` mask is left out of the records it marks False."""

    def __init__(self, count: int) -> None:
        self.fields: list[tuple[str, np.ndarray, np.ndarray]] = []
        self.lengths = np.zeros(count, dtype=np.int64)

    def const(self, data: bytes, present: np.ndarray | None = None) -> None:
        sizes = np.full(len(self.lengths), len(data), dtype=np.int64)
        if present is not None:
            sizes[~present] = 0
        self._add("const", np.frombuffer(data, dtype=np.uint8), sizes)

    def varint(self, values: np.ndarray, present: np.ndarray | None = None) -> None:
        sizes = varint_sizes(values)
        if present is not None:
            sizes[~present] = 0
        self._add("varint", values, sizes)

    def payload(self, data: np.ndarray, sizes: np.ndarray) -> None:
        self._add("payload", data, sizes)

    def _add(self, kind: str, data: np.ndarray, sizes: np.ndarray) -> None:
        self.fields.append((kind, data, sizes))
        self.lengths += sizes

    def assemble(self) -> tuple[np.ndarray, np.ndarray]:
        """All records' bytes end to end, and the offsets of each record (length n+1)."""
        offsets = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=offsets[1:])
        out = np.empty(int(offsets[-1]), dtype=np.uint8)
        cursor = offsets[:-1].copy()
        for kind, data, sizes in self.fields:
            if kind == "const":
                where = cursor[sizes > 0]
                out[where[:, None] + np.arange(len(data))] = data
            elif kind == "varint":
                write_varints(out, cursor, data, sizes)
            else:
                starts = np.zeros(len(sizes), dtype=np.int64)
                np.cumsum(sizes[:-1], out=starts[1:])
                out[np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(cursor - starts, sizes)] = data
            cursor += sizes
        return out, offsets


def serialize_examples(features: Sequence[tuple[str, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """``tf.train.Example`` bytes of many records with int64-list features, built in numpy.

    ``features``: (name, flat tokens, offsets) per feature, in name order (the order a deterministic
    serialization writes map entries in), all with the same number of records. Returns every
    record's bytes end to end and the int64 offsets of the records (length n+1): the bytes
    ``Example.SerializeToString(deterministic=True)`` gives for each.
    """
    count = len(features[0][2]) - 1
    blocks = []
    for name, tokens, offsets in features:
        data, sizes = _varint_bytes(np.asarray(tokens))
        ends = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=ends[1:])
        offsets = np.asarray(offsets, dtype=np.int64)
        payload = ends[offsets[1:]] - ends[offsets[:-1]]  # varint bytes of each row's ids
        has = payload > 0
        packed = np.where(has, 1 + varint_sizes(payload) + payload, 0)  # Int64List: value = 1, packed
        feature = 1 + varint_sizes(packed) + packed  # Feature: int64_list = 3
        key = name.encode("utf-8")
        entry = 2 + len(key) + 1 + varint_sizes(feature) + feature  # map entry: key = 1, value = 2
        blocks.append((key, data, payload, has, packed, feature, entry))
    parts = _Parts(count)
    parts.const(b"\x0a")  # Example: features = 1
    parts.varint(sum(1 + varint_sizes(block[-1]) + block[-1] for block in blocks))  # Features: feature = 1
    for key, data, payload, has, packed, feature, entry in blocks:
        parts.const(b"\x0a")
        parts.varint(entry)
        parts.const(b"\x0a" + bytes([len(key)]) + key + b"\x12")
        parts.varint(feature)
        parts.const(b"\x1a")
        parts.varint(packed)
        parts.const(b"\x0a", has)
        parts.varint(payload, has)
        parts.payload(data, payload)
    return parts.assemble()
