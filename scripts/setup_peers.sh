#!/usr/bin/env bash
# Install the peers our interop tests use as oracles, each in its own venv under .peers/<name>
# (their pins clash with ours). Idempotent: a peer that already imports is left alone.
#   bash scripts/setup_peers.sh megatron fairseq t2t
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS_DIR=${TOKENMILL_PEERS_DIR:-.peers}
mkdir -p "$PEERS_DIR"

probe() {
  case "$1" in
    megatron) echo "import megatron.core.datasets.indexed_dataset" ;;
    fairseq) echo "import fairseq.data" ;;
    t2t) echo "from tensor2tensor.data_generators import text_encoder" ;;
    bicleaner) echo "from hardrules.hardrules import Hardrules" ;;
    opusfilter) echo "from opusfilter import filters" ;;
  esac
}

for name in "${@:-megatron}"; do
  py="$PEERS_DIR/$name/bin/python"
  if [ -x "$py" ] && "$py" -c "$(probe "$name")" 2>/dev/null; then
    echo "peer $name: ready ($py)"; continue
  fi
  echo "peer $name: installing into $PEERS_DIR/$name"
  python3 -m venv "$PEERS_DIR/$name"
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
    *) echo "unknown peer $name (known: megatron fairseq t2t bicleaner opusfilter)" >&2; exit 2 ;;
  esac
  "$py" -c "$(probe "$name")" 2>/dev/null && echo "peer $name: ready"
done
