"""Oracle: the LM document filters (Gopher quality and repetition, C4, FineWeb) keep and drop the same
documents as datatrove's own filters, run in datatrove's venv (``bash scripts/setup_peers.sh datatrove``).

The documents are real text (prose, markdown and reStructuredText that installed packages and
/usr/share/doc ship, cut into documents; see tests/text/lm_documents.py) plus planted bad ones. Words come
from our emulation of spaCy's English tokenizer (tokenmill.text.filters.words), so a document near a
threshold can tip the other way: those are listed per filter (``KNOWN_SHARE``: the most we accept, each
cause explained in docs/how-to/cleaning.md) and printed; the planted documents must all agree.
"""

from __future__ import annotations

import pytest

from tests.peers import run_peer
from tests.text.lm_documents import PLANTED, documents
from tokenmill.text.filters import FilterConfig, PairFilter

pytest.importorskip("regex")
pytestmark = [pytest.mark.datatrove, pytest.mark.slow]

PEER_FILTERS = {
    "gopher_quality": "GopherQualityFilter",
    "gopher_repetition": "GopherRepetitionFilter",
    "c4": "C4QualityFilter",
    "fineweb": "FineWebQualityFilter",
}
KNOWN_SHARE = {"gopher_quality": 0.01, "gopher_repetition": 0.01, "c4": 0.01, "fineweb": 0.01}
"""The largest share of documents on which a filter may decide otherwise than datatrove (tokenization only)."""

_PEER = """
from datatrove.data import Document
import datatrove.pipeline.filters as filters
out = {}
for name, cls in PAYLOAD["filters"].items():
    peer = getattr(filters, cls)()  # datatrove's defaults
    keep = []
    for i, text in enumerate(PAYLOAD["docs"]):
        verdict = peer.filter(Document(text=text, id=str(i)))  # C4 may rewrite the text: decision only
        keep.append(verdict is True)
    out[name] = keep
print("RESULT:" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return documents(2000)


@pytest.fixture(scope="module")
def peer_keep(docs) -> dict[str, list[bool]]:
    return run_peer("datatrove", _PEER, {"docs": docs, "filters": PEER_FILTERS}, timeout=1200)  # type: ignore[return-value]


@pytest.mark.parametrize("name", sorted(PEER_FILTERS))
def test_lm_filter_decides_as_datatrove(name, docs, peer_keep):
    ours = PairFilter(FilterConfig(drop_empty=False, **{name: True}))(docs).keep.tolist()
    theirs = peer_keep[name]
    differ = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
    for i in differ[:20]:
        print(f"{name}: doc {i} ours={'keep' if ours[i] else 'drop'} datatrove={'keep' if theirs[i] else 'drop'}: "
              f"{docs[i][:120]!r}")
    dropped = len(docs) - sum(theirs)
    print(f"{name}: {len(docs)} documents, datatrove drops {dropped}, {len(differ)} decided otherwise")
    assert 0 < dropped < len(docs)  # the documents exercise the filter both ways
    planted = range(len(docs) - len(PLANTED), len(docs))
    assert not [i for i in differ if i in planted], "a planted document decided otherwise"
    assert len(differ) <= KNOWN_SHARE[name] * len(docs), f"{len(differ)} documents decided otherwise"
