"""The one exception family tokenmill raises for bad input: the CLI prints it without a traceback."""

from __future__ import annotations


class TokenmillError(Exception):
    """Bad input or state the user can fix; the message names the file and what to do."""


class FormatError(TokenmillError):
    """A .bin/.idx pair or a manifest that is not what it claims to be."""


class ConfigError(TokenmillError):
    """Settings that contradict each other or name something that does not exist."""
