#!/usr/bin/env bash
# The README's main job on the bundled sample: prepare, verify, and look inside.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/sample-bin}
tokenmill prepare -c examples/config.yaml --destdir "$OUT"
tokenmill verify "$OUT"
tokenmill inspect "$OUT/train.en-zh.zh" --spm "$OUT/spm.model" --range 0:3
