#!/usr/bin/env bash
# Install tokenmill with its test dependencies and run the test suite (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
# torch==2.13.0 first: it is a CPU build on this machine's disk; a bare `torch` pulls a multi-GB CUDA build.
python -m pip install -q torch==2.13.0
# the extras with a set of AWS client versions that fit together (pip's resolver backtracks for minutes otherwise)
python -m pip install -q -e ".[test,docs,all]" -c scripts/constraints.txt
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
# peers in their own venvs, as test oracles (megatron-core ~30 s, fairseq ~2 min to build, T2T ~1.5 min), built
# once per machine in ${XDG_CACHE_HOME:-~/.cache}/tokenmill-peers (linked as .peers) and reused by every checkout
bash scripts/setup_peers.sh megatron fairseq t2t
# the cleaning rules' oracles (bicleaner-hardrules ~15 min on 2 loaded cores: kenlm builds from source; OpusFilter
# ~5 min). A failed build of these two is loud but not fatal: tests/text/test_rules_oracle.py then skips, naming why.
bash scripts/setup_peers.sh bicleaner opusfilter || echo "warning: the bicleaner/opusfilter oracle peers did not build; tests/text/test_rules_oracle.py will skip" >&2
# datatrove (~1 min): the oracle of the LM quality filters (tests/text/test_lm_filters_oracle.py); not fatal either
bash scripts/setup_peers.sh datatrove || echo "warning: the datatrove oracle peer did not build; tests/text/test_lm_filters_oracle.py will skip" >&2
python -m ruff check src tests benchmarks examples
# pytest in two parts (tests/conftest.py, docs/how-to/tests.md). First the tests marked `serial` (Ray and Slurm
# clusters, the headless browser, timed Ctrl-C checks), one after another with the machine to themselves: beside
# another worker's tests, Ray's start-up timed out on two loaded cores. Then every other test on two pytest-xdist
# workers (TOKENMILL_TEST_WORKERS sets how many), each module whole on one worker (--dist loadgroup) so its module
# fixtures are built once; the session fixtures that prepare data are built once and shared through a file lock.
# Both parts run whatever the first gave; the status is the first failure's (5, no test selected, counts as none).
serial=0
python -m pytest --part serial "$@" || serial=$?
parallel=0
python -m pytest --part parallel -n "${TOKENMILL_TEST_WORKERS:-2}" --dist loadgroup "$@" || parallel=$?
for status in "$serial" "$parallel"; do
  if [ "$status" -ne 0 ] && [ "$status" -ne 5 ]; then exit "$status"; fi
done
if [ "$serial" -eq 5 ] && [ "$parallel" -eq 5 ]; then exit 5; fi
