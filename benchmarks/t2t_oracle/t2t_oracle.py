"""Run Tensor2Tensor's own SubwordTextEncoder on jobs described in JSON (runs INSIDE the T2T venv).

This is the oracle behind tokenmill's T2T-compatible subword encoder: the golden files in
tests/vocab/golden_t2t/ were written by it, the live oracle tests call it, and the benchmark times
T2T's build with it.  It imports only T2T, TensorFlow and the standard library.

Usage (in the T2T venv, e.g. /work/peers/t2t/bin/python; see shared/PEERS.md for the install):

    python benchmarks/t2t_oracle/t2t_oracle.py JOBS.json RESULTS.json

JOBS.json holds a list of jobs; RESULTS.json gets one result per job.  A job:

    {"corpus": [paths] with "file_byte_budget": B      # lines sampled by generate_lines_for_vocab
     | "lines": [texts]                               # or: these lines, tokenized as they are
     | "token_counts": {token: count}                 # or: these counts
     | "vocab_file": path,                            # or: load an existing vocab file, no build
     "target_size": N, "min_val": 1, "max_val": 1000  # build_to_target_size ...
     | "min_count": m,                                # ... or build_from_token_counts
     "num_iterations": 4, "max_subtoken_length": L|null, "reserved_tokens": [...]|null,
     "encode": [texts], "encode_files": [paths],      # texts to encode; every \n-separated line of a file
     "decode": [[ids]], "store_vocab": path, "want_token_counts": false}

Relative paths are resolved against the directory of JOBS.json.

A result: {"vocab": [...], "vocab_size", "encodings", "decodings" (of the encodings), "decoded"
(of "decode"), "tokens" (tokenizer.encode of each text), "token_counts" (if asked),
"count_seconds", "build_seconds"} -- the times are measured here, inside T2T's process.

To regenerate the golden files of the tests (from the repository root, in the T2T venv):

    /work/peers/t2t/bin/python benchmarks/t2t_oracle/make_golden.py
"""

from __future__ import annotations

import collections
import json
import logging
import os
import sys
import time
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
logging.disable(logging.WARNING)

import tensorflow.compat.v1 as tf  # noqa: E402

try:  # generator_utils names tf.estimator.ModeKeys at import; TF >= 2.16 no longer ships estimator
    tf.estimator  # noqa: B018
except AttributeError:
    tf.estimator = types.SimpleNamespace(ModeKeys=types.SimpleNamespace(TRAIN="train", EVAL="eval", PREDICT="infer"))

from tensor2tensor.data_generators import generator_utils, text_encoder, tokenizer  # noqa: E402


def _token_counts(job: dict) -> dict:
    counts: dict = collections.defaultdict(int)
    if "token_counts" in job:
        return dict(job["token_counts"])
    if "lines" in job:
        lines = job["lines"]
    else:
        lines = []
        for path in job["corpus"]:
            directory, name = os.path.split(os.path.abspath(path))
            sources = [[os.path.abspath(path), [name]]]
            lines.extend(generator_utils.generate_lines_for_vocab(directory, sources, job["file_byte_budget"]))
    # the same loop as SubwordTextEncoder.build_from_generator
    for item in lines:
        for tok in tokenizer.encode(text_encoder.native_to_unicode(item)):
            counts[tok] += 1
    return counts


def resolve(job: dict, base: str) -> dict:
    """Make the job's file paths absolute, relative to ``base``."""
    job = dict(job)
    for key in ("corpus", "encode_files"):
        if key in job:
            job[key] = [os.path.join(base, p) for p in job[key]]
    for key in ("vocab_file", "store_vocab"):
        if job.get(key):
            job[key] = os.path.join(base, job[key])
    return job


def texts_to_encode(job: dict) -> list:
    texts = []
    for path in job.get("encode_files", []):
        with open(path, encoding="utf-8", newline="") as f:
            texts.extend(f.read().split("\n"))
    return texts + list(job.get("encode", []))


def run_job(job: dict) -> dict:
    result: dict = {}
    if "vocab_file" in job:
        encoder = text_encoder.SubwordTextEncoder(job["vocab_file"])
    else:
        t0 = time.perf_counter()
        counts = _token_counts(job)
        t1 = time.perf_counter()
        kwargs = dict(
            max_subtoken_length=job.get("max_subtoken_length"),
            reserved_tokens=job.get("reserved_tokens"),
        )
        if "min_count" in job:
            encoder = text_encoder.SubwordTextEncoder()
            encoder.build_from_token_counts(counts, job["min_count"], job.get("num_iterations", 4), **kwargs)
        else:
            encoder = text_encoder.SubwordTextEncoder.build_to_target_size(
                job["target_size"],
                counts,
                job.get("min_val", 1),
                job.get("max_val", 1e3),
                num_iterations=job.get("num_iterations", 4),
                **kwargs,
            )
        t2 = time.perf_counter()
        result.update(count_seconds=t1 - t0, build_seconds=t2 - t1, n_tokens=len(counts))
        if job.get("want_token_counts"):
            result["token_counts"] = dict(counts)
    if job.get("store_vocab"):
        encoder.store_to_file(job["store_vocab"])
    result["vocab"] = list(encoder.all_subtoken_strings)
    result["vocab_size"] = encoder.vocab_size
    texts = texts_to_encode(job)
    t0 = time.perf_counter()
    encodings = [encoder.encode(t) for t in texts]
    result["encode_seconds"] = time.perf_counter() - t0
    result["encodings"] = encodings
    result["decodings"] = [encoder.decode(ids) for ids in encodings]
    result["decoded"] = [encoder.decode(ids) for ids in job.get("decode", [])]
    result["tokens"] = [tokenizer.encode(t) for t in texts]
    return result


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        jobs = json.load(f)
    base = os.path.dirname(os.path.abspath(argv[1]))
    results = [run_job(resolve(job, base)) for job in jobs]
    tmp = argv[2] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False)
    os.replace(tmp, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
