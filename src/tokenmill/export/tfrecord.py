"""Write Tensor2Tensor's TFRecord files with TensorFlow's own ``TFRecordWriter`` (``pip install tokenmill[tf]``).

Each shard file is written under a temporary name in the output folder and renamed into place
when complete (``fsutil.atomic_path``), so a killed export never leaves a file T2T would read as
finished. Files of the same problem from an earlier export that this one does not write (another
shard count) are removed afterwards: T2T reads ``{problem}-train*``, and would read them too.

Importing this module imports TensorFlow.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tokenmill._core.optional import require
from tokenmill.errors import ConfigError
from tokenmill.export.t2t import T2T_SEED, ExportPlan, SplitExport, is_shard_file, plan_export, serialize_examples
from tokenmill.fsutil import atomic_path

tf = require("tensorflow", extra="tf", needed_by="writing TFRecords (tokenmill export tfrecord)")

CHUNK_RECORDS = 1 << 16
"""Records serialized at once (bounds memory on big shards)."""


@dataclass
class ExportResult:
    """What an export wrote."""

    out: Path
    files: dict[str, list[str]] = field(default_factory=dict)
    """T2T split tag -> shard file names."""
    records: dict[str, int] = field(default_factory=dict)
    """T2T split tag -> records written."""
    vocab: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    """Stale shard files of the same problem that were removed."""


def _records(split: SplitExport, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Serialized examples of items ``ids`` (in that order)."""
    features = []
    if split.inputs is not None:
        features.append(("inputs", *split.inputs.gather(ids)))  # type: ignore[attr-defined]
    features.append(("targets", *split.targets.gather(ids)))  # type: ignore[attr-defined]
    return serialize_examples(features)


def write_shard(path: Path, split: SplitExport, ids: np.ndarray) -> None:
    """One TFRecord file holding items ``ids`` in order, written atomically."""
    with atomic_path(path) as tmp:
        with tf.io.TFRecordWriter(str(tmp)) as writer:
            for start in range(0, len(ids), CHUNK_RECORDS):
                data, offsets = _records(split, ids[start : start + CHUNK_RECORDS])
                raw = data.tobytes()
                for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True):
                    writer.write(raw[a:b])


def export_tfrecord(
    directory: str | os.PathLike[str],
    out: str | os.PathLike[str],
    problem: str,
    *,
    shards: dict[str, int] | None = None,
    seed: int | None = T2T_SEED,
    vocab_name: str | None = None,
) -> ExportResult:
    """Write ``directory``'s splits as T2T problem ``problem``'s files into ``out`` (see :mod:`tokenmill.export.t2t`).

    ``shards``: files per split (default T2T's ``Text2TextProblem``: train 100, valid 1, test 1).
    """
    shards = shards if shards is not None else {"train": 100, "valid": 1, "test": 1}
    return write_plan(plan_export(directory, problem, shards=shards, seed=seed, vocab_name=vocab_name), out)


def write_plan(plan: ExportPlan, out: str | os.PathLike[str]) -> ExportResult:
    """Write the files of ``plan`` into ``out`` (created when missing), then remove stale shards."""
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{target} is a file; OUT must be a directory (it is created when missing)")
    target.mkdir(parents=True, exist_ok=True)
    result = ExportResult(target)
    for split in plan.splits:
        names = []
        for shard, ids in enumerate(split.shards):
            name = plan.file_name(split, shard)
            write_shard(target / name, split, ids)
            names.append(name)
        result.files[split.tag] = names
        result.records[split.tag] = split.num_records
    for name, source in plan.vocab_files.items():
        with atomic_path(target / name) as tmp:
            shutil.copyfile(source, tmp)
        result.vocab.append(name)
    written = {name for names in result.files.values() for name in names}
    for entry in sorted(target.iterdir()):
        if entry.is_file() and is_shard_file(entry.name, plan.problem) and entry.name not in written:
            entry.unlink()
            result.removed.append(entry.name)
    return result
