"""The clean stage encoding the lines it keeps, so the encode stage has nothing left to do.

When the tokenizer is known before cleaning (a model given with ``--tokenizer-model``, or whitespace words)
and the clean stage's workers read their own ranges, each worker also encodes the lines it keeps (see
:func:`tokenmill.prepare.parallel.clean_blocks`); the parent drops the duplicates' ids with their bytes and
writes each side's work-id store here, numbering unknown surfaces and whitespace words in input order as the
encode stage does. The cleaned text is still written (it is the clean stage's output). A small record says
which encode key the stores were made for: the encode stage adopts them only when its own key is the same
(:func:`adopted`), so a changed model or setting encodes again, and a clean stage that did not encode removes
the record first (:func:`forget`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tokenmill.fsutil import write_json
from tokenmill.prepare.encode_workers import EncodedRange, FirstSeen, global_word_ids
from tokenmill.prepare.encoded_parts import IdCounts
from tokenmill.prepare.tokenizing import UnknownSurfaces
from tokenmill.store import IndexedWriter
from tokenmill.vocab.tokenizer import Tokenizer


def record_path(ids_folder: Path, split: str) -> Path:
    """Where the record of a split's fused encode lives (next to its id stores)."""
    return ids_folder / f"{split}.fused.json"


def forget(ids_folder: Path, split: str) -> None:
    """Remove a split's record: the id stores next to it may be about to change."""
    record_path(ids_folder, split).unlink(missing_ok=True)


class FusedIds:
    """Each side's work-id store (and unknown surfaces or words), written from ranges in input order."""

    def __init__(self, prefixes: dict[str, Path], tokenizer: Tokenizer | None, keep_surfaces: bool) -> None:
        self.langs = list(prefixes)
        self.prefixes = prefixes
        self.whitespace = tokenizer is None
        self.surfaces = {lang: UnknownSurfaces(tokenizer) for lang in self.langs} if keep_surfaces else None
        self.words = {lang: FirstSeen() for lang in self.langs}
        self.counts = {lang: IdCounts(0) for lang in self.langs}
        self.writers = {lang: IndexedWriter(prefix, dtype=np.dtype(np.int32)) for lang, prefix in prefixes.items()}

    def add(self, encoded: tuple[EncodedRange, EncodedRange | None]) -> None:
        """One range's kept lines, side by side (the target None for monolingual text)."""
        for lang, side in zip(self.langs, encoded, strict=False):
            assert side is not None
            flat = side.flat
            if self.whitespace:
                flat = global_word_ids(side, self.words[lang])
            elif self.surfaces is not None and side.found is not None:
                flat = self.surfaces[lang].assign(flat, side.found)
            self.writers[lang].add_items(flat, side.lengths)
            self.counts[lang].add(flat)

    def abort(self) -> None:
        """Close without keeping anything (the stores' writers discard their temporaries)."""
        for writer in self.writers.values():
            writer.abort()

    def finish(
        self, words_path: dict[str, Path], unknown_path: dict[str, Path], counts_path: dict[str, Path]
    ) -> dict[str, list[Path]]:
        """Finalize the stores and write the tables and the work ids' counts; lang -> its files (what its encode
        stage would list)."""
        for writer in self.writers.values():
            writer.finalize()
        outputs: dict[str, list[Path]] = {}
        for lang, prefix in self.prefixes.items():
            self.counts[lang].save(counts_path[lang])
            files = [Path(f"{prefix}.bin"), Path(f"{prefix}.idx"), counts_path[lang]]
            if self.whitespace:
                write_json(words_path[lang], list(self.words[lang]))
                files.append(words_path[lang])
            elif self.surfaces is not None:
                write_json(unknown_path[lang], self.surfaces[lang].table())
                files.append(unknown_path[lang])
            outputs[lang] = files
        return outputs


def write_record(ids_folder: Path, split: str, key: str, outputs: dict[str, list[Path]]) -> None:
    """Say that ``outputs`` (lang -> files) are the encode stage's outputs for encode key ``key``."""
    sides = {lang: {path.name: path.stat().st_size for path in files} for lang, files in outputs.items()}
    write_json(record_path(ids_folder, split), {"key": key, "sides": sides})


def adopted(ids_folder: Path, split: str, lang: str, key: str) -> list[Path] | None:
    """The files a fused clean stage wrote for side ``lang`` when they were made for encode key ``key`` and
    are still there as written; else None (the encode stage runs)."""
    try:
        record = json.loads(record_path(ids_folder, split).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    side = record.get("sides", {}).get(lang)
    if record.get("key") != key or not side:
        return None
    files = [ids_folder / name for name in side]
    if not all(path.is_file() and path.stat().st_size == size for path, size in zip(files, side.values(), strict=True)):
        return None
    return files
