"""The options that choose a split and an epoch's plan, shared by ``tokenmill batches`` and ``tokenmill trace``
(one definition, so the two commands read the same data with the same plan)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from tokenmill.batching.config import MODES
from tokenmill.commands.params import number
from tokenmill.settings import Range

POSITIVE = number(int, Range(1))
NON_NEGATIVE = number(int, Range(0))
ABOVE_ZERO = number(float, Range(0, open_low=True))

F = TypeVar("F", bound=Callable[..., object])


def plan_options(split_help: str) -> Callable[[F], F]:
    """Decorator: --split (helped by ``split_help``), --src, --tgt, --shard, --max-tokens, --max-sentences,
    --mode, --world-size and --seed, in that order."""
    options = [
        click.option("--split", default="train", show_default=True, help=split_help),
        click.option("--src", "src_lang", default=None,
                     help="Source language (default: from manifest.json or file names)."),
        click.option("--tgt", "tgt_lang", default=None,
                     help="Target language (default: from manifest.json or file names)."),
        click.option("--shard", type=NON_NEGATIVE, default=None,
                     help="Shard folder number when the split lives in shardNNN/."),
        click.option("--max-tokens", type=POSITIVE, default=4096, show_default=True,
                     help="Token budget per batch and side."),
        click.option("--max-sentences", type=POSITIVE, default=None, help="At most this many rows per batch."),
        click.option("--mode", type=click.Choice(MODES), default="lowpad", show_default=True, help="Batching mode."),
        click.option("--world-size", type=POSITIVE, default=1, show_default=True, help="Number of ranks (GPUs)."),
        click.option("--seed", type=NON_NEGATIVE, default=1, show_default=True, help="Seed of the order."),
    ]

    def apply(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


__all__ = ["ABOVE_ZERO", "NON_NEGATIVE", "POSITIVE", "plan_options"]
