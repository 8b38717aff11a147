"""All bitext rules together on real pairs: pairs/s on one core, side by side with bicleaner-hardrules and
OpusFilter on the same pairs in the same run.

The pairs are the system's gettext catalogs (English-German and English-French program messages, see
tests/text/bitext_pairs.py), repeated to ``--pairs``. Ours: one :class:`PairFilter` with every rule of
``--clean-preset bitext`` plus ``numerals`` (the 24 rules), in this process. The peers run in their venvs
(``bash scripts/setup_peers.sh bicleaner opusfilter``; skipped when absent): bicleaner-hardrules'
``wrong_tu`` with its 19 model-free rules (its language-ID, LM and porn models off), OpusFilter's five
filters one after another. Each side times its filtering only (not start-up or reading), in CPU seconds of
its one process (``time.process_time``: pairs/s per core, steady on a loaded machine); ours is the median
of ``--repeat`` runs. ``--per-rule`` adds each rule alone on the same pairs; ``--baseline SRC`` also times
the tokenmill of another source tree (e.g. a worktree of an older commit) on the same pairs, in a
subprocess.

    python benchmarks/bench_filters.py --pairs 20000 --repeat 3 --per-rule --baseline /tmp/base/src
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
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
started = time.process_time()
kept = sum(1 for s, t in PAYLOAD if not rules.wrong_tu(s, t))
print("RESULT:" + json.dumps({"seconds": time.process_time() - started, "kept": kept}))
"""

_OPUS = """
import time
from opusfilter import filters
chain = [filters.NonZeroNumeralsFilter(threshold=0.5), filters.TerminalPunctuationFilter(threshold=-2),
         filters.HtmlTagFilter(), filters.RepetitionFilter(threshold=2),
         filters.LongestCommonSubstringFilter(threshold=0.9)]
pairs = [tuple(p) for p in PAYLOAD]
started = time.process_time()
for f in chain:
    pairs = [p for p, ok in zip(pairs, f.decisions(pairs)) if ok]
print("RESULT:" + json.dumps({"seconds": time.process_time() - started, "kept": len(pairs)}))
"""


RULES = {**CLEAN_PRESETS["bitext"], "numerals": 0.5}
"""The 24 rules: ``--clean-preset bitext`` plus ``numerals``."""


def real_pairs(count: int) -> list[tuple[str, str]]:
    real = catalog_pairs("de", 40_000) + catalog_pairs("fr", 40_000)
    if not real:
        raise SystemExit("no gettext catalogs under /usr/share/locale")
    return (real * (count // len(real) + 1))[:count]


def timed(pair_filter: PairFilter, src: list[str], tgt: list[str], repeat: int) -> tuple[float, int]:
    """Median CPU seconds of ``repeat`` runs of ``pair_filter`` over the pairs, and the pairs it kept."""
    pair_filter(src[:2000], tgt[:2000])  # tables and patterns built outside the timing
    seconds, kept = [], 0
    for _ in range(repeat):
        started = time.process_time()
        kept = pair_filter(src, tgt).kept
        seconds.append(time.process_time() - started)
    return statistics.median(seconds), kept


def ours(pairs: list[tuple[str, str]], repeat: int, per_rule: bool) -> dict[str, tuple[float, int]]:
    """CPU seconds and pairs kept: the 24 rules, OpusFilter's 5 and (``per_rule``) each rule alone."""
    src, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
    configs = {"tokenmill, 24 rules": FilterConfig(drop_empty=False, rule_src_lang="en", rule_tgt_lang="de", **RULES),
               "tokenmill, OpusFilter's 5": FilterConfig(drop_empty=False, numerals=0.5, terminal_punctuation=-2.0,
                                                         html_tags=True, repetition=2, common_substring=0.9)}
    if per_rule:
        configs.update({f"  {name}": FilterConfig(drop_empty=False, rule_src_lang="en", rule_tgt_lang="de",
                                                  **{name: value}) for name, value in RULES.items()})
    return {name: timed(PairFilter(config), src, tgt, repeat) for name, config in configs.items()}


def baseline(source: str, args: argparse.Namespace) -> dict[str, tuple[float, int]]:
    """:func:`ours` with the tokenmill of another source tree, in a subprocess."""
    command = [sys.executable, __file__, "--pairs", str(args.pairs), "--repeat", str(args.repeat), "--ours-only"]
    env = {**os.environ, "PYTHONPATH": source}
    out = subprocess.run(command + (["--per-rule"] if args.per_rule else []), env=env, check=True,
                         capture_output=True, text=True).stdout
    return {name: tuple(value) for name, value in json.loads(out.splitlines()[-1]).items()}  # type: ignore[misc]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=1, help="runs of ours to take the median of")
    parser.add_argument("--per-rule", action="store_true", help="also time each rule alone")
    parser.add_argument("--baseline", metavar="SRC", help="also time the tokenmill under SRC (its src/ folder)")
    parser.add_argument("--ours-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    pairs = real_pairs(args.pairs)
    mine = ours(pairs, args.repeat, args.per_rule)
    if args.ours_only:
        print(json.dumps(mine))
        return
    old = baseline(args.baseline, args) if args.baseline else {}
    rows = [(name, seconds, kept) for name, (seconds, kept) in mine.items() if not name.startswith("  ")]
    rows += [(f"{name} (baseline)", seconds, kept) for name, (seconds, kept) in old.items()
             if not name.startswith("  ")]
    for peer, code, label in (("bicleaner", _BICLEANER, "bicleaner-hardrules, 19 rules"),
                              ("opusfilter", _OPUS, "OpusFilter, 5 filters")):
        if peer_python(peer) is None:
            print(f"{label}: skipped (bash scripts/setup_peers.sh {peer})")
            continue
        result = run_peer(peer, code, pairs)
        rows.append((label, result["seconds"], result["kept"]))  # type: ignore[index]
    print(f"{len(pairs):,} real pairs (gettext en-de/en-fr), pairs/s per core (CPU time, one process each)")
    for name, seconds, kept in rows:
        print(f"{name:40s} {len(pairs) / seconds:>10,.0f} pairs/s  kept {kept:,}")
    if args.per_rule:
        print(f"each rule alone{'':19s} {'now':>10s} {'baseline' if old else '':>12s}")
        for name, (seconds, _) in mine.items():
            if name.startswith("  "):
                before = f"{len(pairs) / old[name][0]:>12,.0f}" if name in old else ""
                print(f"{name:34s} {len(pairs) / seconds:>10,.0f} {before}")
    print(json.dumps({name: round(len(pairs) / seconds) for name, seconds, _ in rows}))


if __name__ == "__main__":
    main()
