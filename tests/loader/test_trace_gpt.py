"""``tokenmill.trace`` of Megatron GPT samples and blends: each sample of a micro step comes back as the documents
it spans, the token range taken from each and their input file and line. On real text with dedup and a filter,
prepared with tasks N = 1 and 3: the ranges concatenate to the very tokens the sample serves (``get_batch``),
each document re-encodes from its line, and ``source=FILE:LINE`` finds each sample where ``step=`` put it, also
through a blend (which member, which store)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tokenmill
from tests.loader.trace_corpus import real_pairs
from tokenmill.store import IndexedDataset
from tokenmill.vocab.tokenizer import load_tokenizer, train_tokenizer

CONFIG = tokenmill.GPTBatchConfig(global_batch_size=8, micro_batch_size=2)


@pytest.fixture(scope="module")
def lm(tmp_path_factory) -> dict:
    """Two JSONL corpora of real sentences (repeats for dedup, short lines for the filter), a byte-level BPE
    model, ``a`` prepared with 1 task and with 3, ``b`` with 3."""
    folder = tmp_path_factory.mktemp("lm")
    lines = [text for text, _ in real_pairs("train")] + [text for text, _ in real_pairs("valid")]
    corpora = {"a": lines[:220] + lines[:30], "b": lines[220:] + lines[230:250]}
    for name, part in corpora.items():
        (folder / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in part), encoding="utf-8")
    model = folder / "tokenizer.json"
    train_tokenizer("hf", lines, {"kind": "byte-level-bpe", "vocab_size": 600}, model)
    prefixes = {}
    for name, tasks in (("a", 1), ("a", 3), ("b", 3)):
        prefix = folder / f"{name}{tasks}" / name
        summary = tokenmill.prepare({
            "input": str(folder / f"{name}.jsonl"), "output_prefix": str(prefix), "json_keys": "text",
            "tokenizer_type": "HuggingFaceTokenizer", "tokenizer_model": str(model), "append_eod": True,
            "dedup": True, "filters": {"min_chars": 30}, "tasks": tasks, "workers": 1}, progress=False)
        clean = summary.splits["train"]["clean"]
        assert clean["dedup"]["duplicates"] > 5 and clean["filter"]["dropped_chars"] > 5
        prefixes[(name, tasks)] = IndexedDataset(f"{prefix}_text_document")
    return {"corpora": corpora, "model": model, "stores": prefixes}


class Served:
    """Checks a traced row against what the dataset serves and against the input text."""

    def __init__(self, lm: dict) -> None:
        self.tokenizer = load_tokenizer("hf", lm["model"])
        self.corpora = lm["corpora"]

    def check(self, source, row) -> None:
        """The row's pieces concatenate to its sample's tokens (and the extra label token); each piece's
        document is its line re-encoded with the end-of-document token."""
        batch = source.get_batch([row.sample])
        served = [*batch["tokens"][0].tolist(), int(batch["labels"][0][-1])]
        store = IndexedDataset(row.store)
        pieces = [store[p.document][p.start:p.stop] for p in row.pieces]
        assert np.concatenate(pieces).tolist() == served
        for piece in row.pieces:
            text = self.corpora[Path(piece.file).stem][piece.line - 1]
            document = store[piece.document].tolist()
            assert document[:-1] == [int(i) for i in self.tokenizer.encode_batch([text])[0]]


def places(found) -> list[tuple[int, int, int, int]]:
    return [(s.epoch, s.step, s.rank, s.row) for s in found]


def test_the_stores_and_maps_are_the_same_bytes_for_one_and_three_tasks(lm):
    one, three = lm["stores"][("a", 1)].prefix, lm["stores"][("a", 3)].prefix
    for suffix in (".bin", ".idx", ".prov"):
        assert Path(f"{one}{suffix}").read_bytes() == Path(f"{three}{suffix}").read_bytes(), suffix


@pytest.mark.parametrize("tasks", [1, 3])
def test_each_sample_is_its_documents_token_ranges_and_source_finds_it(lm, tasks):
    dataset = tokenmill.GPTDataset(lm["stores"][("a", tasks)], tokenmill.GPTDatasetConfig(seq_length=32, seed=3),
                                   cache=False)
    served = Served(lm)
    plan_steps = len(dataset) // CONFIG.global_batch_size * CONFIG.global_batch_size // 4
    spanning = 0
    for step in range(plan_steps):
        for rank in range(2):
            rows = tokenmill.trace(dataset, epoch=1, step=step, rank=rank, config=CONFIG, world_size=2)
            assert len(rows) == CONFIG.micro_batch_size
            for row in rows:
                served.check(dataset, row)
                spanning += len(row.pieces) > 1
                assert row.member is None and "member" not in row.to_dict()
                for piece in row.pieces:
                    found = tokenmill.trace(dataset, source=f"a.jsonl:{piece.line}", config=CONFIG, world_size=2)
                    assert (1, step, rank, row.row) in places(found)
    assert spanning > 10, "samples span several documents"


def test_a_blend_names_each_samples_member_and_source_finds_it_through_the_blend(lm):
    config = tokenmill.GPTDatasetConfig(seq_length=32, seed=5)
    members = [tokenmill.GPTDataset(lm["stores"][key], config, cache=False) for key in (("a", 1), ("b", 3))]
    blend = tokenmill.BlendedDataset(members, [0.6, 0.4], size=64, cache=False)
    served = Served(lm)
    seen = set()
    for step in range(64 // 4):
        for rank in range(2):
            for row in tokenmill.trace(blend, epoch=1, step=step, rank=rank, config=CONFIG, world_size=2):
                assert row.member == int(blend.dataset_index[row.sample])
                assert row.member_sample == int(blend.dataset_sample_index[row.sample])
                assert row.store == str(members[row.member].dataset.prefix)
                assert {Path(p.file).name for p in row.pieces} == {("a.jsonl", "b.jsonl")[row.member]}
                served.check(blend, row)
                seen.add(row.member)
                line = f"{Path(row.pieces[-1].file).name}:{row.pieces[-1].line}"
                found = tokenmill.trace(blend, source=line, epoch=[1, 2], config=CONFIG, world_size=2)
                assert (1, step, rank, row.row) in places(found) and {s.epoch for s in found} == {1, 2}
                assert all(int(blend.dataset_index[s.sample]) == row.member for s in found)
    assert seen == {0, 1}


def test_a_dropped_line_is_in_no_sample_and_an_unknown_file_is_one_error(lm):
    config = tokenmill.GPTDatasetConfig(seq_length=32, seed=5)
    members = [tokenmill.GPTDataset(lm["stores"][key], config, cache=False) for key in (("a", 1), ("b", 3))]
    blend = tokenmill.BlendedDataset(members, [0.5, 0.5], size=64, cache=False)
    corpus = lm["corpora"]["b"]
    repeated = next(n for n, text in enumerate(corpus, 1) if corpus.index(text) != n - 1)
    short = next(n for n, text in enumerate(corpus, 1) if len(text) < 30)
    for line in (repeated, short):
        assert tokenmill.trace(blend, source=f"b.jsonl:{line}", config=CONFIG, world_size=2) == []
    with pytest.raises(tokenmill.ConfigError, match=r"no dataset of blend of .* was made from a file named c\.jsonl"):
        tokenmill.trace(blend, source="c.jsonl:3", config=CONFIG, world_size=2)
    rows = tokenmill.trace(blend, step=0, config=CONFIG, world_size=2)
    assert json.loads(json.dumps([r.to_dict() for r in rows]))[0]["member"] in (0, 1)
    assert np.all(np.diff([r.row for r in rows]) == 1)
