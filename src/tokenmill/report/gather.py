"""Every number of a report, gathered from a prepared directory into one JSON-able dict.

The dict is what ``tokenmill report --json`` prints and what the HTML page is drawn from, so the
page and the JSON can never disagree. Sections: ``overview``, ``parts`` (per split and direction:
sides, lengths, joint density, cleaning funnel and drop samples), ``directions`` (many
directions), ``batching`` (pairs), ``lm`` (monolingual data) and ``blend``; ``timings`` says
how long each took.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from tokenmill.data.multi_langtok import LangTokConfig
from tokenmill.data.multi_layout import manifest_lang_token_format
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import PairDataset
from tokenmill.errors import TokenmillError
from tokenmill.report.batching import preview
from tokenmill.report.cleaning import cleaning
from tokenmill.report.corpus import Vocabularies, part_numbers
from tokenmill.report.forked import Forked
from tokenmill.report.layout import DataDir, open_data_dir
from tokenmill.report.lm import blend_numbers, lm_numbers
from tokenmill.report.mix import directions_section
from tokenmill.report.options import ReportOptions
from tokenmill.report.overview import overview
from tokenmill.store.reader import IndexedDataset

REPORT_FORMAT = 1


class _Clock:
    """Seconds spent per section."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._last
        self._last = now


def _parts(data: DataDir, options: ReportOptions) -> list[dict[str, Any]]:
    """The numbers of each store of ``data`` (a split, of a direction), with its split's cleaning funnel."""
    vocabularies = Vocabularies(data.root)
    parts = []
    for i, part in enumerate(data.parts):
        numbers, _ = part_numbers(data, part, vocabularies, options.token_sample, options.seed + i)
        numbers["cleaning"] = cleaning(
            data.root, data.manifest.summary, part.split, part.direction if data.kind == "multilingual" else None
        )
        parts.append(numbers)
    return parts


def gather(
    directory: str | Path,
    options: ReportOptions | None = None,
    *,
    parallel: bool = True,
    meanwhile: Callable[[], object] | None = None,
    early: Callable[[dict[str, Any], Callable[[], bool]], object] | None = None,
) -> dict[str, Any]:
    """All the report's numbers for ``directory`` (a directory ``tokenmill prepare`` wrote).

    The batching preview (or the LM numbers) and the blend are computed in a forked child
    (:mod:`~tokenmill.report.forked`) while this process does the overview (checksums included),
    the data and cleaning sections and then ``meanwhile`` (the page passes matplotlib's import and
    warm-up), then ``early(report so far, busy)``: work on the sections already known for as long as
    ``busy()`` says the child still works (the page draws their charts; without a child ``busy()`` is
    False at once); ``parallel=False`` computes everything here, in turn. The numbers are the same
    either way (``timings`` adds ``meanwhile``, ``early`` and ``wait``, the time spent waiting for
    the child)."""
    options = options or ReportOptions()
    began = time.perf_counter()
    clock = _Clock()
    data = open_data_dir(directory)
    background = Forked(partial(_background, data, options), parallel=parallel)
    try:
        report: dict[str, Any] = {
            "format": "tokenmill-report",
            "format_version": REPORT_FORMAT,
            "directory": str(data.root),
            "kind": data.kind,
            "options": options.to_dict(),
            "overview": overview(data, options.verify),
        }
        clock.lap("overview")
        report["parts"] = _parts(data, options)
        clock.lap("parts")
        report["directions"] = None
        if data.kind == "multilingual":
            report["directions"] = directions_section(data, _multilingual(data), options.temperatures, options.seed)
            clock.lap("directions")
        if meanwhile is not None:
            meanwhile()
            clock.lap("meanwhile")
        if early is not None:
            early(report, background.running)
            clock.lap("early")
        late = background.result()
    except BaseException:
        background.cancel()
        raise
    clock.lap("wait")
    report["batching"], report["lm"], report["blend"] = late["batching"], late["lm"], late["blend"]
    report["timings"] = {**clock.seconds, **late["seconds"]}
    report["seconds"] = time.perf_counter() - began
    return report


def _background(data: DataDir, options: ReportOptions) -> dict[str, Any]:
    """The sections :func:`gather` computes beside the others: batching (or LM) and blend."""
    clock = _Clock()
    out: dict[str, Any] = {"batching": None, "lm": None, "blend": None}
    if data.kind == "multilingual":
        multilingual = _multilingual(data)
        if multilingual is not None:
            what = f"train, {len(data.directions)} directions"
            out["batching"] = _safe(partial(preview, multilingual, options, what))
    elif data.kind == "pairs":
        pairs, what = _pairs(data)
        if pairs is not None:
            out["batching"] = _safe(partial(preview, pairs, options, what))
    else:
        out["lm"] = {
            "seq_length": options.seq_length,
            "splits": [
                {"split": part.split,
                 **lm_numbers([IndexedDataset(data.root / p, check_pointers=False)
                               for p in part.stores[part.langs[0]]], options.seq_length)}
                for part in data.parts
            ],
        }
    clock.lap("batching" if data.kind != "monolingual" else "lm")
    out["blend"] = blend_numbers(options.blend, options.seq_length, options.blend_samples, data.root) \
        if options.blend else None
    clock.lap("blend")
    out["seconds"] = clock.seconds
    return out


def _safe(build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A section that cannot be computed for this data shows why instead of failing the report."""
    try:
        return build()
    except TokenmillError as error:
        return {"error": str(error)}


def _pairs(data: DataDir) -> tuple[PairDataset | None, str]:
    """Train (else the first split) of a single direction, from the shard epoch 1 reads."""
    part = data.part("train") or (data.parts[0] if data.parts else None)
    if part is None:
        return None, ""
    shard = None
    where = ""
    if part.shards and part.shards[0]:
        shard = int(part.shards[0].removeprefix("shard"))
        where = f", {part.shards[0]} (read in epoch 1)"
    src, tgt = part.langs
    dataset = PairDataset.from_dir(data.root, part.split, src_lang=src, tgt_lang=tgt, shard=shard,
                                   alignments=False, check_pointers=False)
    return dataset, f"{part.split} {src}-{tgt}{where}"


def _multilingual(data: DataDir) -> MultiPairDataset | None:
    """The train split of every direction with the language tags prepare recorded."""
    if not any(p.split == "train" for p in data.parts):
        return None
    template = manifest_lang_token_format(data.root) or LangTokConfig.template
    return MultiPairDataset.from_dir(data.root, "train", data.directions, langtok=LangTokConfig(template=template),
                                     check_pointers=False)


__all__ = ["REPORT_FORMAT", "gather"]
