"""``tokenmill trace DIR``: the input lines of one batch, or the batches that serve one input line.

``--epoch E --step S --rank R``: every row of that batch with its input file, line and text.
``--source FILE:LINE``: every (epoch, step, rank, row) at which that line is served. With ``--pack-length``
(pairs packed into rows, as ``tokenmill batches --pack-length``) each pair also has its position in its row.
Both read the epoch's
plan (from the plan cache when it is there) and the stores' provenance maps; the batching settings must be
training's (they are those of ``tokenmill batches``). With ``--weights-schedule`` the epoch's plan is the
schedule's chain of mix segments, the one the scheduled iterator serves. With ``--seq-length`` (language-model
data, or a ``--blend`` of stores) the rows are Megatron GPT samples (:mod:`tokenmill.commands.trace_gpt`).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from tokenmill.batching.config import BatchConfig
from tokenmill.commands.gpt_options import gpt_options, gpt_setup, split_flags
from tokenmill.commands.params import direction_weights
from tokenmill.commands.plan_options import ABOVE_ZERO, NON_NEGATIVE, POSITIVE, pack_config, pack_options, plan_options
from tokenmill.commands.schedule_flag import scheduled
from tokenmill.commands.trace_gpt import GPTTrace, trace_gpt_lines
from tokenmill.data.multi_langtok import LangTokConfig
from tokenmill.data.multi_layout import manifest_lang_token_format
from tokenmill.data.pairs import PairOptions
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import ConfigError
from tokenmill.loader.trace import Served, TracedRow, TraceSettings, parse_source, served_at, step_rows, trace_iterator

_PAIR_ONLY = ("src_lang", "tgt_lang", "shard", "directions", "temperature", "weights", "weights_schedule",
              "virtual_size", "pack_length")
"""Flags of translation pairs that GPT samples refuse (by parameter name)."""


def _settings(directory: str, flags: dict) -> TraceSettings:
    """The plan's settings from the command's flags (the same names as ``tokenmill batches``)."""
    config = BatchConfig(mode=flags["mode"], max_tokens=flags["max_tokens"], max_sentences=flags["max_sentences"],
                         required_batch_size_multiple=flags["required_batch_size_multiple"],
                         pad_to_multiple=flags["pad_to_multiple"], batch_penalty=flags["batch_penalty"],
                         seed=flags["seed"], drop_last=flags["drop_last"])
    sampled = [flags[name] for name in ("temperature", "weights", "virtual_size", "virtual_epoch_size",
                                        "weights_schedule", "schedule_every")]
    sampling = None if all(v is None for v in sampled) else scheduled(SamplingConfig(
        temperature=flags["temperature"] or 1.0, weights=direction_weights(flags["weights"]),
        virtual_size=flags["virtual_size"], virtual_epoch_size=flags["virtual_epoch_size"], seed=flags["seed"]),
        flags["weights_schedule"], flags["schedule_every"],
        {"--weights": flags["weights"], "--temperature": flags["temperature"]})
    from_manifest = manifest_lang_token_format(Path(directory))
    template = flags["langtok_template"] or from_manifest or LangTokConfig.template
    encoder = None if flags["encoder_langtok"] == "none" else flags["encoder_langtok"]
    options = PairOptions(max_source_positions=flags["max_source_positions"],
                          max_target_positions=flags["max_target_positions"])
    cache = False if flags["no_cache"] else (flags["cache_dir"] or True)
    directions = flags["directions"].split(",") if flags["directions"] else None
    return TraceSettings(split=flags["split"], config=config, world_size=flags["world_size"], sampling=sampling,
                         directions=directions, langtok=LangTokConfig(encoder, flags["decoder_langtok"], template),
                         options=options, src_lang=flags["src_lang"], tgt_lang=flags["tgt_lang"],
                         shard=flags["shard"], cache=cache,
                         pack=pack_config(flags["pack_length"], flags["pack_strategy"], config.max_tokens,
                                          config.max_sentences, config.seed, config.drop_last))


def _row_line(row: TracedRow) -> str:
    where = f"{row.file}:{row.line}" + (f" ({row.direction})" if row.direction else "")
    text = "" if row.source is None else "\t" + row.source + ("" if row.target is None else "\t" + row.target)
    place = "" if row.position is None else f"\t{row.position}"
    return f"{row.row}{place}\t{where}{text}"


def _served_line(served: Served) -> str:
    place = "" if served.position is None else f"\tposition {served.position}"
    return f"epoch {served.epoch}\tstep {served.step}\trank {served.rank}\trow {served.row}{place}"


@click.command()
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--epoch", type=POSITIVE, default=1, show_default=True, help="Epoch of --step; first epoch of --source.")
@click.option("--epochs", type=POSITIVE, default=1, show_default=True, help="--source: how many epochs to look in.")
@click.option("--step", type=NON_NEGATIVE, default=None, help="The step (0-based) whose batch to trace.")
@click.option("--rank", type=NON_NEGATIVE, default=0, show_default=True, help="The rank whose batch to trace.")
@click.option("--source", "source_line", default=None, help="FILE:LINE of an input file: where is it served?")
@click.option("--text/--no-text", default=True, show_default=True, help="--step: print each row's input text.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per row instead of text.")
@plan_options("Split the batches come from.")
@click.option("--required-batch-size-multiple", type=POSITIVE, default=1, show_default=True, help="Rows multiple.")
@click.option("--pad-to-multiple", type=POSITIVE, default=1, show_default=True, help="Pad lengths to a multiple.")
@click.option("--batch-penalty", type=click.FloatRange(0, 1), default=BatchConfig.batch_penalty, show_default=True,
              help="lowpad: price of one more batch as a fraction of --max-tokens pad slots.")
@click.option("--max-source-positions", type=POSITIVE, default=None, help="Drop pairs with longer sources.")
@click.option("--max-target-positions", type=POSITIVE, default=None, help="Drop pairs with longer targets.")
@click.option("--drop-last", is_flag=True, help="Drop batches that do not fill the last step.")
@pack_options(" as training does; each pair is then also given its position in its row.")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None, help="Plan cache folder.")
@click.option("--no-cache", is_flag=True, help="Compute the plan without reading or writing the cache.")
@click.option("--directions", default=None, help="Many directions: which ones, comma-separated (default: all).")
@click.option("--temperature", type=ABOVE_ZERO, default=None, help="Many directions: sample p ∝ n^(1/T).")
@click.option("--weights", default=None, help="Many directions: explicit weights, e.g. a-b=2,c-d=1.")
@click.option("--weights-schedule", default=None, help="Many directions: weights that follow the training step, "
              "as tokenmill batches takes them (STEP:a-b=w,...;STEP:... or a YAML file).")
@click.option("--schedule-every", type=POSITIVE, default=None,
              help="With --weights-schedule: steps between two re-draws of the mix (default 1000).")
@click.option("--virtual-size", type=POSITIVE, default=None, help="Many directions: items per virtual epoch.")
@click.option("--virtual-epoch-size", type=POSITIVE, default=None, help="Many directions: slices this big.")
@click.option("--encoder-langtok", type=click.Choice(["src", "tgt", "none"]), default="src", show_default=True,
              help="Many directions: language tag first in the source.")
@click.option("--decoder-langtok/--no-decoder-langtok", default=True, show_default=True,
              help="Many directions: target-language tag first in the target.")
@click.option("--langtok-template", default=None, help="Many directions: how a language code becomes a token.")
@gpt_options
def trace(directory: str, epoch: int, epochs: int, step: int | None, rank: int, source_line: str | None, text: bool,
          as_json: bool, **flags: object) -> None:
    """Show the input file, line and text of every row of one batch, or where one input line is served.

    With --epoch E --step S --rank R: every row of that batch (file:line, then the text). With
    --source FILE:LINE: each epoch, step, rank and row at which that line is served, in --epochs epochs from
    --epoch (nothing when cleaning, dedup or a filter dropped it). Give the batching settings training uses.
    With --pack-length (packed rows): every pair of every row, the row then its position in the row.
    With --seq-length (GPT samples of language-model data, or a --blend of stores): one line per document
    piece of each sample: row, sample, file:line, token range and text.
    """
    if (step is None) == (source_line is None):
        raise ConfigError("give --step S (with --epoch and --rank) or --source FILE:LINE, one of the two")
    gpt = gpt_setup(split_flags(flags), {f"--{k.replace('_', '-')}": flags[k] for k in _PAIR_ONLY})
    if gpt is not None:
        if rank >= flags["world_size"]:  # type: ignore[operator]
            raise ConfigError(f"--rank {rank} is outside --world-size {flags['world_size']}")
        cache = False if flags["no_cache"] else (flags["cache_dir"] or True)
        asked = GPTTrace(epoch, epochs, step, rank, source_line, text, as_json)
        click.echo("\n".join(trace_gpt_lines(directory, flags["split"], *gpt, flags["world_size"], cache, asked)))  # type: ignore[arg-type]
        return
    iterator = trace_iterator(directory, _settings(directory, flags))
    if rank >= iterator.world_size:
        raise ConfigError(f"--rank {rank} is outside --world-size {iterator.world_size}")
    if step is not None:
        rows = step_rows(iterator, epoch, step, rank, text=text)
        click.echo("\n".join(json.dumps(r.to_dict(), ensure_ascii=False) if as_json else _row_line(r) for r in rows))
        return
    file, line = parse_source(source_line)  # type: ignore[arg-type]
    found = served_at(iterator, file, line, list(range(epoch, epoch + epochs)))
    if not found:
        click.echo(f"{file}:{line} is not served in epoch(s) {epoch}-{epoch + epochs - 1} "
                   "(dropped by cleaning, dedup or a filter, by the plan (longer than --max-source-positions, "
                   "--max-target-positions or a packed row), or in another shard's epochs)")
    click.echo("\n".join(json.dumps(s.to_dict()) if as_json else _served_line(s) for s in found))
