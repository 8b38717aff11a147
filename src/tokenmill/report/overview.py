"""Section 1 of the report: what produced the directory, how long each stage took, checksums, sizes.

Everything comes from ``manifest.json`` (settings, vocabulary, per-store counts, the run's stage
wall times and warnings) except the checksum status, which :func:`verify_directory` recomputes,
and the size of the work files, which are not in the manifest.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from tokenmill._version import __version__
from tokenmill.report.layout import DataDir
from tokenmill.store.manifest import verify_directory

STAGE_KINDS = ("clean", "tokenizer", "encode", "dictionary", "binarize", "alignments")
_KEY_SETTINGS = (
    "layout", "tokenizer", "vocab_size", "model_type", "character_coverage", "joined_dictionary", "joint_spm",
    "spm_model", "append_eod", "eod_symbol", "documents", "leakage", "dedup", "shard_size", "num_shards",
    "spm_temperature", "input_sentence_size", "workers", "seed",
)
_MAX_PROBLEMS = 50


def stage_kind(name: str) -> str:
    """The pipeline step a stage name belongs to (``eng_Latn-deu_Latn.encode.train.deu_Latn`` -> ``encode``)."""
    for part in name.split("."):
        if part in STAGE_KINDS:
            return part
    return name.split(".")[0]


def file_kind(relative: str) -> str:
    """Which group a listed file belongs to, for the size table."""
    name = relative.rsplit("/", 1)[-1]
    if name.endswith((".bin", ".idx")):
        return "token stores"
    if name.startswith("dict") and name.endswith(".txt"):
        return "dictionaries"
    if name.endswith((".model", ".vocab", ".json", ".tiktoken", ".subwords")) or "spm" in name:
        return "tokenizer"
    if name.endswith(".log"):
        return "logs"
    return "other"


def _tree_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def overview(data: DataDir, verify: bool = True) -> dict[str, Any]:
    """Settings, tokenizer, vocabulary, version, stage times, warnings, checksum status and sizes."""
    manifest = data.manifest
    settings = manifest.settings
    stages = _stages(manifest.run)
    by_kind: dict[str, int] = {}
    for relative, info in manifest.files.items():
        kind = file_kind(relative)
        by_kind[kind] = by_kind.get(kind, 0) + int(info.get("bytes", 0))
    vocab = manifest.vocab
    summary_vocab = manifest.summary.get("vocab") if isinstance(manifest.summary.get("vocab"), dict) else {}
    return {
        "directory": str(data.root),
        "kind": data.kind,
        "layout": data.layout,
        "created_by": manifest.created_by,
        "report_by": f"tokenmill {__version__}",
        "tokenizer": vocab.get("tokenizer") or summary_vocab.get("tokenizer") or settings.get("tokenizer"),
        "vocab": _vocab_facts(data),
        "key_settings": {k: settings[k] for k in _KEY_SETTINGS if k in settings},
        "filters": settings.get("filters") or {},
        "normalize": settings.get("normalize") or {},
        "settings": settings,
        "stages": stages,
        "stage_groups": _stage_groups(stages),
        "stage_seconds": sum(s["seconds"] for s in stages),
        "warnings": [str(w) for w in (manifest.run.get("warnings") or [])],
        "verify": _verified(data) if verify else None,
        "disk": {
            "listed_bytes": sum(by_kind.values()),
            "listed_files": len(manifest.files),
            "by_kind": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
            "work_bytes": sum(_tree_bytes(data.root / name) for name in (".work", ".state", ".cache")),
        },
        "stores": [
            {"prefix": prefix, **{k: store.get(k) for k in ("layout", "dtype", "items", "tokens", "documents")},
             "bytes": sum(int(manifest.files.get(f"{prefix}{ext}", {}).get("bytes", 0)) for ext in (".bin", ".idx"))}
            for prefix, store in manifest.stores.items()
        ],
        "shards": data.shard_folders,
    }


def _stages(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The stages of the last prepare run, in run order: name, kind, seconds, whether it ran."""
    return [
        {"name": name, "kind": stage_kind(name), "seconds": float(info.get("seconds", 0.0)),
         "ran": bool(info.get("ran", False))}
        for name, info in (run.get("stages") or {}).items()
        if isinstance(info, dict)
    ]


def _stage_groups(stages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Seconds, stages and stages run per kind of stage, in :data:`STAGE_KINDS` order (unknown kinds last)."""
    groups: dict[str, dict[str, Any]] = {}
    for stage in stages:
        group = groups.setdefault(stage["kind"], {"kind": stage["kind"], "seconds": 0.0, "stages": 0, "ran": 0})
        group["seconds"] += stage["seconds"]
        group["stages"] += 1
        group["ran"] += int(stage["ran"])
    return sorted(
        groups.values(), key=lambda g: STAGE_KINDS.index(g["kind"]) if g["kind"] in STAGE_KINDS else len(STAGE_KINDS)
    )


def _verified(data: DataDir) -> dict[str, Any]:
    """What ``verify`` says of the directory (the first problems, their count, the files checked, the time)."""
    began = time.perf_counter()
    problems = verify_directory(data.root)
    return {
        "ok": not problems,
        "problems": problems[:_MAX_PROBLEMS],
        "problem_count": len(problems),
        "files": len(data.manifest.files),
        "seconds": time.perf_counter() - began,
    }


def _vocab_facts(data: DataDir) -> dict[str, Any]:
    """Vocabulary sizes and special ids, from the manifest's ``vocab`` (single corpus) or ``summary.vocab``."""
    manifest = data.manifest
    vocab = dict(manifest.vocab)
    sizes: dict[str, int] = {}
    for lang, info in (vocab.get("dictionaries") or {}).items():
        if isinstance(info, dict) and "size" in info:
            sizes[lang or "(all)"] = int(info["size"])
    if isinstance(vocab.get("size"), dict):  # the tokenizer's own ids: one model (size) per language
        sizes.update({str(lang): int(size) for lang, size in vocab["size"].items()})
    elif "size" in vocab:
        sizes["(shared)"] = int(vocab["size"])
    models = vocab.get("spm_models") or sorted(set((vocab.get("models") or {}).values()))
    return {
        "sizes": sizes,
        "special": vocab.get("special") or {},
        "eod": vocab.get("eod"),
        "models": models,
        "lang_tokens": vocab.get("lang_tokens") or {},
    }


__all__ = ["STAGE_KINDS", "file_kind", "overview", "stage_kind"]
