"""All bitext rules together on real pairs: pairs/s on one core, side by side with bicleaner-hardrules and
OpusFilter on the same pairs in the same run.

The pairs are the system's gettext catalogs (English-German and English-French program messages, see
tests/text/bitext_pairs.py), repeated to ``--pairs``. Ours: one :class:`PairFilter` with every rule of
``--clean-preset bitext`` plus ``numerals`` (the 24 rules), in this process. The peers run in their venvs
(``bash scripts/setup_peers.sh bicleaner opusfilter``; skipped when absent): bicleaner-hardrules'
``wrong_tu`` with its 19 model-free rules (its language-ID, LM and porn models off), OpusFilter's five
filters one after another. Each side times its filtering only (not start-up or reading).

    python benchmarks/bench_filters.py --pairs 50000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.peers import peer_python, run_peer  # noqa: E402
from tests.text.bitext_pairs import catalog_pairs  # noqa: E402
from tokenmill.prepare.config import CLEAN_PRESETS  # noqa: E402
from tokenmill.text.filters import FilterConfig, PairFilter  # noqa: E402

_BICLEANER = """
import argparse, time
from hardrules.hardrules import Hardrules
config = {name: value for name, value in Hardrules.rule_pipeline.items()
          if name not in ("no_wrong_language", "no_porn", "lm_filter", "no_empty")}
config.update(no_urls=True, no_number_inconsistencies=True, no_script_inconsistencies=True)
for name in ("no_wrong_language", "no_porn", "lm_filter"):
    config[name] = False
args = argparse.Namespace(disable_lm_filter=True, lm_threshold=0.5, disable_porn_removal=True,
    disable_lang_ident=True, source_lang="en", target_lang="de", run_all_rules=False, disable_minimal_length=False,
    rules_config=config, metadata_yaml=None)
rules = Hardrules(args)
started = time.perf_counter()
kept = sum(1 for s, t in PAYLOAD if not rules.wrong_tu(s, t))
print("RESULT:" + json.dumps({"seconds": time.perf_counter() - started, "kept": kept}))
"""

_OPUS = """
import time
from opusfilter import filters
chain = [filters.NonZeroNumeralsFilter(threshold=0.5), filters.TerminalPunctuationFilter(threshold=-2),
         filters.HtmlTagFilter(), filters.RepetitionFilter(threshold=2),
         filters.LongestCommonSubstringFilter(threshold=0.9)]
pairs = [tuple(p) for p in PAYLOAD]
started = time.perf_counter()
for f in chain:
    pairs = [p for p, ok in zip(pairs, f.decisions(pairs)) if ok]
print("RESULT:" + json.dumps({"seconds": time.perf_counter() - started, "kept": len(pairs)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=50_000)
    args = parser.parse_args()
    real = catalog_pairs("de", 40_000) + catalog_pairs("fr", 40_000)
    if not real:
        raise SystemExit("no gettext catalogs under /usr/share/locale")
    pairs = (real * (args.pairs // len(real) + 1))[: args.pairs]
    src, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
    rules = {**CLEAN_PRESETS["bitext"], "numerals": 0.5}
    every = PairFilter(FilterConfig(drop_empty=False, rule_src_lang="en", rule_tgt_lang="de", **rules))
    every(src[:2000], tgt[:2000])  # tables and patterns built outside the timing
    five = PairFilter(FilterConfig(drop_empty=False, numerals=0.5, terminal_punctuation=-2.0, html_tags=True,
                                   repetition=2, common_substring=0.9))
    five(src[:2000], tgt[:2000])
    rows = []
    for name, pair_filter in (("tokenmill, 24 rules", every), ("tokenmill, OpusFilter's 5", five)):
        started = time.perf_counter()
        kept = pair_filter(src, tgt).kept
        rows.append((name, time.perf_counter() - started, kept))
    for peer, code, label in (("bicleaner", _BICLEANER, "bicleaner-hardrules, 19 rules"),
                              ("opusfilter", _OPUS, "OpusFilter, 5 filters")):
        if peer_python(peer) is None:
            print(f"{label}: skipped (bash scripts/setup_peers.sh {peer})")
            continue
        result = run_peer(peer, code, pairs)
        rows.append((label, result["seconds"], result["kept"]))  # type: ignore[index]
    print(f"{len(pairs):,} real pairs (gettext en-de/en-fr), one core each")
    for name, seconds, kept in rows:
        print(f"{name:32s} {len(pairs) / seconds:>10,.0f} pairs/s  kept {kept:,}")
    print(json.dumps({name: round(len(pairs) / seconds) for name, seconds, _ in rows}))


if __name__ == "__main__":
    main()
