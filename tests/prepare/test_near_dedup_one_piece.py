"""--near-dedup on inputs cleaned in one piece (not cut into tasks): word alignments (--align-suffix) and
blank-line documents (--documents blank-line). The same near-duplicates are dropped as on the clean tasks'
parts, so the stores are the bytes a tasked run writes from the same items; each kept pair keeps its own
alignment line; planted near-duplicate documents are found (recall and precision held to the floors)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

import tokenmill
from tests.prepare.test_near_dedup import (  # noqa: F401  (near_corpus: the fixture)
    PRECISION_FLOOR,
    RECALL_FLOOR,
    dropped_lines,
    near_corpus,
    write_docs,
)
from tests.prepare.test_tasks import settings_for
from tests.text.near_dup_text import planted_corpus
from tokenmill.store import IndexedDataset
from tokenmill.store.provenance import Provenance

WORDS = {"tokenizer": "none", "filters": {}, "near_dedup": True}
"""Alignments count whitespace tokens: no subword model."""


def same_files(expected: Path, actual: Path, names: list[str]) -> None:
    assert [name for name in names if (expected / name).read_bytes() != (actual / name).read_bytes()] == []


def test_alignments_stay_with_their_pairs(near_corpus, tmp_path):  # noqa: F811
    corpus = Path(shutil.copytree(near_corpus, tmp_path / "corpus"))
    for split in ("train", "valid", "test"):
        pairs = len((corpus / f"{split}.en").read_text(encoding="utf-8").splitlines())
        (corpus / f"{split}.align").write_text("".join(f"0-0 1-{i % 3}\n" for i in range(pairs)))
    tasked = tokenmill.prepare(settings_for(corpus, tmp_path / "tasked", tasks=2, **WORDS), progress=False)
    aligned = tokenmill.prepare(settings_for(corpus, tmp_path / "aligned", align_suffix="align", **WORDS),
                                progress=False)
    near = aligned.splits["train"]["clean"]["near_dedup"]
    print(f"\n--align-suffix: {near}")
    assert near == tasked.splits["train"]["clean"]["near_dedup"] and near["near_duplicates"] > 50
    assert aligned.tasks == {}  # cleaned in one piece
    same_files(tmp_path / "tasked", tmp_path / "aligned", [f"train.en-zh.{lang}.{ext}" for lang in ("en", "zh")
                                                           for ext in ("bin", "idx", "prov")] + ["dict.en.txt"])
    store = IndexedDataset(tmp_path / "aligned" / "train.align.en-zh")
    provenance = Provenance(tmp_path / "aligned" / "train.en-zh.en.prov")
    _, lines = provenance.table.locate(provenance.numbers())  # each kept pair's input line
    assert len(store) == len(lines) == aligned.splits["train"]["clean"]["kept"]["pairs"]
    assert [store[i].tolist() for i in range(len(store))] == [[0, 0, 1, (line - 1) % 3] for line in lines.tolist()]


def test_blank_line_documents(tmp_path):
    docs, copies, _ = planted_corpus(originals=300, copies=100)
    docs = [" ".join(doc.split()) for doc in docs]  # one line each: a blank line ends a document
    (tmp_path / "docs.en").write_text("".join(doc + "\n\n" for doc in docs), encoding="utf-8")
    lm = {"source_lang": "en", "tokenizer": "none", "dedup": False, "near_dedup": True, "workers": 1}
    tasked = tokenmill.prepare({**lm, "trainpref": [str(write_docs(tmp_path / "docs.jsonl", docs))],
                                "input_format": "jsonl", "source_key": "text", "tasks": 2,
                                "destdir": str(tmp_path / "tasked")}, progress=False)
    blank = tokenmill.prepare({**lm, "trainpref": str(tmp_path / "docs"), "documents": "blank-line",
                               "destdir": str(tmp_path / "blank")}, progress=False)
    near = blank.splits["train"]["clean"]["near_dedup"]
    assert near == tasked.splits["train"]["clean"]["near_dedup"]
    same_files(tmp_path / "tasked", tmp_path / "blank", ["train.bin", "train.idx", "dict.txt"])
    # the same documents kept as by the clean tasks, whose drops their parts list (blank-line runs have no .prov)
    dropped = {line - 1 for line in dropped_lines(tmp_path / "tasked")}
    found = dropped & set(copies)
    recall, precision = len(found) / len(copies), len(found) / max(1, len(dropped))
    print(f"\n--documents blank-line: {len(copies)} planted, recall {recall:.3f}, precision {precision:.3f}")
    assert recall >= RECALL_FLOOR and precision >= PRECISION_FLOOR
    assert near["near_duplicates"] == len(dropped)
    audit = json.loads((tmp_path / "blank" / ".work" / "dropped" / "train.near.json").read_text())
    assert audit and all(docs[row["kept_line"] - 1].startswith(row["kept_src"].removesuffix("…")) for row in audit)
    assert np.all([row["kept_line"] < row["line"] for row in audit])  # the first of a cluster stays
