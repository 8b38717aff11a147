"""Flags of Megatron's ``preprocess_data.py`` and ``fairseq-preprocess`` that users paste in, with no field of
their own: each is taken where it means something here, else one error naming tokenmill's way to do it.

Each :class:`PeerFlag` is a hidden option of ``tokenmill prepare``; :func:`apply_peer_flags` turns the given
ones into settings (``--partitions 8`` -> ``tasks: 8``) before the config is built, or raises one
``click.UsageError``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

Apply = Callable[[Any, dict[str, Any], dict[str, Any]], None]
"""(the value given, the flags' settings, every setting given) -> changes the flags' settings, or raises
click.UsageError."""


@dataclass(frozen=True)
class PeerFlag:
    flag: str
    peer: str
    kind: Any  # click type, or None for an on/off flag
    apply: Apply
    help: str
    """What the flag does here (the option's help; the option itself stays hidden from --help)."""


def _tasks(value: Any, settings: dict[str, Any], given: dict[str, Any]) -> None:
    settings["tasks"] = int(value)  # Megatron's input partitions: here the task count (same output for any)


def _ignored(value: Any, settings: dict[str, Any], given: dict[str, Any]) -> None:
    """Accepted, nothing to do: --log-interval (progress bars show the rate)."""


def _dataset_impl(value: Any, settings: dict[str, Any], given: dict[str, Any]) -> None:
    if str(value) != "mmap":
        raise click.UsageError(f"--dataset-impl {value}: tokenmill writes the mmap format (.bin/.idx, MMIDIDX) only; "
                               "drop the flag or give --dataset-impl mmap")


def _only_source(value: Any, settings: dict[str, Any], given: dict[str, Any]) -> None:
    if given.get("target_lang"):
        raise click.UsageError("--only-source with --target-lang: monolingual data has no target side; "
                               "drop --target-lang")


PEER_FLAGS = (
    PeerFlag("--partitions", "Megatron", click.IntRange(min=1), _tasks,
             "Megatron's --partitions: taken as --tasks (the output does not depend on the count)."),
    PeerFlag("--log-interval", "Megatron", click.IntRange(min=1), _ignored,
             "Megatron's --log-interval: accepted and ignored (progress bars show the rate)."),
    PeerFlag("--dataset-impl", "Megatron/fairseq", str, _dataset_impl,
             "Megatron's/fairseq's --dataset-impl: mmap only (the .bin/.idx format tokenmill writes)."),
    PeerFlag("--only-source", "fairseq", None, _only_source,
             "fairseq's --only-source: monolingual data (give no --target-lang)."),
)


def dest(flag: PeerFlag) -> str:
    return "peer_" + flag.flag[2:].replace("-", "_")


def peer_options(option_class: type[click.Option], **extra: Any) -> list[click.Option]:
    """The hidden options of :data:`PEER_FLAGS`."""
    out = []
    for flag in PEER_FLAGS:
        if flag.kind is None:
            out.append(option_class([flag.flag, dest(flag)], is_flag=True, default=False, hidden=True,
                                    help=flag.help, **extra))
        else:
            out.append(option_class([flag.flag, dest(flag)], type=flag.kind, default=None, hidden=True,
                                    help=flag.help, **extra))
    return out


def apply_peer_flags(values: dict[str, Any], overrides: dict[str, Any], given: dict[str, Any]) -> None:
    """Take the peer flags out of ``values`` (click's) and apply them to ``overrides`` (the flags' settings);
    ``given`` is every setting given (the YAML file's and the flags')."""
    for flag in PEER_FLAGS:
        value = values.pop(dest(flag), None)
        if value not in (None, False):
            flag.apply(value, overrides, given)


__all__ = ["PEER_FLAGS", "PeerFlag", "apply_peer_flags", "peer_options"]
