"""fairseq as a test oracle: run inside fairseq's venv, it answers jobs with fairseq's own code.

Usage: ``python fairseq_oracle.py WORKDIR`` reads ``WORKDIR/request.json`` (a list of jobs) and
writes ``WORKDIR/<job>.<name>.npy`` plus ``WORKDIR/result.json``. Only fairseq computes results;
this file feeds it inputs and flattens what it returns.

Jobs:

* ``plan``: ``LanguagePairDataset`` over the given lengths, then exactly what
  ``FairseqTask.get_batch_iterator`` does (``numpy_seed(seed + epoch)`` + ``ordered_indices``,
  ``filter_indices_by_size``, ``batch_by_size``), then ``EpochBatchIterator.ordered_batches`` for
  each requested epoch. Saves the frozen batches and each epoch's batch order.
* ``items``: ``LanguagePairDataset`` items with per-item options (``PrependTokenDataset`` for a
  prepended token), for the given indices.
* ``task``: ``TranslationTask`` on a prepared directory (``load_dataset`` + ``get_batch_iterator``
  + ``next_epoch_itr``); saves every collated batch of the first epoch.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np


def _flatten(batches: list) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.array([len(b) for b in batches], dtype=np.int64)
    flat = np.concatenate([np.asarray(b, dtype=np.int64) for b in batches]) if batches else np.zeros(0, np.int64)
    return flat, lengths


class _Sized:
    """Stands in for a token dataset where only the length matters."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


def plan_job(workdir: Path, job: dict) -> dict:
    from fairseq.data import Dictionary, LanguagePairDataset, data_utils, iterators

    src = np.load(workdir / job["src"])
    tgt = np.load(workdir / job["tgt"]) if job.get("tgt") else None
    dictionary = Dictionary()
    dataset = LanguagePairDataset(
        _Sized(len(src)), src, dictionary, _Sized(len(src)) if tgt is not None else None, tgt, dictionary
    )
    seed, first_epoch = job["seed"], 1
    with data_utils.numpy_seed(seed + first_epoch):
        indices = dataset.ordered_indices()
    max_positions = job.get("max_positions")
    if max_positions is not None:
        indices, _ = dataset.filter_indices_by_size(indices, tuple(max_positions))
    batches = dataset.batch_by_size(
        indices,
        max_tokens=job.get("max_tokens"),
        max_sentences=job.get("max_sentences"),
        required_batch_size_multiple=job.get("multiple", 1),
    )
    epoch_iter = iterators.EpochBatchIterator(
        dataset=dataset, collate_fn=dataset.collater, batch_sampler=batches, seed=seed, epoch=first_epoch
    )
    flat, lengths = _flatten(list(batches))
    np.save(workdir / f"{job['id']}.flat.npy", flat)
    np.save(workdir / f"{job['id']}.lengths.npy", lengths)
    position = {tuple(b.tolist()): i for i, b in enumerate(batches)}
    for epoch in job.get("epochs", []):
        ordered = epoch_iter.ordered_batches(epoch, False, True)
        np.save(
            workdir / f"{job['id']}.epoch{epoch}.npy",
            np.array([position[tuple(np.asarray(b).tolist())] for b in ordered], dtype=np.int64),
        )
    return {"num_batches": len(batches)}


def task_job(workdir: Path, job: dict) -> dict:
    from fairseq.tasks.translation import TranslationConfig, TranslationTask

    cfg = TranslationConfig(
        data=job["data"],
        source_lang=job["src_lang"],
        target_lang=job["tgt_lang"],
        train_subset="train",
        required_seq_len_multiple=job.get("pad_to_multiple", 1),
        load_alignments=job.get("alignments", False),
        dataset_impl="mmap",
    )
    task = TranslationTask.setup_task(cfg)
    task.load_dataset("train")
    dataset = task.dataset("train")
    epoch_iter = task.get_batch_iterator(
        dataset,
        max_tokens=job["max_tokens"],
        required_batch_size_multiple=job.get("multiple", 1),
        seed=job["seed"],
        epoch=1,
        disable_iterator_cache=True,
    )
    itr = epoch_iter.next_epoch_itr(shuffle=True)
    count = 0
    for count, batch in enumerate(itr):
        prefix = workdir / f"{job['id']}.b{count}"
        np.save(f"{prefix}.id.npy", batch["id"].numpy())
        np.save(f"{prefix}.src_tokens.npy", batch["net_input"]["src_tokens"].numpy())
        np.save(f"{prefix}.src_lengths.npy", batch["net_input"]["src_lengths"].numpy())
        np.save(f"{prefix}.prev_output_tokens.npy", batch["net_input"]["prev_output_tokens"].numpy())
        np.save(f"{prefix}.target.npy", batch["target"].numpy())
        np.save(f"{prefix}.ntokens.npy", np.array(batch["ntokens"]))
        if "alignments" in batch:
            np.save(f"{prefix}.alignments.npy", batch["alignments"].numpy())
            np.save(f"{prefix}.align_weights.npy", batch["align_weights"].numpy())
    return {"num_batches": count + 1}


def items_job(workdir: Path, job: dict) -> dict:
    """Items of ``LanguagePairDataset`` (over ``PrependTokenDataset`` when asked) with per-item options."""
    from fairseq.data import Dictionary, LanguagePairDataset, PrependTokenDataset, data_utils

    dictionary = Dictionary()
    for i in range(4, job["vocab"]):
        dictionary.add_symbol(f"w{i}")
    src = data_utils.load_indexed_dataset(job["src"], dictionary, "mmap")
    tgt = data_utils.load_indexed_dataset(job["tgt"], dictionary, "mmap")
    if job.get("prepend_src") is not None:
        src = PrependTokenDataset(src, job["prepend_src"])
    if job.get("prepend_tgt") is not None:
        tgt = PrependTokenDataset(tgt, job["prepend_tgt"])
    dataset = LanguagePairDataset(
        src,
        src.sizes,
        dictionary,
        tgt,
        tgt.sizes,
        dictionary,
        append_bos=job.get("append_bos", False),
        remove_eos_from_source=job.get("remove_eos_from_source", False),
        append_eos_to_target=job.get("append_eos_to_target", False),
    )
    items = [dataset[i] for i in job["indices"]]
    for side in ("source", "target"):
        flat, lengths = _flatten([item[side].numpy() for item in items])
        np.save(workdir / f"{job['id']}.{side}.flat.npy", flat)
        np.save(workdir / f"{job['id']}.{side}.lengths.npy", lengths)
    return {"count": len(items)}


def main(workdir: str) -> None:
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    root = Path(workdir)
    jobs = json.loads((root / "request.json").read_text())
    results = {}
    for job in jobs:
        run = {"plan": plan_job, "task": task_job, "items": items_job}[job["kind"]]
        results[job["id"]] = run(root, job)
    (root / "result.json").write_text(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1])
