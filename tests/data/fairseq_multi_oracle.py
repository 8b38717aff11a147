"""fairseq's ``translation_multi_simple_epoch`` task on a tokenmill data_bin: what it loads, as JSON.

Run in fairseq's own interpreter by tests/data/test_multi_fairseq.py:
``python fairseq_multi_oracle.py WORKDIR``. Reads ``WORKDIR/request.json``::

    {"data": "data_bin/shard000:data_bin/shard001", "lang_pairs": [...], "langs": [...],
     "runs": [{"name": ..., "encoder_langtok": "src"|"tgt"|null, "decoder_langtok": bool,
               "replacing": bool, "train_epochs": [1, 2], "batch": [valid ids], "sampled": 8}]}

and writes ``WORKDIR/result.json`` with, per run: the dictionary fairseq built (after its
``augment_dictionary``), every valid item (``ConcatDataset`` order), a valid batch made by fairseq's
own collater, and for each training epoch every item of each direction's loaded shard, the first
``sampled`` items of the ``SampledMultiDataset`` and a batch of them. Only fairseq code runs here;
the comparison is the test's job.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path


def tensor_list(t) -> list:
    return t.tolist() if t is not None else None


def item_json(item: dict) -> dict:
    return {"id": int(item["id"]), "source": tensor_list(item["source"]), "target": tensor_list(item["target"])}


def batch_json(batch: dict) -> dict:
    net = batch["net_input"]
    return {
        "id": tensor_list(batch["id"]),
        "src_tokens": tensor_list(net["src_tokens"]),
        "src_lengths": tensor_list(net["src_lengths"]),
        "prev_output_tokens": tensor_list(net.get("prev_output_tokens")),
        "target": tensor_list(batch["target"]),
        "ntokens": int(batch["ntokens"]),
    }


def setup(request: dict, run: dict):
    from fairseq import options, tasks

    argv = [
        request["data"],
        "--task", "translation_multi_simple_epoch",
        "--arch", "transformer",
        "--lang-pairs", ",".join(request["lang_pairs"]),
        "--langs", ",".join(request["langs"]),
        "--sampling-method", "temperature",
        "--sampling-temperature", "2",
        "--seed", "1",
    ]  # fmt: skip
    if run["encoder_langtok"]:
        argv += ["--encoder-langtok", run["encoder_langtok"]]
    if run["decoder_langtok"]:
        argv += ["--decoder-langtok"]
    if run["replacing"]:
        argv += ["--lang-tok-replacing-bos-eos"]
    parser = options.get_training_parser(default_task="translation_multi_simple_epoch")
    args = options.parse_args_and_arch(parser, input_args=argv)
    # fairseq-train takes these from the model's architecture; the task reads them when loading
    args.max_source_positions = args.max_target_positions = 1024
    return tasks.setup_task(args)


def one_run(request: dict, run: dict) -> dict:
    task = setup(request, run)
    dictionary = task.source_dictionary
    assert task.target_dictionary is dictionary or task.target_dictionary == dictionary
    out: dict = {
        "dict": {
            "symbols": list(dictionary.symbols),
            "special": [dictionary.bos(), dictionary.pad(), dictionary.eos(), dictionary.unk()],
            "langtok": {lang: dictionary.index(f"__{lang}__") for lang in request["langs"]},
        }
    }
    task.load_dataset("valid")
    valid = task.datasets["valid"]
    if run["replacing"]:  # a SampledMultiDataset over TransformEosLangPairDatasets: one batch per direction
        out["valid_sizes"] = [len(d) for d in valid.datasets]
        out["valid_batches"] = [batch_json(d.collater([d[i] for i in range(len(d))])) for d in valid.datasets]
        return out
    out["valid_sizes"] = [len(d) for d in valid.datasets]
    out["valid"] = [item_json(valid[i]) for i in range(len(valid))]
    out["valid_batch"] = batch_json(valid.collater([valid[i] for i in run["batch"]]))
    out["train"] = {}
    for epoch in run["train_epochs"]:
        task.load_dataset("train", epoch=epoch)
        train = task.datasets["train"]
        train.set_epoch(epoch)
        sampled = [train[i] for i in range(run["sampled"])]
        out["train"][str(epoch)] = {
            "keys": list(train.keys),
            "items": [[item_json(d[i]) for i in range(len(d))] for d in train.datasets],
            "sampled": [[int(k), item_json(item)] for k, item in sampled],
            "batch": batch_json(train.collater(sampled)),
        }
    return out


def main() -> None:
    logging.disable(logging.WARNING)
    workdir = Path(sys.argv[1])
    request = json.loads((workdir / "request.json").read_text())
    result = {run["name"]: one_run(request, run) for run in request["runs"]}
    (workdir / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
