"""``tokenmill.trace`` of pairs packed into rows (``pack=``): every pair of every row of every step, re-encoded from
the input line its map names, is the very tokens the packed collate serves in that row's segment; through dedup,
held-out leaks, the piece filter, tasks N = 1 and 3, shards and a temperature-sampled mix of directions. And
``source=FILE:LINE`` finds each pair at the (step, rank, row, position) where ``step=`` put it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sentencepiece as spm

import tokenmill
from tests.loader.trace_corpus import Encoder, prepare_runs, write_corpus, write_data_bin
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.packed_collate import collate_packed
from tokenmill.batching.packed_pairs import PackConfig
from tokenmill.data.sampling import SamplingConfig
from tokenmill.loader.trace import TraceSettings, served_at, step_rows, trace_iterator
from tokenmill.vocab import Dictionary

PACK = PackConfig(max_length=48, max_tokens=240, seed=3)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """The real corpus (duplicates, leaks, empty and over-long lines, under ``"corpus"``) prepared with 1 and 3
    tasks, in shards."""
    corpus = write_corpus(tmp_path_factory.mktemp("real"))
    return {"corpus": corpus, **prepare_runs(corpus, tmp_path_factory.mktemp, 200)}


def segment(features: dict, side: str, row: int, position: int) -> list[int]:
    """The tokens of segment ``position`` (0 first) of ``row`` on one side of the packed features."""
    tokens, segments = features[side][row], features[f"{side}_segmentation"][row]
    return tokens[segments == position + 1].tolist()


def check_every_step(iterator, encode, world_size: int) -> list[tuple[str, int]]:
    """Every pair of every row of epoch 1: its text re-encodes to its segment, and ``served_at`` finds it there.
    Returns the (file, line) of each pair in plan order."""
    plan, seen = iterator.plan(1), []
    for step in range(plan.num_steps):
        for rank in range(world_size):
            rows = step_rows(iterator, 1, step, rank)
            batch = plan.indices(step, rank)
            assert [r.sample for r in rows] == np.asarray(batch.ids).tolist()
            features = collate_packed(iterator.dataset, batch)
            assert len({r.row for r in rows}) == batch.num_rows
            for row in rows:
                assert row.position == [r.sample for r in rows if r.row == row.row].index(row.sample)
                assert encode(row.source, "src") == segment(features, "inputs", row.row, row.position)
                assert encode(row.target, "tgt") == segment(features, "targets", row.row, row.position)
                served = served_at(iterator, row.file, row.line, [1])
                assert (step, rank, row.row, row.position) in [(s.step, s.rank, s.row, s.position) for s in served]
                seen.append((Path(row.file).name, row.line))
    return seen


@pytest.mark.parametrize("strategy", ["ffd", "greedy"])
def test_every_packed_pair_re_encodes_to_its_segment_and_source_finds_it(runs, strategy):
    pack = PackConfig(max_length=48, max_tokens=240, seed=3, strategy=strategy)
    seen = {}
    for tasks in (1, 3):
        root = runs[tasks]
        encoder = Encoder(root)

        def encode(text: str, side: str, encoder=encoder) -> list[int]:
            return encoder(text, "en" if side == "src" else "zh")

        seen[tasks] = []
        for shard in (0, 1):
            iterator = trace_iterator(str(root), TraceSettings(config=BatchConfig(max_tokens=240), world_size=2,
                                                               shard=shard, cache=False, pack=pack))
            assert iterator.plan(1).stats.extra["pairs_per_row"] > 1.5, "rows hold several pairs"
            seen[tasks] += check_every_step(iterator, encode, 2)
    assert seen[1] == seen[3], "the same lines in the same places for one task and three"
    assert len(seen[1]) == len(set(seen[1])), "one epoch serves each kept line once"


def test_a_dropped_duplicate_is_in_no_packed_row_and_its_first_copy_is_in_one(runs):
    corpus, root = runs["corpus"], runs[3]
    lines = (corpus / "a.en").read_text(encoding="utf-8").splitlines()
    first: dict[str, int] = {}
    duplicate = next(n for n, text in enumerate(lines, 1) if text and first.setdefault(text, n) != n)
    original = first[lines[duplicate - 1]]

    def served(line: int) -> list:
        return [s for shard in (0, 1) for s in tokenmill.trace(
            str(root), source=f"a.en:{line}", epoch=[1, 2], shard=shard, config=BatchConfig(max_tokens=240),
            pack=PACK, cache=False)]

    assert served(duplicate) == []
    kept = served(original)
    assert [s.epoch for s in kept] == [1, 2] and all(s.position is not None for s in kept)


def test_a_temperature_mix_packs_and_traces_to_the_tokens_served(tmp_path_factory):
    data_bin = write_data_bin(tmp_path_factory.mktemp("raw"))
    sampling = SamplingConfig(temperature=5.0, seed=2)
    iterator = trace_iterator(str(data_bin), TraceSettings(config=BatchConfig(max_tokens=200), world_size=2,
                                                           sampling=sampling, cache=False, pack=PACK))
    sp = spm.SentencePieceProcessor(model_file=str(data_bin / "spm.model"))
    shared = Dictionary.load(data_bin / "dict.txt")
    tags = {lang: shared.indices[f"__{lang}__"] for lang in ("eng_Latn", "deu_Latn", "rus_Cyrl")}

    def encode(text: str, side: str, row) -> list[int]:
        src, tgt = row.direction.split("-")
        pieces = sp.encode(text, out_type=str)
        tag = tags[src] if side == "src" else tags[tgt]  # the encoder's tag is the source language (default)
        return [tag] + [shared.indices.get(p, shared.unk_index) for p in pieces] + [shared.eos_index]

    plan, copies = iterator.plan(1), 0
    for step in range(plan.num_steps):
        for rank in range(2):
            features = collate_packed(iterator.dataset, plan.indices(step, rank))
            for row in step_rows(iterator, 1, step, rank):
                assert encode(row.source, "src", row) == segment(features, "inputs", row.row, row.position)
                assert encode(row.target, "tgt", row) == segment(features, "targets", row.row, row.position)
                served = served_at(iterator, row.file, row.line, [1])
                assert (step, rank, row.row, row.position) in [(s.step, s.rank, s.row, s.position) for s in served]
                copies += len(served) > 1
    assert copies > 0, "T=5 upsamples the small direction: some lines are in more than one row"
