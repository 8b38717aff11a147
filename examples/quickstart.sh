#!/usr/bin/env bash
# The README's main job on the bundled sample: binarize, verify, and look inside.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/sample-bin}
python - "$OUT" <<'PY'
import sys
from collections import Counter
from pathlib import Path

from tokenmill.store import IndexedWriter
from tokenmill.store.manifest import write_manifest
from tokenmill.vocab import Dictionary

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
for lang in ("en", "zh"):
    # Until `tokenmill prepare` lands: whitespace tokens (characters for Chinese).
    split = (lambda s: s.split()) if lang == "en" else (lambda s: list(s.replace(" ", "")))
    lines = Path(f"examples/sample/train.{lang}").read_text(encoding="utf-8").split("\n")[:-1]
    dictionary = Dictionary.from_counts(Counter(t for line in lines for t in split(line)))
    dictionary.save(out / f"dict.{lang}.txt")
    with IndexedWriter(out / f"train.en-zh.{lang}", vocab_size=len(dictionary)) as writer:
        for line in lines:
            writer.add_item(dictionary.encode_tokens(split(line)))
write_manifest(out, settings={"source": "examples/sample/train"})
PY
tokenmill verify "$OUT"
tokenmill inspect "$OUT/train.en-zh.zh" --range 0:3
