"""The options that describe Megatron GPT samples (and a blend of them), shared by ``tokenmill batches`` and
``tokenmill trace``: ``--seq-length`` switches a command from translation pairs to GPT micro batches over
language-model data, with Megatron's ``--global-batch-size`` and ``--micro-batch-size``; ``--blend WEIGHT
PREFIX`` (repeated) and ``--blend-samples`` make a blend of several stores, as ``tokenmill report`` takes it.
The settings are those of :class:`~tokenmill.data.gpt_dataset.GPTDatasetConfig` and
:class:`~tokenmill.batching.gpt_plan.GPTBatchConfig`; give the ones training uses, or a saved state is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from tokenmill.batching.gpt_plan import GPTBatchConfig
from tokenmill.commands.plan_options import ABOVE_ZERO, NON_NEGATIVE, POSITIVE
from tokenmill.data.gpt_dataset import GPTDatasetConfig
from tokenmill.errors import ConfigError
from tokenmill.loader.gpt_open import GPTSetup

F = TypeVar("F", bound=Callable[..., object])
NAMES = ("seq_length", "global_batch_size", "micro_batch_size", "num_samples", "gpt_seed", "blend", "blend_samples")
"""The parameters :func:`gpt_options` adds, by name."""


def gpt_options(command: F) -> F:
    """Decorator: --seq-length, --global-batch-size, --micro-batch-size, --num-samples, --gpt-seed, --blend and
    --blend-samples."""
    options = [
        click.option("--seq-length", type=POSITIVE, default=None,
                     help="Language-model data: GPT samples of this many tokens (Megatron's --seq-length), planned "
                          "in Megatron's micro batches instead of batches of pairs."),
        click.option("--global-batch-size", type=POSITIVE, default=None,
                     help="GPT samples: samples per training step over all ranks."),
        click.option("--micro-batch-size", type=POSITIVE, default=1, show_default=True,
                     help="GPT samples: samples per rank per micro batch."),
        click.option("--num-samples", type=POSITIVE, default=None,
                     help="GPT samples: samples each dataset is built with (default: one epoch of its tokens)."),
        click.option("--gpt-seed", type=NON_NEGATIVE, default=GPTDatasetConfig.seed, show_default=True,
                     help="GPT samples: shuffle seed of the sample index (Megatron's --seed)."),
        click.option("--blend", nargs=2, type=(ABOVE_ZERO, str), multiple=True, metavar="WEIGHT PREFIX",
                     help="GPT samples: a Megatron blend; repeat for each store (prefix without .bin/.idx, under "
                          "DIRECTORY or from here)."),
        click.option("--blend-samples", type=POSITIVE, default=None,
                     help="GPT samples: samples in the blend (without it each WEIGHT is a whole sample count)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def gpt_setup(flags: Mapping[str, Any], pair_flags: Mapping[str, Any]) -> tuple[GPTSetup, GPTBatchConfig] | None:
    """The GPT samples and batches the flags ask for (None: no --seq-length nor --blend, translation pairs).
    ``pair_flags``: the flags only pairs take, by name with their values (None or False: not given)."""
    if flags["seq_length"] is None:
        if flags["blend"] or flags["global_batch_size"] is not None:
            raise ConfigError("--blend and --global-batch-size are for GPT samples: give --seq-length too")
        return None
    given = [name for name, value in pair_flags.items() if value not in (None, False)]
    if given:
        raise ConfigError(f"GPT samples (--seq-length) do not take {' or '.join(given)}, a setting of "
                          "translation pairs: drop it")
    if flags["global_batch_size"] is None:
        raise ConfigError("GPT samples are batched by --global-batch-size (samples per step over all ranks): give it")
    dataset = GPTDatasetConfig(seq_length=flags["seq_length"], seed=flags["gpt_seed"],
                               num_samples=flags["num_samples"])
    setup = GPTSetup(dataset, tuple((float(w), str(p)) for w, p in flags["blend"]), flags["blend_samples"])
    return setup, GPTBatchConfig(global_batch_size=flags["global_batch_size"],
                                 micro_batch_size=flags["micro_batch_size"])


def split_flags(flags: dict[str, Any]) -> dict[str, Any]:
    """Take the GPT flags out of ``flags`` (a command's keyword arguments) and return them."""
    return {name: flags.pop(name) for name in NAMES}


__all__ = ["NAMES", "gpt_options", "gpt_setup", "split_flags"]
