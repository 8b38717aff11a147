#!/usr/bin/env bash
# Five directions end to end: make the raw corpus, prepare one data_bin, verify it, show the sampled mix.
set -euo pipefail
cd "$(dirname "$0")/.."
RAW=${1:-runs/multilingual-raw}
OUT=${2:-runs/multilingual-bin}
python examples/make_multilingual_sample.py "$RAW"
tokenmill prepare -c examples/multilingual.yaml --trainpref "$RAW/train" --validpref "$RAW/valid" \
    --testpref "$RAW/test" --destdir "$OUT"
tokenmill verify "$OUT"
tokenmill batches "$OUT" --temperature 5 --world-size 2 --max-tokens 2048
python examples/multilingual_batches.py "$OUT"
