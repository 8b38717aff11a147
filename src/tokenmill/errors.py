"""The one exception family tokenmill raises for bad input: the CLI prints it without a traceback."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

Loaded = TypeVar("Loaded")


class TokenmillError(Exception):
    """Bad input or state the user can fix; the message names the file and what to do."""


class FormatError(TokenmillError):
    """A .bin/.idx pair or a manifest that is not what it claims to be."""


class ConfigError(TokenmillError):
    """Settings that contradict each other or name something that does not exist."""


@contextmanager
def opening(path: str | os.PathLike[str], what: str, fix: str, *, label: str = "") -> Iterator[None]:
    """Turn whatever reading ``path`` as ``what`` (e.g. "a fairseq dictionary") raises into one
    :class:`ConfigError` that names the file (after ``label``, e.g. the flag) and says ``fix``."""
    where = f"{label}: " if label else ""
    try:
        yield
    except TokenmillError as error:
        text = str(error)
        named = text if str(path) in text else f"{path}: {text}"
        raise ConfigError(f"{where}{named}; {fix}") from None
    except FileNotFoundError:
        raise ConfigError(f"{where}{path}: no such file; {fix}") from None
    except IsADirectoryError:
        raise ConfigError(f"{where}{path} is a directory, not {what}; {fix}") from None
    except OSError as error:
        raise ConfigError(f"{where}{path}: cannot read it ({error.strerror or error}); {fix}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}{path} is not {what} (not UTF-8 text); {fix}") from None
    except (ValueError, RuntimeError, IndexError, KeyError, TypeError, AttributeError) as error:
        reason = " ".join(str(error).split())[:200]
        raise ConfigError(f"{where}{path} is not {what} ({reason}); {fix}") from None


def load_file(path: str | os.PathLike[str], what: str, fix: str, load: Callable[[str | os.PathLike[str]], Loaded],
              *, label: str = "") -> Loaded:
    """``load(path)``, refusing a folder, with whatever reading it raises as :func:`opening` says it (``what``:
    e.g. "a fairseq dictionary"; ``fix``: what to give instead; ``label``: e.g. the flag)."""
    with opening(path, what, fix, label=label):
        if os.path.isdir(path):
            raise IsADirectoryError(path)
        return load(path)
