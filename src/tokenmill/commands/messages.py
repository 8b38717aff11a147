"""What a long-running command logs: progress lines, and warnings printed with a ``warning:`` prefix and
kept, so the command repeats them at the end of its summary (where ``-q`` still shows them).

    kept = capture_warnings(quiet)     # before the run
    ...
    for line in warning_lines(kept, summary.warnings): click.echo(line)
"""

from __future__ import annotations

import logging
import sys

PREFIX = "warning: "


def _plain(message: str) -> str:
    """A warning without its ``warning:`` prefix."""
    return message[len(PREFIX):] if message.startswith(PREFIX) else message


class _Prefixed(logging.Formatter):
    """Every record at WARNING or above starts with ``warning:`` (once), whichever module logged it."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if record.levelno >= logging.WARNING and not text.startswith(PREFIX):
            return PREFIX + text
        return text


class KeptWarnings(logging.Handler):
    """The warnings logged during a run, in order, without their prefix and without repeats."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []
        self.added: list[logging.Handler] = [self]
        """The handlers :func:`capture_warnings` put on the root logger (taken off by :func:`release`)."""

    def emit(self, record: logging.LogRecord) -> None:
        message = _plain(record.getMessage())
        if message not in self.messages:
            self.messages.append(message)


def capture_warnings(quiet: bool) -> KeptWarnings:
    """Log progress (unless ``quiet``) and warnings (always kept; printed as they happen unless ``quiet``)
    on stderr, each warning with the ``warning:`` prefix; returns the handler that keeps them."""
    root = logging.getLogger()
    kept = KeptWarnings()
    if not quiet:
        shown = logging.StreamHandler(sys.stderr)
        shown.setFormatter(_Prefixed("%(message)s"))
        kept.added.append(shown)
        root.setLevel(logging.INFO)
    elif root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)
    for handler in kept.added:  # with one handler there, warnings no longer reach logging's last resort
        root.addHandler(handler)
    return kept


def release(kept: KeptWarnings) -> None:
    """Stop showing and keeping warnings (the command is done)."""
    for handler in kept.added:
        logging.getLogger().removeHandler(handler)


def warning_lines(kept: KeptWarnings, known: list[str]) -> list[str]:
    """``warning:`` lines for what was logged during the run and is not among ``known`` (the warnings the
    summary prints already), for the end of the summary."""
    return [PREFIX + message for message in kept.messages if message not in known]


__all__ = ["KeptWarnings", "capture_warnings", "release", "warning_lines"]
