"""Write the bundled sample as JSONL documents (one object per line, key "text"), as Megatron's
preprocess_data reads them: each document a few sentences, some with newlines inside.

    python examples/make_jsonl_sample.py runs/lm-raw/docs.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SAMPLE = Path(__file__).resolve().parent / "sample"


def main(out: str) -> None:
    lines = [line for lang in ("en", "zh") for line in (SAMPLE / f"train.{lang}").read_text("utf-8").splitlines()]
    docs = ["\n".join(lines[i : i + 3]) if i % 2 else " ".join(lines[i : i + 3]) for i in range(0, len(lines), 3)]
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    print(f"{len(docs)} documents -> {path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/lm-raw/docs.jsonl")
