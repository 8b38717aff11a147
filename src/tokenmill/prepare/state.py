"""Restartable stages: each finished stage leaves a record of the fingerprint it was built from.

A stage is skipped on a re-run when its record exists, its fingerprint (a hash of its inputs and
settings) is unchanged and every output it lists is still there with the recorded size. Records
are written after the outputs, atomically, so a stage killed midway simply runs again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xxhash

from tokenmill.fsutil import write_json

STATE_DIR = ".state"
RECORD_VERSION = 2
"""Version 2: outputs are staged under ``.work/out`` and published at the end (older records are redone)."""


def fingerprint(*parts: Any) -> str:
    """A stable hash of JSON-serializable parts (settings, file identities, other fingerprints)."""
    text = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    return xxhash.xxh3_128_hexdigest(text.encode("utf-8"))


def file_identity(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What identifies an input file for restart purposes: its resolved path, size and mtime."""
    stat = os.stat(path)
    return {"path": str(Path(path).resolve()), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}


@dataclass
class StageStore:
    """Records of finished stages under ``DESTDIR/.state/``."""

    root: Path
    force: bool = False

    def _record(self, stage: str) -> Path:
        return self.root / STATE_DIR / f"{stage}.json"

    def done(self, stage: str, key: str) -> dict[str, Any] | None:
        """The record of ``stage`` if it finished with fingerprint ``key`` and its outputs are intact."""
        if self.force:
            return None
        path = self._record(stage)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        if record.get("fingerprint") != key or record.get("version") != RECORD_VERSION:
            return None
        for relative, size in record.get("outputs", {}).items():
            output = self.root / relative
            if not output.is_file() or output.stat().st_size != size:
                return None
        return record

    def finish(
        self, stage: str, key: str, outputs: list[Path], info: dict[str, Any] | None = None, *, seconds: float = 0.0
    ) -> dict[str, Any]:
        """Record ``stage`` as finished (after its outputs were committed), with the seconds it took."""
        record = {
            "version": RECORD_VERSION,
            "fingerprint": key,
            "outputs": {str(p.relative_to(self.root)): p.stat().st_size for p in outputs},
            "info": info or {},
            "seconds": round(seconds, 3),
        }
        write_json(self._record(stage), record, sort_keys=False)  # counters keep their step order
        return json.loads(json.dumps(record))  # exactly what a later run reads back
