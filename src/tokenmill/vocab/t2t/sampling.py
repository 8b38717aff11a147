"""The lines T2T reads to build a vocabulary: ``generator_utils.generate_lines_for_vocab``.

For each file on its own, T2T keeps one line in ``countermax + 1`` with
``countermax = int(file_size_in_bytes / file_byte_budget / 2)``, starting with line ``countermax``,
strips it, and subtracts its length in characters from the budget; it stops at the first line it
would keep once the budget is used up.  Lines are read as TensorFlow's reader returns them: they
end at ``\\n`` only and every ``\\r`` is deleted, so U+2028 or a form feed stays inside a line
unless ``strip`` removes it from the ends.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from tokenmill.errors import ConfigError, FormatError


def sample_lines(path: str | os.PathLike[str], file_byte_budget: float) -> Iterator[str]:
    """Yield the stripped lines T2T samples from one file for the given byte budget."""
    _check_budget(file_byte_budget)
    path = Path(path)
    try:
        size = path.stat().st_size
        handle = path.open("rb")
    except OSError as err:
        raise ConfigError(f"cannot read vocabulary source {path}: {err.strerror}") from err
    with handle:
        yield from sample_stream(handle, size, file_byte_budget, str(path))


def sample_stream(lines: Iterable[bytes], size: int, file_byte_budget: float, name: str) -> Iterator[str]:
    """:func:`sample_lines` over the raw lines (newline included) of a text of ``size`` bytes that is not one
    file on disk (the clean tasks' parts read one after another); ``name`` names it in errors."""
    _check_budget(file_byte_budget)
    countermax = int(size / file_byte_budget / 2)
    budget = file_byte_budget
    counter = 0
    for lineno, raw in enumerate(lines, start=1):
        if counter < countermax:
            counter += 1
            continue
        if budget <= 0:
            break
        try:
            line = raw.replace(b"\r", b"").decode("utf-8").strip()
        except UnicodeDecodeError as err:
            raise FormatError(
                f"{name}:{lineno}: not valid UTF-8 at byte {err.start} of the line; "
                "T2T reads vocabulary sources as UTF-8: re-encode the file"
            ) from None
        budget -= len(line)
        counter = 0
        yield line


def _check_budget(file_byte_budget: float) -> None:
    if not file_byte_budget > 0:
        raise ConfigError(f"file_byte_budget must be positive, got {file_byte_budget!r}")


def sample_files(paths: Iterable[str | os.PathLike[str]], file_byte_budget: float) -> Iterator[str]:
    """``sample_lines`` over several files in order, each file with its own full budget (as T2T)."""
    for path in paths:
        yield from sample_lines(path, file_byte_budget)
