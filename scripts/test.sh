#!/usr/bin/env bash
# Install tokenmill with its test dependencies and run the test suite (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
# torch==2.13.0 first: it is a CPU build on this machine's disk; a bare `torch` pulls a multi-GB CUDA build.
python -m pip install -q torch==2.13.0
# the extras with a set of AWS client versions that fit together (pip's resolver backtracks for minutes otherwise)
python -m pip install -q -e ".[test,torch,s3,ray,grain,tf]" -c scripts/constraints.txt
# Debian's packages: headless Chromium for the report's browser test (tests/report/test_browser.py); Slurm and
# munge for the real one-node Slurm the engine test starts (tests/prepare/test_slurm_cluster.py); hunspell's headers
# for the bicleaner-hardrules peer's build (tests/text/test_rules_oracle.py)
DEBS=""
command -v chromium >/dev/null || DEBS="$DEBS chromium"
command -v slurmctld >/dev/null || DEBS="$DEBS slurmctld slurmd slurm-client munge"
dpkg -s libhunspell-dev >/dev/null 2>&1 || DEBS="$DEBS libhunspell-dev"
if [ -n "$DEBS" ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $DEBS
fi
# peers in their own venvs, as test oracles (megatron-core ~30 s, fairseq ~2 min to build, T2T ~1.5 min,
# bicleaner-hardrules ~15 min on 2 cores (kenlm builds from source), OpusFilter ~5 min)
bash scripts/setup_peers.sh megatron fairseq t2t bicleaner opusfilter
python -m ruff check src tests benchmarks examples
python -m pytest "$@"
