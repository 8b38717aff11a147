"""datatrove's MinHash dedup pipeline on JSONL files (run with datatrove's interpreter by bench_near_dedup.py).

    python datatrove_minhash.py INPUT_DIR WORK_DIR TASKS

Its four stages (signatures, buckets, clusters, filter) at its defaults (5-grams, 14 buckets x 8 hashes),
one after another with LocalPipelineExecutor (``workers=1``: one core); prints one ``RESULT:`` JSON line:
seconds per stage, documents kept and removed, clusters, and a digest of the removed texts (to see whether
the output changes with the task count).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.minhash import (
    MinhashConfig,
    MinhashDedupBuckets,
    MinhashDedupCluster,
    MinhashDedupFilter,
    MinhashDedupSignature,
)
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter


def main() -> None:
    source, work, tasks = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    config = MinhashConfig()
    stages = {
        "signatures": ([JsonlReader(source), MinhashDedupSignature(output_folder=str(work / "sigs"), config=config)],
                       tasks),
        "buckets": ([MinhashDedupBuckets(input_folder=str(work / "sigs"), output_folder=str(work / "buckets"),
                                         config=config)], config.num_buckets),
        "clusters": ([MinhashDedupCluster(input_folder=str(work / "buckets"), output_folder=str(work / "remove"),
                                          config=config, save_cluster_id=True)], 1),
        "filter": ([JsonlReader(source),
                    MinhashDedupFilter(input_folder=str(work / "remove"), load_cluster_ids=True,
                                       exclusion_writer=JsonlWriter(str(work / "removed"), compression=None)),
                    JsonlWriter(str(work / "kept"), compression=None)], tasks),
    }
    seconds = {}
    for name, (pipeline, count) in stages.items():
        started = time.perf_counter()
        LocalPipelineExecutor(pipeline=pipeline, tasks=count, workers=1, logging_dir=str(work / "logs" / name),
                              skip_completed=False).run()
        seconds[name] = round(time.perf_counter() - started, 3)
    removed, clusters = [], set()
    for path in sorted((work / "removed").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            doc = json.loads(line)
            removed.append(hashlib.sha1(doc["text"].encode()).hexdigest())
            clusters.add(doc.get("metadata", {}).get("minhash_cluster_id"))
    kept = sum(1 for p in (work / "kept").glob("*.jsonl") for _ in p.open(encoding="utf-8"))
    digest = hashlib.sha1("\n".join(sorted(removed)).encode()).hexdigest()
    print("RESULT:" + json.dumps({"seconds": seconds, "total": round(sum(seconds.values()), 3), "kept": kept,
                                  "removed": len(removed), "clusters": len(clusters), "removed_digest": digest,
                                  "removed_texts": sorted(removed)}))


if __name__ == "__main__":
    main()
