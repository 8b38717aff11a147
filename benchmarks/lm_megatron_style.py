"""Megatron-style LM preprocessing, for bench_lm_prepare.py: what ``tools/preprocess_data.py`` does
for JSONL + a Hugging Face tokenizer, reduced to its structure and written for this benchmark.

Structure mirrored: a ``multiprocessing.Pool`` of ``--workers`` processes, each loading the tokenizer
in the pool initializer; the main process streams the JSONL lines into ``pool.imap(encode, lines, 32)``;
a worker parses one line, tokenizes the ``--json-keys`` value (``tokenizers``' ``encode``, no special
tokens), appends the EOD id (``--append-eod``) and returns the ids with the document's item lengths;
the main process hands each document to megatron-core's ``IndexedDatasetBuilder.add_document``
(uint16 when the vocabulary is below 65,500, else int32, as Megatron chooses) and ``finalize``s the
index. Several input files are read one after the other into one output, as ``cat`` of the inputs.
No sentence splitting. Runs in megatron-core's interpreter (``tokenizers`` importable there).

    python lm_megatron_style.py --input a.jsonl b.jsonl --output-prefix out/megatron \
        --tokenizer-model tokenizer.json --append-eod --workers 2
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time

import numpy as np
import tokenizers
from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder, get_bin_path, get_idx_path


class DocumentEncoder:
    """Pickled into every worker; the tokenizer itself is built there by :meth:`setup`."""

    def __init__(self, model: str, key: str, append_eod: bool, eod_token: str) -> None:
        self.model, self.key, self.append_eod, self.eod_token = model, key, append_eod, eod_token

    def setup(self) -> None:
        DocumentEncoder.tokenizer = tokenizers.Tokenizer.from_file(self.model)
        DocumentEncoder.eod = DocumentEncoder.tokenizer.token_to_id(self.eod_token)

    def encode(self, line: str) -> tuple[list[int], list[int], int]:
        text = json.loads(line)[self.key]
        ids = DocumentEncoder.tokenizer.encode(text, add_special_tokens=False).ids
        lengths = [len(ids)] if ids else []
        if ids and self.append_eod:
            ids.append(DocumentEncoder.eod)
            lengths[-1] += 1
        return ids, lengths, len(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", nargs="+", required=True)
    parser.add_argument("--output-prefix", required=True)
    parser.add_argument("--tokenizer-model", required=True)
    parser.add_argument("--json-key", default="text")
    parser.add_argument("--append-eod", action="store_true")
    parser.add_argument("--eod-token", default="<|endoftext|>")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--log-interval", type=int, default=100_000)
    args = parser.parse_args()

    start = time.perf_counter()
    encoder = DocumentEncoder(args.tokenizer_model, args.json_key, args.append_eod, args.eod_token)
    vocab = tokenizers.Tokenizer.from_file(args.tokenizer_model).get_vocab_size(with_added_tokens=True)
    dtype = np.uint16 if vocab < 65500 else np.int32
    prefix = f"{args.output_prefix}_{args.json_key}_document"
    builder = IndexedDatasetBuilder(get_bin_path(prefix), dtype=dtype)
    docs = tokens = nbytes = 0
    with multiprocessing.Pool(args.workers, initializer=encoder.setup) as pool:
        for path in args.input:
            with open(path, encoding="utf-8") as lines:
                for ids, lengths, size in pool.imap(encoder.encode, lines, 32):
                    builder.add_document(ids, lengths)
                    docs += 1
                    tokens += len(ids)
                    nbytes += size
                    if docs % args.log_interval == 0:
                        rate = nbytes / 2**20 / (time.perf_counter() - start)
                        print(f"processed {docs} documents ({rate:.1f} MB/s)", file=sys.stderr)
    builder.finalize(get_idx_path(prefix))
    print(json.dumps({"documents": docs, "tokens": tokens, "seconds": time.perf_counter() - start}))


if __name__ == "__main__":
    main()
