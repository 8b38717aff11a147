#!/usr/bin/env bash
# Install the peers our interop tests use as oracles, each in its own venv under .peers/<name>
# (their pins clash with ours). Idempotent: a peer that already imports is left alone.
#   bash scripts/setup_peers.sh megatron fairseq t2t [bicleaner opusfilter datatrove]
#
# The peers are built once per machine: in $TOKENMILL_PEERS_DIR if set, else in
# ${XDG_CACHE_HOME:-~/.cache}/tokenmill-peers, which the checkout links as .peers (a .peers folder or link
# that is already there is used as it is). A second clone on the same machine finds them ready.
set -euo pipefail
cd "$(dirname "$0")/.."

probe() {
  case "$1" in
    megatron) echo "import megatron.core.datasets.indexed_dataset" ;;
    fairseq) echo "import fairseq.data" ;;
    t2t) echo "from tensor2tensor.data_generators import text_encoder" ;;
    bicleaner) echo "from hardrules.hardrules import Hardrules" ;;
    opusfilter) echo "from opusfilter import filters" ;;
    datatrove) echo "from datatrove.pipeline.filters import GopherQualityFilter; import spacy" ;;
  esac
}

# a venv's scripts (pip, fairseq-train ...) name the interpreter by the path the venv was built at: a peer
# built through another checkout's .peers link names that checkout's path, gone for this one. Point such
# first lines at the venv's own python by its real path (valid from every checkout); nothing is rebuilt.
relink_scripts() {
  local bin f first interp
  bin=$(cd "$PEERS_DIR/$1/bin" && pwd -P)
  for f in "$bin"/*; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    first=$(head -n 1 "$f" | tr -d '\0')
    case "$first" in "#!"*/bin/python*) ;; *) continue ;; esac
    interp=${first#\#!}; interp=${interp%% *}
    [ -x "$interp" ] || sed -i "1s|^#!.*\$|#!$bin/python|" "$f"
  done
}

for name in "${@:-megatron}"; do
  if [ -z "$(probe "$name")" ]; then echo "unknown peer $name (known: megatron fairseq t2t bicleaner opusfilter datatrove)" >&2; exit 2; fi
done

CACHE=${TOKENMILL_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tokenmill-peers}
if [ -e .peers ] || [ -L .peers ]; then
  PEERS_DIR=.peers
else
  mkdir -p "$CACHE"
  ln -s "$CACHE" .peers
  PEERS_DIR=.peers
  echo "peers: .peers -> $CACHE (built once per machine)"
fi
mkdir -p "$PEERS_DIR/"
# one build at a time per cache: a second checkout waits and then finds the peers ready
exec 9>"$PEERS_DIR/.lock"
flock 9

for name in "${@:-megatron}"; do
  py="$PEERS_DIR/$name/bin/python"
  # a peer that passed its import probe once is marked, so later runs skip the probe's heavy imports
  # (torch, TensorFlow: half a minute of CPU); the mark holds the probe, so a changed probe runs again
  mark="$PEERS_DIR/$name/.tokenmill-ready"
  if [ -x "$py" ] && [ -f "$mark" ] && [ "$(cat "$mark")" = "$(probe "$name")" ]; then
    relink_scripts "$name"; echo "peer $name: ready ($py)"; continue
  fi
  if [ -x "$py" ] && "$py" -c "$(probe "$name")" 2>/dev/null; then
    probe "$name" > "$mark"
    relink_scripts "$name"; echo "peer $name: ready ($py)"; continue
  fi
  echo "peer $name: installing into $PEERS_DIR/$name"
  # built at its real path (the cache's, not through the .peers link): its scripts work from every checkout
  python3 -m venv --clear "$(cd "$PEERS_DIR" && pwd -P)/$name"   # --clear: a venv left by a killed build
  pip="$PEERS_DIR/$name/bin/pip"
  # torch==2.13.0 first: a bare torch requirement would pull a multi-GB CUDA build.
  case "$name" in
    megatron) "$pip" install -q torch==2.13.0 numpy megatron-core ;;
    fairseq)
      "$pip" install -q torch==2.13.0 numpy cython wheel sentencepiece
      "$pip" install -q --no-build-isolation fairseq-fixed==0.12.3.1 ;;
    t2t)
      "$pip" install -q tensorflow-cpu
      "$pip" install -q --no-deps tensor2tensor six ;;
    bicleaner)
      # needs Debian's libhunspell-dev. A plain install backtracks to 2.8.0 (2.10's pins do not resolve on
      # Python 3.11); the oracle is 2.10.8 with the packages its model-free rules import (kenlm builds here).
      "$pip" install -q pybind11 wheel setuptools
      "$pip" install -q --no-build-isolation bicleaner-hardrules
      "$pip" install -q --no-deps bicleaner-hardrules==2.10.8
      "$pip" install -q kenlm ;;
    opusfilter) "$pip" install -q opusfilter ;;
    # spacy: datatrove's English word tokenizer (spacy.blank("en")), which its Gopher/C4/FineWeb filters use
    # pyarrow, orjson: its ParquetReader and JsonlReader (benchmarks/bench_parquet.py, bench_near_dedup.py)
    datatrove) "$pip" install -q datatrove spacy pyarrow orjson ;;
    *) echo "unknown peer $name (known: megatron fairseq t2t bicleaner opusfilter datatrove)" >&2; exit 2 ;;
  esac
  "$py" -c "$(probe "$name")" && probe "$name" > "$mark" && echo "peer $name: ready"
done
