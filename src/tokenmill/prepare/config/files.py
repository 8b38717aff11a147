"""Checks of the files that settings name, run before any work: inputs resolved exactly as the run will, and
a given SentencePiece model or fairseq dictionary loaded once (cached by path, mtime and size)."""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Callable
from pathlib import Path

from tokenmill.errors import ConfigError, TokenmillError, load_file
from tokenmill.store.remote import is_url
from tokenmill.text.readers import resolve_prefix
from tokenmill.text.sources import detect_format
from tokenmill.vocab.dictionary import Dictionary
from tokenmill.vocab.sentencepiece import SentencePieceEncoder


def check_inputs(flag: str, prefixes: list[str], suffixes: list[str]) -> None:
    """Every ``{prefix}.{suffix}`` exists, resolved exactly as the pipeline will (compressed variants too)."""
    for prefix in prefixes:
        if is_url(prefix):  # checked when the run copies it (see tokenmill.prepare.object_storage)
            continue
        for suffix in suffixes:
            try:
                resolve_prefix(prefix, suffix)
            except TokenmillError as error:
                raise ConfigError(f"{flag}: {error}") from None


def check_files(flag: str, files: list[str], input_format: str) -> None:
    """tsv/jsonl/table input: the prefixes are the files (or globs that match some)."""
    for path in files:
        if not is_url(path) and any(c in path for c in "*?["):
            if not glob.glob(path):
                raise ConfigError(f"{flag}: {path}: no file matches this pattern")
            continue
        if not is_url(path) and not Path(path).is_file() and detect_format(path) != input_format:
            state = "is a directory, not a file" if Path(path).is_dir() else "no such file"
            raise ConfigError(
                f"{flag}: {path}: {state} (with --input-format {input_format} the prefixes are the files)"
            )


def check_spm_model(path: str, label: str) -> None:
    """``path`` is a SentencePiece model that loads."""
    _check_loads(path, label, "a SentencePiece model", "give a .model file written by spm_train or tokenmill prepare",
                 _checked_spm)


def check_dictionary(path: str, label: str) -> None:
    """``path`` is a fairseq dictionary that loads."""
    _check_loads(path, label, "a fairseq dictionary", "give a fairseq dict.txt (one '<token> <count>' per line)",
                 _checked_dictionary)


def _check_loads(path: str, label: str, what: str, fix: str, load: Callable[[tuple[str, str, int, int]], None]) -> None:
    """``load`` (cached by the file's identity) reads ``path`` without a problem; else one ConfigError."""
    load_file(path, what, fix, lambda given: load(_file_identity(os.fspath(given))), label=label)


def _file_identity(path: str) -> tuple[str, str, int, int]:
    """(path as given, absolute path, mtime, size): a file checked once is not loaded again unchanged."""
    stat = os.stat(path)
    return path, os.path.abspath(path), stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=16)
def _checked_spm(identity: tuple[str, str, int, int]) -> None:
    SentencePieceEncoder(identity[0])


@functools.lru_cache(maxsize=16)
def _checked_dictionary(identity: tuple[str, str, int, int]) -> None:
    Dictionary.load(identity[0])
