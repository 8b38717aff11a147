"""The LM document filters (Gopher quality and repetition, C4, FineWeb) on real documents: documents/s and
MB/s on one core, side by side with datatrove's own four filters on the same documents in the same run.

The documents are those of the oracle test (tests/text/lm_documents.py: the markdown, reStructuredText and
text that installed packages and /usr/share/doc ship, cut into documents, plus planted bad ones). Ours: one
:class:`PairFilter` with the four filters, in this process, each on what the one before kept. datatrove:
its four filters with their defaults, chained the same way, in its venv (``bash scripts/setup_peers.sh
datatrove``; skipped when absent). Each side times its filtering only (the peer's spaCy tokenizer is loaded
before the timing).

    python benchmarks/bench_lm_filters.py --docs 2000
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
from tests.text.lm_documents import documents  # noqa: E402
from tokenmill.text.filters import FilterConfig, PairFilter  # noqa: E402
from tokenmill.text.filters.registry import LM_RULES  # noqa: E402

_DATATROVE = """
import time
from datatrove.data import Document
from datatrove.pipeline.filters import C4QualityFilter, FineWebQualityFilter, GopherQualityFilter
from datatrove.pipeline.filters import GopherRepetitionFilter
from datatrove.utils.text import split_into_words
split_into_words("warm up the tokenizer.")
chain = [GopherQualityFilter(), GopherRepetitionFilter(), C4QualityFilter(), FineWebQualityFilter()]
docs = PAYLOAD
started = time.perf_counter()
for peer in chain:
    docs = [d for d in docs if peer.filter(Document(text=d, id="0")) is True]
print("RESULT:" + json.dumps({"seconds": time.perf_counter() - started, "kept": len(docs)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=2000)
    args = parser.parse_args()
    docs = documents(args.docs)
    megabytes = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    ours = PairFilter(FilterConfig(drop_empty=False, **dict.fromkeys(LM_RULES, True)))
    ours(docs[:50])  # tables and patterns built outside the timing
    started = time.perf_counter()
    kept = ours(docs).kept
    rows = [("tokenmill, 4 LM filters", time.perf_counter() - started, kept)]
    if peer_python("datatrove") is None:
        print("datatrove: skipped (bash scripts/setup_peers.sh datatrove)")
    else:
        result = run_peer("datatrove", _DATATROVE, docs, timeout=1800)
        rows.append(("datatrove 0.10, the same 4", result["seconds"], result["kept"]))  # type: ignore[index]
    print(f"{len(docs):,} documents, {megabytes:.1f} MB, one core each")
    for name, seconds, kept_docs in rows:
        print(f"{name:28s} {len(docs) / seconds:>8,.0f} docs/s {megabytes / seconds:6.2f} MB/s  kept {kept_docs:,}")
    print(json.dumps({name: round(len(docs) / seconds) for name, seconds, _ in rows}))


if __name__ == "__main__":
    main()
