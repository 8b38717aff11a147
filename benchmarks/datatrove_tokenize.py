"""datatrove's tokenization step, for bench_lm_prepare.py, bench_distributed.py and bench_parquet.py (runs in the
datatrove interpreter): ``JsonlReader`` (``ParquetReader`` with ``--reader parquet``) -> ``DocumentTokenizer``
under a ``LocalPipelineExecutor`` with ``--tasks``
tasks (default: one per input file), ``--workers`` of them at a time; the EOD token is appended by the
tokenizer's post-processor (``eos_token``). datatrove gives task k the files k, k + tasks, k + 2 tasks, ...
of the sorted input list; task k writes ``{k:05d}_{shuffled|unshuffled}.ds`` (tokens) and ``.ds.index``
(uint64 document ends). ``--shuffle`` keeps datatrove's default (documents shuffled inside each task;
``--seed`` fixes the shuffle's seed, none by default); without it documents stay in reading order.

    python datatrove_tokenize.py --input-dir DIR --tokenizer-model tokenizer.json --output DIR --tasks 2
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import JsonlReader, ParquetReader
from datatrove.pipeline.tokens import DocumentTokenizer

READERS = {"jsonl": JsonlReader, "parquet": ParquetReader}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input-dir", required=True)
    parser.add_argument("--reader", choices=("jsonl", "parquet"), default="jsonl")
    parser.add_argument("--glob", default="*.jsonl")
    parser.add_argument("--tokenizer-model", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--tasks", type=int, default=0, help="0: one task per input file")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shuffle", action="store_true", help="datatrove's default: shuffle documents per task")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--eod-token", default="<|endoftext|>")
    args = parser.parse_args()
    start = time.perf_counter()
    tasks = args.tasks or len(sorted(Path(args.input_dir).glob(args.glob)))
    executor = LocalPipelineExecutor(
        pipeline=[
            READERS[args.reader](args.input_dir, glob_pattern=args.glob, text_key="text"),
            DocumentTokenizer(
                output_folder=args.output,
                tokenizer_name_or_path=args.tokenizer_model,
                eos_token=args.eod_token,
                shuffle_documents=args.shuffle,
                seed=args.seed,
            ),
        ],
        tasks=tasks,
        workers=min(args.workers, tasks),
        logging_dir=str(Path(args.output) / "logs"),
        skip_completed=False,
    )
    executor.run()
    print(json.dumps({"tasks": tasks, "seconds": time.perf_counter() - start}))


if __name__ == "__main__":
    main()
