"""``tokenmill trace DIR --seq-length N --global-batch-size B ...``: Megatron GPT samples (or a blend of them,
``--blend``) traced to their input lines, and input lines to the micro batches that serve them.

``--step S --rank R``: one line per document piece of each sample of that micro batch: the row, the sample
id (through a blend: ``member M sample K``, the member's place in the blend and the sample id there), the
input ``file:line``, the token range taken from the stored document, and the line's text. ``--source
FILE:LINE``: each (epoch, micro step, rank, row) whose sample holds a piece of that line. The plan is
:mod:`tokenmill.loader.trace_gpt`'s, the one :func:`tokenmill.batches` serves for the same settings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tokenmill.batching.gpt_plan import GPTBatchConfig
from tokenmill.cache import CacheLike
from tokenmill.loader.gpt_open import GPTSetup, gpt_source
from tokenmill.loader.provenance import Served
from tokenmill.loader.trace import parse_source
from tokenmill.loader.trace_gpt import TracedSample, gpt_served, gpt_step, with_text


@dataclass(frozen=True)
class GPTTrace:
    """What to trace: a micro step (``step``, ``rank``) of ``epoch``, or a ``source`` line in ``epochs``."""

    epoch: int
    epochs: int
    step: int | None
    rank: int
    source: str | None
    text: bool
    as_json: bool


def _piece_lines(row: TracedSample) -> list[str]:
    which = f"{row.sample}" if row.member is None else f"{row.sample}\tmember {row.member} sample {row.member_sample}"
    return [f"{row.row}\t{which}\t{p.file}:{p.line}\t{p.start}-{p.stop}" + ("" if p.text is None else f"\t{p.text}")
            for p in row.pieces]


def _served_line(served: Served) -> str:
    return f"epoch {served.epoch}\tstep {served.step}\trank {served.rank}\trow {served.row}\tsample {served.sample}"


def trace_gpt_lines(directory: str, split: str, setup: GPTSetup, config: GPTBatchConfig, world_size: int,
                    cache: CacheLike, asked: GPTTrace) -> list[str]:
    """The command's output lines (module docstring)."""
    source = gpt_source(directory, setup, split=split, cache=cache)
    if asked.step is not None:
        rows = gpt_step(source, config, asked.epoch, asked.step, asked.rank, world_size)
        rows = with_text(rows) if asked.text else rows
        if asked.as_json:
            return [json.dumps(r.to_dict(), ensure_ascii=False) for r in rows]
        return [line for row in rows for line in _piece_lines(row)]
    file, line = parse_source(asked.source)  # type: ignore[arg-type]
    epochs = list(range(asked.epoch, asked.epoch + asked.epochs))
    found = gpt_served(source, config, file, line, epochs, world_size)
    if not found and not asked.as_json:
        return [f"{file}:{line} is in no sample served in pass(es) {epochs[0]}-{epochs[-1]} (dropped by cleaning, "
                "dedup or a filter, or only in the tail shorter than one global batch)"]
    return [json.dumps(s.to_dict()) if asked.as_json else _served_line(s) for s in found]


__all__ = ["GPTTrace", "trace_gpt_lines"]
