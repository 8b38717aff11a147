"""What every readers-survive test asserts about one read of a mutated file, and the copies it reads.

A read survives when it gives a correct result (the reader found nothing wrong with what it served) or
one :class:`tokenmill.errors.TokenmillError` whose message names the file; never a crash of the child
interpreter, never a hang, never a non-tokenmill exception, and never a peak allocation near a declared
size (the seeds are kilobytes: :data:`PEAK_LIMIT` is far above what reading them needs).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings

from tests.survive.mutations import Edit

PEAK_LIMIT = 256 << 20
"""Bytes a read of a kilobyte seed may allocate at its peak (a declared size taken on trust is far more)."""
EXAMPLES = int(os.environ.get("TOKENMILL_SURVIVE_EXAMPLES", "0")) or None
"""``TOKENMILL_SURVIVE_EXAMPLES=N`` searches longer than CI's fixed budget (each test's own count)."""


def budget(examples: int) -> settings:
    """CI's fixed, seeded budget for one property test (or the environment's longer search)."""
    return settings(max_examples=EXAMPLES or examples, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


def survived(answer: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """Assert that a sandbox answer is a correct result or one tokenmill error naming one of ``names``."""
    status = answer["status"]
    assert status in ("ok", "error"), f"the reader {status}ed: {answer}"
    assert answer["peak"] < PEAK_LIMIT, f"peak allocation {answer['peak']} bytes reading a small file"
    if status == "error":
        assert answer["tokenmill"], f"not a tokenmill error: {answer['traceback']}"
        assert any(name in answer["message"] for name in names), f"the error names none of {names}: {answer['message']}"
    else:
        assert not answer["violations"], answer["violations"]
    return answer


@contextmanager
def mutated(seed: Path, relative: str | None, edit: Edit, *, decode: Any = None) -> Iterator[Path]:
    """A private copy of ``seed`` (a file, or a directory with ``relative`` in it) with ``edit`` applied to
    that file's bytes; removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="survive-"))
    try:
        copy = root / seed.name
        if seed.is_dir():
            shutil.copytree(seed, copy, ignore=shutil.ignore_patterns(".lock", ".state", ".work"))
        else:
            shutil.copyfile(seed, copy)
        target = copy / relative if relative else copy
        target.write_bytes(edit.apply(target.read_bytes()))
        yield copy
    finally:
        shutil.rmtree(root, ignore_errors=True)
