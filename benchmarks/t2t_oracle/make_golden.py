"""Regenerate tests/vocab/golden_t2t/golden_*.json with Tensor2Tensor itself (runs INSIDE the T2T venv).

    /work/peers/t2t/bin/python benchmarks/t2t_oracle/make_golden.py

Reads the jobs in tests/vocab/golden_t2t/jobs.json (corpora in the same folder), runs each through
T2T's SubwordTextEncoder (``t2t_oracle.run_job``) and writes one golden file per job, plus the vocab
file T2T stores for jobs with ``store_vocab``.  Jobs run in order, so a job may load a vocab file an
earlier job stored.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "..", "tests", "vocab", "golden_t2t")
sys.path.insert(0, HERE)

import t2t_oracle  # noqa: E402


def main() -> int:
    with open(os.path.join(GOLDEN, "jobs.json"), encoding="utf-8") as f:
        jobs = json.load(f)
    for job in jobs:
        result = t2t_oracle.run_job(t2t_oracle.resolve(job, GOLDEN))
        for key in ("count_seconds", "build_seconds", "encode_seconds"):
            result.pop(key, None)
        result["job"] = job
        path = os.path.join(GOLDEN, f"golden_{job['name']}.json")
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(result, f, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
            f.write("\n")
        os.replace(path + ".tmp", path)
        print(f"{job['name']}: vocab {result['vocab_size']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
