"""The options that choose a split and an epoch's plan, shared by ``tokenmill batches`` and ``tokenmill trace``
(one definition, so the two commands read the same data with the same plan)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from tokenmill.batching.config import MODES
from tokenmill.batching.packed_pairs import STRATEGIES, PackConfig
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


def pack_options(what: str) -> Callable[[F], F]:
    """Decorator: --pack-length (its help ends with ``what``) and --pack-strategy."""
    length = click.option("--pack-length", type=POSITIVE, default=None,
                          help="Pack several pairs per row of this many tokens per side (T2T packing)" + what)
    strategy = click.option("--pack-strategy", type=click.Choice(STRATEGIES), default="ffd", show_default=True,
                            help="Packing strategy.")
    return lambda command: length(strategy(command))


def pack_config(pack_length: int | None, pack_strategy: str, max_tokens: int, max_sentences: int | None, seed: int,
                drop_last: bool) -> PackConfig | None:
    """The packing the flags ask for (None without --pack-length): rows of --pack-length tokens a side, batches
    within --max-tokens (and --max-sentences rows)."""
    if pack_length is None:
        return None
    return PackConfig(max_length=pack_length, max_tokens=max_tokens, rows_per_batch=max_sentences,
                      strategy=pack_strategy, seed=seed, drop_last=drop_last)


__all__ = ["ABOVE_ZERO", "NON_NEGATIVE", "POSITIVE", "pack_config", "pack_options", "plan_options"]
