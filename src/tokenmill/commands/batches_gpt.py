"""``tokenmill batches DIR --seq-length N --global-batch-size B``: one pass of Megatron GPT micro batches
over language-model data (or a blend of stores, ``--blend``) before training starts: samples, steps, micro
batches per rank, the blend's members, and with ``--state`` the consumption ledger of a saved state (per
member, samples and tokens served in this pass and in all passes so far)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tokenmill.batching.gpt_plan import GPTBatchConfig
from tokenmill.cache import CacheLike
from tokenmill.commands.ledger_view import state_ledger
from tokenmill.data.blending import BlendedDataset
from tokenmill.loader.gpt_open import GPTSetup, gpt_source
from tokenmill.loader.iterator import gpt_batches
from tokenmill.loader.ledger import describe as describe_ledger


@dataclass(frozen=True)
class GPTView:
    """Where and how to plan: the directory and split, the pass, the ranks and the plan cache."""

    directory: str
    split: str
    epoch: int
    world_size: int
    cache: CacheLike


def gpt_report(view: GPTView, setup: GPTSetup, config: GPTBatchConfig, state_file: str | None,
               allow_mix_change: bool) -> dict[str, Any]:
    """The pass as one JSON-able report (``ledger`` with a state)."""
    source = gpt_source(view.directory, setup, split=view.split, cache=view.cache)
    iterator = gpt_batches(source, config, world_size=view.world_size)
    planner, plan = iterator.planner, iterator.plan(view.epoch)
    report: dict[str, Any] = {
        "directory": view.directory, "split": view.split, "epoch": view.epoch, "world_size": view.world_size,
        "config": config.to_dict(), "seq_length": setup.dataset.seq_length, "data": source.describe(),
        "num_samples": len(source), "samples_per_pass": planner.total,  # type: ignore[attr-defined]
        "steps": planner.total // config.global_batch_size,  # type: ignore[attr-defined]
        "micro_batches_per_step": planner.micro_steps,  # type: ignore[attr-defined]
        "micro_batches_per_rank": plan.num_steps,
    }
    if isinstance(source, BlendedDataset):
        drawn = np.bincount(np.asarray(source.dataset_index), minlength=len(source.datasets)).tolist()
        report["members"] = [{"prefix": str(d.dataset.prefix), "weight": w, "samples": int(n)}
                             for d, (w, _), n in zip(source.datasets, setup.blend, drawn, strict=True)]
    if state_file is not None:
        report["ledger"] = state_ledger(iterator, state_file, allow_mix_change)
    return report


def _row(label: str, value: object) -> str:
    return f"  {label:<28} {value}"


def gpt_lines(report: dict[str, Any]) -> list[str]:
    """The report as a table for people."""
    config = report["config"]
    lines = [f"{report['directory']} {report['split']} ({report['data']}), pass {report['epoch']}, "
             f"world size {report['world_size']}",
             _row("samples", f"{report['num_samples']:,} of {report['seq_length']} tokens"),
             _row("served per pass", f"{report['samples_per_pass']:,} (whole global batches of "
                                     f"{config['global_batch_size']})"),
             _row("steps", f"{report['steps']:,} of {report['micro_batches_per_step']} micro batch(es) of "
                           f"{config['micro_batch_size']} per rank"),
             _row("micro batches per rank", f"{report['micro_batches_per_rank']:,}")]
    for member in report.get("members", []):
        lines.append(_row(f"member {member['prefix']}", f"weight {member['weight']:g}, {member['samples']:,} samples"))
    if "ledger" in report:
        lines += ["", describe_ledger(report["ledger"])]
    return lines


__all__ = ["GPTView", "gpt_lines", "gpt_report"]
