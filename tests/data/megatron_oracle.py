"""megatron-core as a test oracle: runs a list of jobs and saves every result as ``.npy`` files.

Runs inside an interpreter that has megatron-core (the peer venv, or the test interpreter itself
when megatron.core imports there). Usage as a script: ``python megatron_oracle.py WORKDIR`` reads
``WORKDIR/request.json`` and writes ``WORKDIR/<job id>.<name>.npy`` plus ``WORKDIR/result.json``.
Only megatron-core's own code computes the results; this file just feeds it inputs.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np


class _Tokenizer:
    """The few tokenizer attributes GPTDataset reads (vocab size, EOD id, a cache identity); no pad id."""

    def __init__(self, vocab_size: int, eod: int) -> None:
        self.vocab_size = vocab_size
        self.eod = eod
        self.unique_identifiers = {"class": "OracleTokenizer", "vocab_size": vocab_size, "eod": eod}


def _write_store(workdir: Path, job: dict) -> dict:
    """Write a Megatron-layout store with megatron-core's own IndexedDatasetBuilder."""
    from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder

    prefix = str(workdir / job["prefix"])
    tokens = np.load(workdir / job["tokens"])
    lengths = np.load(workdir / job["lengths"]).astype(np.int64)
    builder = IndexedDatasetBuilder(prefix + ".bin", dtype=np.dtype(job["dtype"]).type)
    builder.add_document(tokens, lengths.tolist())
    builder.finalize(prefix + ".idx")
    return {"prefix": prefix}


def _gpt_config(workdir: Path, job: dict, prefix: str):
    from megatron.core.datasets.gpt_dataset import GPTDatasetConfig

    return GPTDatasetConfig(
        random_seed=job["seed"],
        sequence_length=job["seq_length"],
        blend=([prefix], None),
        split=job.get("split", "1,0,0"),
        path_to_cache=str(workdir / "megatron-cache"),
        tokenizer=_Tokenizer(job.get("vocab_size", 1000), job.get("eod", 0)),
        reset_position_ids=job.get("reset_position_ids", False),
        reset_attention_mask=False,
        eod_mask_loss=job.get("eod_mask_loss", False),
        create_attention_mask=False,
        add_extra_token_to_sequence=job.get("add_extra_token", True),
        drop_last_partial_validation_sequence=job.get("drop_last_partial_sequence", True),
    )


def _gpt_dataset(workdir: Path, job: dict, out: dict) -> dict:
    """Build megatron-core's GPTDataset on a store; save its three arrays and optionally some samples."""
    from megatron.core.datasets.gpt_dataset import GPTDataset
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    from megatron.core.datasets.utils import Split

    prefix = str(workdir / job["prefix"])
    config = _gpt_config(workdir, job, prefix)
    low = IndexedDataset(prefix, multimodal=False, mmap=True)
    beg, end = job.get("documents", [0, len(low.sequence_lengths)])
    indices = np.arange(beg, end, dtype=np.int32)
    # Megatron applies drop_last_partial_validation_sequence only to the validation split.
    split = Split.valid if not job.get("drop_last_partial_sequence", True) else Split.train
    dataset = GPTDataset(low, prefix, indices, job.get("num_samples"), split, config)
    out["document_index"] = np.asarray(dataset.document_index)
    out["sample_index"] = np.asarray(dataset.sample_index)
    out["shuffle_index"] = np.asarray(dataset.shuffle_index)
    samples = job.get("samples")
    if samples:
        items = [dataset[i] for i in samples]
        for key in ("tokens", "labels", "loss_mask", "position_ids"):
            out[key] = np.stack([item[key].numpy() for item in items])
    return {"length": len(dataset)}


class PretrainingSampler:
    """Megatron-LM's ``MegatronPretrainingSampler`` (megatron/training/datasets/data_samplers.py), which
    the megatron-core wheel does not ship: the same arguments and batches, restated. From
    ``consumed_samples`` it walks the sample ids in chunks of micro_batch_size * data_parallel_size and
    yields this rank's slice of each whole chunk (drop_last=True, what Megatron's loader builder passes)."""

    def __init__(self, total_samples, consumed_samples, micro_batch_size, data_parallel_rank, data_parallel_size):
        assert total_samples > 0 and consumed_samples < total_samples and micro_batch_size > 0
        assert data_parallel_size > 0 and 0 <= data_parallel_rank < data_parallel_size
        self.total_samples = total_samples
        self.consumed_samples = consumed_samples
        self.micro_batch_size = micro_batch_size
        self.data_parallel_rank = data_parallel_rank
        self.chunk = micro_batch_size * data_parallel_size

    def __len__(self):
        return self.total_samples

    def __iter__(self):
        batch = []
        for idx in range(self.consumed_samples, self.total_samples):
            batch.append(idx)
            if len(batch) == self.chunk:
                start = self.data_parallel_rank * self.micro_batch_size
                yield batch[start : start + self.micro_batch_size]
                batch = []


def _gpt_loader(workdir: Path, job: dict, out: dict) -> dict:
    """megatron-core's GPTDataset through the sampler and a torch DataLoader, as Megatron's
    build_pretraining_data_loader makes it: each rank's first ``steps`` micro batches."""
    import torch
    from megatron.core.datasets.gpt_dataset import GPTDataset
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    from megatron.core.datasets.utils import Split

    prefix = str(workdir / job["prefix"])
    config = _gpt_config(workdir, job, prefix)
    low = IndexedDataset(prefix, multimodal=False, mmap=True)
    indices = np.arange(0, len(low.sequence_lengths), dtype=np.int32)
    dataset = GPTDataset(low, prefix, indices, job.get("num_samples"), Split.train, config)
    for rank in range(job["world_size"]):
        sampler = PretrainingSampler(len(dataset), job["consumed_samples"], job["micro_batch_size"], rank,
                                     job["world_size"])
        loader = torch.utils.data.DataLoader(dataset, batch_sampler=sampler, num_workers=0, pin_memory=False)
        rows = {key: [] for key in ("tokens", "labels", "loss_mask", "position_ids")}
        for step, batch in enumerate(loader):
            if step == job["steps"]:
                break
            for key in rows:
                rows[key].append(batch[key].numpy())
        for key, value in rows.items():
            out[f"{key}.{rank}"] = np.stack(value)
    return {"length": len(dataset)}


def _sample_idx(workdir: Path, job: dict, out: dict) -> dict:
    from megatron.core.datasets import helpers

    out["sample_index"] = helpers.build_sample_idx(
        np.load(workdir / job["sizes"]),
        np.load(workdir / job["document_index"]),
        job["seq_length"],
        job["num_epochs"],
        job["tokens_per_epoch"],
        job.get("drop_last_partial_sequence", True),
        job.get("add_extra_token", True),
    )
    return {}


def _blending(workdir: Path, job: dict, out: dict) -> dict:
    from megatron.core.datasets import helpers
    from megatron.core.datasets.utils import normalize

    weights = normalize(job["weights"]) if job.get("normalize", True) else job["weights"]
    size = job["size"]
    dataset_index = np.zeros(size, dtype=np.int16)
    dataset_sample_index = np.zeros(size, dtype=np.int64)
    helpers.build_blending_indices(dataset_index, dataset_sample_index, weights, len(weights), size, False)
    out["dataset_index"] = dataset_index
    out["dataset_sample_index"] = dataset_sample_index
    return {"weights": weights}


def _exhaustive_blending(workdir: Path, job: dict, out: dict) -> dict:
    from megatron.core.datasets import helpers

    sizes = np.asarray(job["sizes"], dtype=np.int64)
    total = int(sizes.sum())
    dataset_index = np.zeros(total, dtype=np.int16)
    dataset_sample_index = np.zeros(total, dtype=np.int64)
    helpers.build_exhaustive_blending_indices(dataset_index, dataset_sample_index, sizes, len(sizes))
    out["dataset_index"] = dataset_index
    out["dataset_sample_index"] = dataset_sample_index
    return {}


def _split(workdir: Path, job: dict, out: dict) -> dict:
    """The document ranges megatron-core's builder gives each split of a store for a split string."""
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset

    prefix = str(workdir / job["prefix"])
    config = _gpt_config(workdir, dict(job, seed=1, seq_length=4), prefix)
    datasets = BlendedMegatronDatasetBuilder(GPTDataset, [None, None, None], lambda: True, config).build()
    ranges = []
    for dataset in datasets:
        if dataset is None:
            ranges.append(None)
        else:
            ranges.append([int(dataset.indices[0]), int(dataset.indices[-1]) + 1])
    return {"split_matrix": config.split_matrix, "ranges": ranges}


OPS = {
    "write_store": lambda workdir, job, out: _write_store(workdir, job),
    "gpt_dataset": _gpt_dataset,
    "gpt_loader": _gpt_loader,
    "sample_idx": _sample_idx,
    "blending": _blending,
    "exhaustive_blending": _exhaustive_blending,
    "split": _split,
}


def run(workdir: str | os.PathLike[str]) -> dict:
    """Run every job of ``workdir/request.json`` in order; returns (and writes) the JSON results."""
    workdir = Path(workdir)
    request = json.loads((workdir / "request.json").read_text())
    results = {}
    warnings.filterwarnings("ignore")
    for job in request["jobs"]:
        out: dict[str, np.ndarray] = {}
        results[job["id"]] = OPS[job["op"]](workdir, job, out)
        for name, array in out.items():
            np.save(workdir / f"{job['id']}.{name}.npy", np.asarray(array))
        results[job["id"]]["arrays"] = sorted(out)
    (workdir / "result.json").write_text(json.dumps(results))
    return results


if __name__ == "__main__":
    run(sys.argv[1])
