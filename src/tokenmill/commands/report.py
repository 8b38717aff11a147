"""``tokenmill report DIR``: one self-contained HTML page on what a prepared directory holds and what
the pipeline did to it (``--json``: the same numbers for scripts). See :mod:`tokenmill.report`."""

from __future__ import annotations

import time
from pathlib import Path

import click

from tokenmill.batching.config import MODES
from tokenmill.commands.params import number
from tokenmill.errors import ConfigError, opening
from tokenmill.fsutil import atomic_write
from tokenmill.report import ReportOptions, default_output, gather, gather_for_page, render_html, to_json
from tokenmill.report.options import DEFAULT_TEMPERATURES
from tokenmill.settings import Range
from tokenmill.store.manifest import MANIFEST_NAME, read_manifest

POSITIVE = number(int, Range(1))
ABOVE_ZERO = number(float, Range(0, open_low=True))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as handle:
        handle.write(text)


@click.command("report")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Where to write the page (default: DIRECTORY/report.html).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the numbers as one JSON object; the page is written only when -o is given too.")
@click.option("--max-tokens", type=POSITIVE, default=4096, show_default=True,
              help="Batching preview: token budget per batch and side.")
@click.option("--world-size", type=POSITIVE, default=1, show_default=True, help="Batching preview: number of ranks.")
@click.option("--mode", type=click.Choice(MODES), default="lowpad", show_default=True,
              help="Batching preview: the mode shown in detail (padding is shown for every mode).")
@click.option("--pack-length", type=POSITIVE, default=None,
              help="Batching preview: tokens per packed row (default: next power of two above the 99th percentile).")
@click.option("--temperature", "temperatures", type=ABOVE_ZERO, multiple=True,
              help="Many directions: sampling temperature(s) to show, repeatable (default 1, 5, 100); the first "
                   "one drives the batching preview.")
@click.option("--seq-length", type=POSITIVE, default=2048, show_default=True,
              help="LM data: tokens per GPT sample.")
@click.option("--blend", nargs=2, type=(ABOVE_ZERO, str), multiple=True, metavar="WEIGHT PREFIX",
              help="LM data: preview a Megatron blend; repeat for each dataset (store prefix without .bin/.idx).")
@click.option("--blend-samples", type=POSITIVE, default=None,
              help="LM data: samples in the blend (default: one epoch of every dataset together).")
@click.option("--token-sample", type=POSITIVE, default=2_000_000, show_default=True,
              help="Tokens read per store for token frequencies (all of them when the store is smaller).")
@click.option("--verify/--no-verify", default=True, show_default=True,
              help="Recompute every checksum for the overview (reads every file once).")
@click.option("--seed", type=number(int, Range(0)), default=1, show_default=True,
              help="Seed of the batching order and of the token sample.")
def report(
    directory: str,
    output: str | None,
    as_json: bool,
    max_tokens: int,
    world_size: int,
    mode: str,
    pack_length: int | None,
    temperatures: tuple[float, ...],
    seq_length: int,
    blend: tuple[tuple[float, str], ...],
    blend_samples: int | None,
    token_sample: int,
    verify: bool,
    seed: int,
) -> None:
    """Write one self-contained HTML page on DIRECTORY (a directory tokenmill prepare wrote).

    The page shows what produced the data (settings, tokenizer, vocabulary, stage times, checksum
    status, sizes), per split and language the counts, length histograms, source-vs-target
    length density, most frequent tokens and unused vocabulary, the cleaning funnel with samples
    of what each step dropped, the sampled mix of many directions, a batching preview for the
    given settings, and for language-model data documents and GPT samples. It needs no network:
    open it from disk in any browser.
    """
    began = time.perf_counter()
    fix = "report reads a directory written by tokenmill prepare (its manifest.json lists the files)"
    with opening(Path(directory) / MANIFEST_NAME, "a tokenmill manifest", fix):
        read_manifest(directory)
    options = ReportOptions(
        max_tokens=max_tokens, world_size=world_size, mode=mode, pack_length=pack_length,
        temperatures=tuple(temperatures) or DEFAULT_TEMPERATURES, seq_length=seq_length, blend=tuple(blend),
        blend_samples=blend_samples, token_sample=token_sample, verify=verify, seed=seed,
    )
    if as_json and output is None:
        click.echo(to_json(gather(directory, options)))
        return
    numbers, drawn = gather_for_page(directory, options)
    try:
        page = render_html(numbers, options, drawn=drawn)
    except ImportError as error:
        raise ConfigError(
            f"the report's charts need matplotlib ({error}); install it with: pip install 'tokenmill[report]'"
        ) from None
    path = Path(output) if output is not None else default_output(directory)
    _write(path, page)
    if as_json:
        click.echo(to_json(numbers))
        return
    click.echo(f"report: {path} ({len(page) / 1024:,.0f} KiB, {time.perf_counter() - began:.1f} s); "
               f"open it in a browser: {path.resolve().as_uri()}")


__all__ = ["report"]
