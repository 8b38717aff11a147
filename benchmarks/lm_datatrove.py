"""datatrove's tokenization step, for bench_lm_prepare.py: ``JsonlReader`` -> ``DocumentTokenizer``
under a ``LocalPipelineExecutor``, one task per input file, ``--workers`` tasks at a time (datatrove's
unit of parallelism; inside a task ``tokenizers``' ``encode_batch`` of 10,000 documents runs on
rayon threads). The EOD token is appended by the tokenizer's post-processor (``eos_token``).
Documents are not shuffled (``shuffle_documents=False``), so the output can be compared with the
input order: task k writes ``{k:05d}_unshuffled.ds`` (tokens, uint16 below 65,536 ids) and
``.ds.index`` (uint64 document ends). Runs in the datatrove interpreter.

    python lm_datatrove.py --input-dir DIR --tokenizer-model tokenizer.json --output DIR --workers 2
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.tokens import DocumentTokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input-dir", required=True)
    parser.add_argument("--glob", default="*.jsonl")
    parser.add_argument("--tokenizer-model", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--eod-token", default="<|endoftext|>")
    args = parser.parse_args()
    start = time.perf_counter()
    tasks = len(sorted(Path(args.input_dir).glob(args.glob)))
    executor = LocalPipelineExecutor(
        pipeline=[
            JsonlReader(args.input_dir, glob_pattern=args.glob, text_key="text"),
            DocumentTokenizer(
                output_folder=args.output,
                tokenizer_name_or_path=args.tokenizer_model,
                eos_token=args.eod_token,
                shuffle_documents=False,
            ),
        ],
        tasks=tasks,
        workers=args.workers,
        logging_dir=str(Path(args.output) / "logs"),
        skip_completed=False,
    )
    executor.run()
    print(json.dumps({"tasks": tasks, "seconds": time.perf_counter() - start}))


if __name__ == "__main__":
    main()
