"""``tokenmill batches DIR``: what an epoch will look like before training starts.

Computes (or maps from the plan cache) the batch plan of one epoch and prints batches per rank,
samples and tokens, padding, what the length filter and the budget dropped and why, and how long
the plan took — as a table, or as one JSON object with ``--json``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from tokenmill.batching.config import BatchConfig
from tokenmill.commands.batches_gpt import GPTView, gpt_lines, gpt_report
from tokenmill.commands.gpt_options import gpt_options, gpt_setup
from tokenmill.commands.ledger_view import state_ledger
from tokenmill.commands.params import direction_weights as _weights
from tokenmill.commands.plan_options import ABOVE_ZERO, POSITIVE, pack_config, pack_options, plan_options
from tokenmill.commands.schedule_flag import check_directions, mix_view, scheduled
from tokenmill.data.multi_langtok import LangTokConfig
from tokenmill.data.multi_layout import manifest_lang_token_format
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import PairDataset, PairOptions
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import ConfigError
from tokenmill.loader.ledger import describe as describe_ledger
from tokenmill.loader.make import make_batches
from tokenmill.store.layout import FolderContents, describe
from tokenmill.store.manifest import refuse_non_manifest


def _pairs_or_refuse(directory: str) -> FolderContents:
    """What ``directory`` holds; refused, saying what it is and what to do, when it holds no translation pairs
    (language-model data, raw text, nothing) or its ``manifest.json`` is no manifest at all (as ``open`` does)."""
    contents = describe(directory)
    if contents.kind in ("monolingual", "megatron"):
        raise ConfigError(
            f"{contents.what()}: its GPT samples are planned with --seq-length N --global-batch-size B (and "
            "--micro-batch-size, as training's)"
        )
    if contents.kind in ("text", "empty"):
        raise ConfigError(f"{contents.what()}; run tokenmill prepare on it first and give its --destdir here")
    refuse_non_manifest(contents.path)
    return contents


def _row(label: str, value: object) -> str:
    return f"  {label:<28} {value}"


@click.command()
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@plan_options("Split to look at.")
@click.option("--epoch", type=POSITIVE, default=1, show_default=True, help="Epoch to plan (1-based).")
@click.option(
    "--required-batch-size-multiple", type=POSITIVE, default=1, show_default=True, help="Rows multiple (8 for fp16)."
)
@click.option(
    "--pad-to-multiple", type=POSITIVE, default=1, show_default=True, help="Pad lengths to a multiple of this."
)
@click.option(
    "--batch-penalty", type=click.FloatRange(0, 1), default=BatchConfig.batch_penalty, show_default=True,
    help="lowpad: price of one more batch as a fraction of --max-tokens pad slots (0: fewest batches).",
)
@click.option("--max-source-positions", type=POSITIVE, default=None, help="Drop pairs with longer sources.")
@click.option("--max-target-positions", type=POSITIVE, default=None, help="Drop pairs with longer targets.")
@click.option("--drop-last", is_flag=True, help="Drop batches that do not fill the last step instead of splitting.")
@click.option(
    "--cache-dir", type=click.Path(file_okay=False), default=None, help="Plan cache folder (default: ~/.cache)."
)
@click.option("--no-cache", is_flag=True, help="Compute the plan without reading or writing the cache.")
@pack_options("; compared with unpacked batching.")
@click.option(
    "--directions", default=None,
    help="Many directions (a data_bin from prepare --directions): which ones, comma-separated (default: all).",
)
@click.option("--temperature", type=ABOVE_ZERO, default=None, help="Many directions: sample p ∝ n^(1/T) (default 1).")
@click.option("--weights", default=None, help="Many directions: explicit weights instead, e.g. a-b=2,c-d=1.")
@click.option(
    "--weights-schedule", default=None,
    help="Many directions: weights that follow the training step, linear in between: "
         "STEP:a-b=w,c-d=w;STEP:... or a YAML file (step: {direction: weight}).",
)
@click.option("--schedule-every", type=POSITIVE, default=None,
              help="With --weights-schedule: steps between two re-draws of the mix (default 1000).")
@click.option("--virtual-size", type=POSITIVE, default=None, help="Many directions: items per virtual epoch.")
@click.option(
    "--virtual-epoch-size", type=POSITIVE, default=None, help="Many directions: consume it in slices this big."
)
@click.option("--upsample-primary", type=POSITIVE, default=None, help="Many directions: fairseq ConcatDataset ratio.")
@click.option(
    "--encoder-langtok", type=click.Choice(["src", "tgt", "none"]), default="src", show_default=True,
    help="Many directions: language tag first in the source.",
)
@click.option(
    "--decoder-langtok/--no-decoder-langtok", default=True, show_default=True,
    help="Many directions: target-language tag first in the target.",
)
@click.option(
    "--langtok-template", default=None,
    help="Many directions: how a language code becomes a token (default: what prepare recorded, else __{lang}__).",
)
@click.option(
    "--state", "state_file", type=click.Path(exists=True, dir_okay=False), default=None,
    help="A saved iterator state (JSON): also print its consumption ledger (per source, samples and tokens served).",
)
@click.option(
    "--allow-mix-change", is_flag=True,
    help="With --state: accept a state saved under another mix (weights, temperature, directions on or off).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@gpt_options
# Longer than 60 lines only by its signature: one parameter per click option above, one a line.
def batches(
    directory: str,
    split: str,
    src_lang: str | None,
    tgt_lang: str | None,
    shard: int | None,
    max_tokens: int,
    max_sentences: int | None,
    mode: str,
    world_size: int,
    seed: int,
    epoch: int,
    required_batch_size_multiple: int,
    pad_to_multiple: int,
    batch_penalty: float,
    max_source_positions: int | None,
    max_target_positions: int | None,
    drop_last: bool,
    cache_dir: str | None,
    no_cache: bool,
    pack_length: int | None,
    pack_strategy: str,
    directions: str | None,
    temperature: float | None,
    weights: str | None,
    weights_schedule: str | None,
    schedule_every: int | None,
    virtual_size: int | None,
    virtual_epoch_size: int | None,
    upsample_primary: int | None,
    encoder_langtok: str,
    decoder_langtok: bool,
    langtok_template: str | None,
    state_file: str | None,
    allow_mix_change: bool,
    as_json: bool,
    **gpt_flags: Any,
) -> None:
    """Show how DIRECTORY's SPLIT will be cut into batches for one epoch, per rank.

    A data_bin of many directions (``prepare --directions``) shows the epoch's sampled mix: the
    shard each direction reads, its size, weight, expected and drawn samples, and epochs over its data.
    """
    began = time.perf_counter()
    cache: str | bool = False if no_cache else (cache_dir if cache_dir is not None else True)
    gpt = gpt_setup(gpt_flags, {"--src": src_lang, "--tgt": tgt_lang, "--shard": shard, "--directions": directions,
                                "--temperature": temperature, "--weights": weights, "--weights-schedule":
                                weights_schedule, "--pack-length": pack_length, "--virtual-size": virtual_size})
    if gpt is not None:
        report = gpt_report(GPTView(directory, split, epoch, world_size, cache), *gpt, state_file, allow_mix_change)
        click.echo(json.dumps(report, sort_keys=True) if as_json else "\n".join(gpt_lines(report)))
        return
    contents = _pairs_or_refuse(directory)
    options = PairOptions(max_source_positions=max_source_positions, max_target_positions=max_target_positions)
    multilingual = directions is not None or (src_lang is None and tgt_lang is None and contents.kind == "multilingual")
    config = BatchConfig(
        mode=mode,
        max_tokens=max_tokens,
        max_sentences=max_sentences,
        required_batch_size_multiple=required_batch_size_multiple,
        pad_to_multiple=pad_to_multiple,
        batch_penalty=batch_penalty,
        seed=seed,
        drop_last=drop_last,
    )
    mix = mix_table = None
    if multilingual:
        sampling, langtok = _mix_settings(
            directory, split, shard, seed, (temperature, weights, virtual_size, virtual_epoch_size, upsample_primary,
                                            weights_schedule, schedule_every),
            (encoder_langtok, decoder_langtok, langtok_template),
        )
        dataset: PairDataset | MultiPairDataset = MultiPairDataset.from_dir(
            directory, split, directions.split(",") if directions else None, langtok=langtok, options=options
        )
        check_directions(sampling, dataset.directions)
        iterator = make_batches(
            dataset, config, sampling=sampling if split == "train" else None, world_size=world_size, collate=None,
            cache=cache,
        )
        mix, mix_table = mix_view(iterator, epoch)
    else:
        dataset = PairDataset.from_dir(
            directory, split, src_lang=src_lang, tgt_lang=tgt_lang, options=options, shard=shard
        )
        iterator = make_batches(dataset, config, world_size=world_size, cache=cache, collate=None)
    stats = iterator.plan(epoch).stats
    unpacked_padding = None
    if pack_length is not None:
        unpacked_padding = stats.padding_fraction
        pack = pack_config(pack_length, pack_strategy, max_tokens, max_sentences, seed, drop_last)
        packed = make_batches(dataset, pack=pack, sampling=iterator.planner.sampling if multilingual else None,  # type: ignore[attr-defined]
                              world_size=world_size, cache=cache, collate=None)
        stats = packed.plan(epoch).stats
    shown = _Shown(directory, split, epoch, mode, world_size, dataset, multilingual, stats, pack_length,
                   pack_strategy, unpacked_padding)
    report = shown.report(config, time.perf_counter() - began)
    if mix is not None:
        report["mix"] = mix
    if state_file is not None:
        report["ledger"] = state_ledger(packed if pack_length else iterator, state_file, allow_mix_change)
    if as_json:
        click.echo(json.dumps(report, sort_keys=True))
        return
    click.echo("\n".join(shown.lines(mix_table, report)))


def _mix_settings(
    directory: str, split: str, shard: int | None, seed: int, flags: tuple[Any, ...], langtok_flags: tuple[Any, ...]
) -> tuple[SamplingConfig, LangTokConfig]:
    """The sampling settings (``flags``: temperature, weights, virtual size, virtual epoch size, upsample primary,
    weights schedule, schedule every) and the language tokens (``langtok_flags``: encoder, decoder, template) of a
    many-direction epoch."""
    temperature, weights, virtual_size, virtual_epoch_size, upsample_primary, weights_schedule, every = flags
    if split != "train" and any(flag is not None for flag in flags):
        raise ConfigError(f"sampling settings apply to train; {split} uses every pair once (drop them)")
    if shard is not None:
        raise ConfigError("--shard is for one direction: with many directions epoch e reads shard (e-1) mod k")
    sampling = SamplingConfig(
        temperature=1.0 if temperature is None else temperature, weights=_weights(weights),
        virtual_size=virtual_size, virtual_epoch_size=virtual_epoch_size, upsample_primary=upsample_primary,
        seed=seed,
    )
    sampling = scheduled(sampling, weights_schedule, every, {"--weights": weights, "--temperature": temperature,
                                                             "--upsample-primary": upsample_primary})
    encoder_langtok, decoder_langtok, langtok_template = langtok_flags
    template = langtok_template or manifest_lang_token_format(Path(directory)) or LangTokConfig.template
    return sampling, LangTokConfig(None if encoder_langtok == "none" else encoder_langtok, decoder_langtok, template)


@dataclass(frozen=True)
class _Shown:
    """One epoch's plan as ``tokenmill batches`` shows it: the JSON report and the table's lines."""

    directory: str
    split: str
    epoch: int
    mode: str
    world_size: int
    dataset: PairDataset | MultiPairDataset
    multilingual: bool
    stats: Any
    """The plan's statistics (of the packed plan with --pack-length)."""
    pack_length: int | None
    pack_strategy: str
    unpacked_padding: float | None

    def report(self, config: BatchConfig, elapsed: float) -> dict[str, Any]:
        """The JSON report (``mix`` and ``ledger`` are added by the caller)."""
        stats = self.stats
        report = {
            "directory": self.directory,
            "split": self.split,
            "source_lang": None if self.multilingual else self.dataset.src_lang,  # type: ignore[union-attr]
            "target_lang": None if self.multilingual else self.dataset.tgt_lang,  # type: ignore[union-attr]
            "epoch": self.epoch,
            "mode": self.mode,
            "world_size": self.world_size,
            "config": config.to_dict(),
            "num_pairs": len(self.dataset),
            "num_samples": stats.num_samples,
            "num_dropped": stats.num_dropped,
            "dropped": stats.dropped,
            "num_batches": stats.num_batches,
            "num_batches_per_rank": stats.num_batches_per_rank,
            "src_tokens": stats.src_tokens,
            "tgt_tokens": stats.tgt_tokens,
            "tokens_per_rank": stats.tokens_per_rank,
            "padded_tokens": stats.padded_tokens,
            "padding_fraction": stats.padding_fraction,
            "splits": stats.splits,
            "merges": stats.merges,
            "plan_seconds": stats.seconds,
            "plan_cached": stats.cached,
            "seconds": elapsed,
        }
        if self.pack_length is not None:
            report.update(packed=stats.extra, unpacked_padding_fraction=self.unpacked_padding)
        return report

    def lines(self, mix_table: str | None, report: dict[str, Any]) -> list[str]:
        """The table: what was planned, the counts, the packing, the times, the ledger when a state was given."""
        stats = self.stats
        tokens = stats.tokens_per_rank
        dropped = ", ".join(f"{reason} {count}" for reason, count in sorted(stats.dropped.items())) or "none"
        dataset = self.dataset
        what = (f"{len(dataset.directions)} directions" if self.multilingual  # type: ignore[union-attr]
                else f"{dataset.src_lang}-{dataset.tgt_lang}")  # type: ignore[union-attr]
        lines = [
            f"{self.directory} {self.split} ({what}), epoch {self.epoch}, mode {self.mode}, "
            f"world size {self.world_size}",
            *([mix_table, ""] if mix_table is not None else []),
            _row("pairs in split", f"{len(dataset):,}"),
            _row("samples this epoch", f"{stats.num_samples:,}"),
            _row("dropped", f"{stats.num_dropped:,} ({dropped})"),
            _row("batches", f"{stats.num_batches:,}"),
            _row("batches per rank", f"{stats.num_batches_per_rank[0]:,} on each of {self.world_size} rank(s)"),
            _row("tokens (source / target)", f"{stats.src_tokens:,} / {stats.tgt_tokens:,}"),
            _row("tokens per rank (min-max)", f"{min(tokens):,} - {max(tokens):,}"),
            _row("padding", f"{stats.padding_fraction:.2%} of {stats.padded_tokens:,} slots"),
            _row("batches split / merged", f"{stats.splits} / {stats.merges}"),
        ]
        if self.pack_length is not None:
            lines += [
                _row("packed rows", f"{stats.extra['rows']:,} of {self.pack_length} tokens, "
                                    f"{stats.extra['pairs_per_row']:.2f} pairs per row ({self.pack_strategy})"),
                _row("padding unpacked", f"{self.unpacked_padding:.2%} (mode {self.mode}, same split and budget)"),
            ]
        lines += [
            _row("plan", f"mapped from the cache (computing it took {stats.seconds:.2f} s)" if stats.cached
                 else f"computed in {stats.seconds:.2f} s"),
            _row("total", f"{report['seconds']:.2f} s"),
        ]
        if "ledger" in report:
            lines += ["", describe_ledger(report["ledger"])]
        return lines

