"""The clean tasks' parts read through their duplicate masks, and the splittable training sample."""

from __future__ import annotations

import json
from itertools import chain

import numpy as np
import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import assert_same_output, settings_for
from tokenmill.prepare import build_config, clean_parts, sample_tasks
from tokenmill.prepare.clean_parts import CleanParts, index_path, kept_blocks, lines_at, save_gone, text_path
from tokenmill.prepare.line_sample import SmallestKeys
from tokenmill.prepare.part_merge import LineIndexer
from tokenmill.prepare.sample_tasks import merged_sample, part_candidates
from tokenmill.prepare.stages.cleaned import CLEAN_CHUNK_LINES, clean_chunk_lines
from tokenmill.prepare.stages.tokenizer import SampleStage
from tokenmill.text import open_source
from tokenmill.text.chunks import CHUNK_BYTES
from tokenmill.text.drop_sample import line_keys
from tokenmill.vocab.t2t.sampling import sample_lines, sample_stream


def write_lines(path, rng, count: int) -> list[bytes]:
    lines = [b"w" * int(rng.integers(0, 20)) + bytes([97 + i % 26]) for i in range(count)]
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return lines


@pytest.mark.parametrize("block", [7, 37, 1 << 22])
def test_kept_blocks_drop_the_masked_lines(tmp_path, monkeypatch, block):
    monkeypatch.setattr(clean_parts, "_BLOCK_BYTES", block)
    rng = np.random.default_rng(4)
    lines = write_lines(tmp_path / "part.txt", rng, 500)
    drop = np.sort(rng.choice(500, size=120, replace=False))
    want = b"".join(line + b"\n" for i, line in enumerate(lines) if i not in set(drop.tolist()))
    assert b"".join(kept_blocks(tmp_path / "part.txt", drop)) == want
    assert b"".join(kept_blocks(tmp_path / "part.txt", np.zeros(0, np.int64))) == (tmp_path / "part.txt").read_bytes()


@pytest.mark.parametrize("every", [1, 3, 64, 1 << 16])
def test_lines_at_seeks_through_the_index(tmp_path, every):
    rng = np.random.default_rng(5)
    path = tmp_path / "part.txt"
    lines = write_lines(path, rng, 300)
    index = LineIndexer(every)
    index.add_block(path.read_bytes())
    positions = np.array([0, 1, 2, 63, 64, 65, 150, 299])
    assert lines_at(path, index.state(path), positions) == {int(p): lines[p] for p in positions}


def test_parts_of_long_documents_are_read_in_chunks_of_bounded_bytes(tmp_path, monkeypatch):
    """A part's chunks hold about CHUNK_BYTES of text, not ``chunk_lines`` documents (a corpus-sized part of
    LM documents was one chunk: the encode stage held it all); the lines read are the part's all the same."""
    monkeypatch.setattr(clean_parts, "CHUNK_BYTES", 100_000)
    folder = tmp_path / "00000"
    folder.mkdir()
    lines = [f"doc {i} " + "x" * 200 for i in range(5000)]  # ~1 MB: about 480 lines in 100 kB
    data = "".join(line + "\n" for line in lines).encode()
    text_path(folder, "en").write_bytes(data)
    index = LineIndexer(1 << 14)
    index.add_block(data)
    index_path(folder, "en").write_text(json.dumps(index.state(text_path(folder, "en"))))
    save_gone(folder, np.array([3, 4999], dtype=np.int64))
    chunks = list(CleanParts([folder], False, 65536).part_chunks(0, "en"))
    assert [len(c) for c in chunks] == [1023, 1024, 1024, 1024, 903]  # at least 1,024 read a chunk, less the gone
    assert list(chain.from_iterable(chunks)) == [line for i, line in enumerate(lines) if i not in (3, 4999)]


def test_cleaning_chunks_of_long_documents_hold_about_chunk_bytes(tmp_path):
    """clean_chunk_lines: 16,384 bitext-sized lines a chunk, fewer long documents (about CHUNK_BYTES of input)."""
    short, long = tmp_path / "train.en", tmp_path / "long.txt"
    short.write_text("".join(f"line {i}\n" for i in range(20000)))
    config = build_config({"source_lang": "en", "trainpref": str(tmp_path / "train"), "tokenizer": "none"})
    long.write_text("".join(f"doc {i} " + "x" * 8000 + "\n" for i in range(3000)))  # 24 MB
    assert clean_chunk_lines(config, open_source([str(short)])) == CLEAN_CHUNK_LINES
    assert clean_chunk_lines(config, open_source([str(long)])) == CHUNK_BYTES * 3000 // long.stat().st_size
    assert clean_chunk_lines(config) == CLEAN_CHUNK_LINES


def brute_force(lines: list[str], k: int, seed: int) -> list[str]:
    keys = line_keys(np.arange(len(lines)), seed)
    return [lines[i] for i in np.sort(np.argsort(keys)[:k]).tolist()]


@pytest.mark.parametrize("k", [1, 7, 100, 5000])
def test_the_sample_is_the_k_smallest_keys_however_the_lines_are_cut(k):
    lines = [f"line {i}" for i in range(2000)]
    want = brute_force(lines, k, seed=3)
    whole = SmallestKeys(k, seed=3)
    for start in range(0, 2000, 64):
        whole.add(lines[start : start + 64])
    assert whole.sample() == want
    rng = np.random.default_rng(k)
    cuts = np.sort(rng.choice(np.arange(1, 2000), size=5, replace=False)).tolist()
    merged = SmallestKeys(k, seed=3)
    for a, b in zip([0, *cuts], [*cuts, 2000], strict=True):
        part = SmallestKeys(k, seed=3, first=a)  # a part sampled on its own, numbered from its first line
        for start in range(a, b, 13):
            part.add(lines[start : min(start + 13, b)])
        merged.merge(part)
    assert merged.sample() == want
    assert SmallestKeys(k, seed=4).sample() == []


def test_t2t_sample_of_a_stream_is_the_files(tmp_path):
    rng = np.random.default_rng(6)
    path = tmp_path / "text.txt"
    write_lines(path, rng, 3000)
    want = list(sample_lines(path, 500))
    assert len(want) > 10
    raw = path.read_bytes().splitlines(keepends=True)
    assert list(sample_stream(iter(raw), path.stat().st_size, 500, "text")) == want


def test_a_tasked_t2t_run_samples_the_parts_as_the_file(tmp_path):
    """T2T's byte-budget sample reads the parts through their masks: the vocabulary and stores of 3 tasks are
    the plain run's."""
    corpus = write_corpus(tmp_path / "corpus", pairs=900)
    t2t = {"tokenizer": "t2t-subword", "joint_spm": True, "vocab_size": 300, "file_byte_budget": 2000}
    tokenmill.prepare(settings_for(corpus, tmp_path / "plain", **t2t), progress=False)
    summary = tokenmill.prepare(settings_for(corpus, tmp_path / "tasks", tasks=3, **t2t), progress=False)
    assert len(summary.tasks["clean.train"]) == 3
    assert_same_output(tmp_path / "plain", tmp_path / "tasks")


def write_parts(tmp_path, rng, sizes: list[int]) -> tuple[CleanParts, list[str]]:
    """Parts of ``en`` lines with random duplicate masks; returns them and the lines that stay, in order."""
    folders, kept = [], []
    for k, size in enumerate(sizes):
        folder = tmp_path / f"{k:05d}"
        folder.mkdir()
        lines = [f"part {k} line {i} " + "x" * int(rng.integers(0, 9)) for i in range(size)]
        data = "".join(line + "\n" for line in lines).encode()
        (folder / "en.txt").write_bytes(data)
        index = LineIndexer(16)
        index.add_block(data)
        (folder / "en.index.json").write_text(json.dumps(index.state(folder / "en.txt")))
        gone = np.sort(rng.choice(size, size=size // 3, replace=False)) if size else np.zeros(0, np.int64)
        save_gone(folder, gone)
        kept += [line for i, line in enumerate(lines) if i not in set(gone.tolist())]
        folders.append(folder)
    return CleanParts(folders, quoted=False, chunk_lines=7), kept


@pytest.mark.parametrize("capacity", [1, 10, 80, 100_000])
def test_candidates_per_part_merge_into_the_whole_texts_sample(tmp_path, capacity):
    rng = np.random.default_rng(capacity)
    parts, kept = write_parts(tmp_path, rng, [90, 0, 1, 150, 60])
    assert list(chain.from_iterable(parts.chunks("en"))) == kept
    counts = parts.kept_lines()
    bases = np.concatenate([[0], np.cumsum(counts)[:-1]]).tolist()
    for index, base in enumerate(bases):
        out = tmp_path / f"out{index}"
        out.mkdir()
        part_candidates(parts, index, ["en", "en"], base, len(kept), capacity, 9, out, "s")
    merged = merged_sample([tmp_path / f"out{i}" for i in range(len(bases))], "s", capacity, 2 * len(kept))
    assert merged == brute_force(kept + kept, capacity, seed=9)  # two sides numbered one after the other


def test_parts_keep_their_share_of_the_sample_not_all_of_it(tmp_path):
    """Under the text's key limit a part writes about its share of k (plus the margin), not k lines each: 20
    parts of a 20,000-line text and k = 500 write a few times k in all, where 20 k without the limit."""
    rng = np.random.default_rng(5)
    parts, kept = write_parts(tmp_path, rng, [1500] * 20)
    bases = np.concatenate([[0], np.cumsum(parts.kept_lines())[:-1]]).tolist()
    written = 0
    for index, base in enumerate(bases):
        out = tmp_path / f"out{index}"
        out.mkdir()
        written += part_candidates(parts, index, ["en"], base, len(kept), 500, 2, out, "s")
    assert 500 <= written < 3 * 500
    merged = merged_sample([tmp_path / f"out{i}" for i in range(len(bases))], "s", 500, len(kept))
    assert merged == brute_force(kept, 500, seed=2)


def test_too_few_keys_under_the_limit_ask_for_one_pass(tmp_path, monkeypatch):
    """Should the parts hold fewer than k keys under the limit (odds of e^-32), the merge returns None rather
    than a short or different sample; the pipeline then draws it in one pass (next test)."""
    monkeypatch.setattr(sample_tasks, "key_limit", lambda capacity, population: 1 << 50)  # far too low
    parts, kept = write_parts(tmp_path, np.random.default_rng(6), [300, 200])
    for index, base in enumerate([0, parts.kept_lines()[0]]):
        (tmp_path / f"out{index}").mkdir()
        part_candidates(parts, index, ["en"], base, len(kept), 50, 4, tmp_path / f"out{index}", "s")
    assert merged_sample([tmp_path / "out0", tmp_path / "out1"], "s", 50, len(kept)) is None


def test_a_short_merge_draws_the_sample_in_one_pass_with_the_same_lines(tmp_path, monkeypatch):
    corpus = write_corpus(tmp_path / "corpus", pairs=600)
    settings = {"input_sentence_size": 150}
    tokenmill.prepare(settings_for(corpus, tmp_path / "plain", **settings), progress=False)
    monkeypatch.setattr(SampleStage, "from_parts", staticmethod(lambda *args: None))  # as if the limit left too few
    summary = tokenmill.prepare(settings_for(corpus, tmp_path / "tasked", tasks=3, **settings), progress=False)
    assert "clean.train" in summary.tasks
    assert_same_output(tmp_path / "plain", tmp_path / "tasked")


def test_alignments_with_one_task_are_cleaned_in_one_piece(tmp_path):
    """--align-suffix is not cut into tasks (the clean tasks write no alignment parts): --tasks 1 runs the
    plain path instead of losing train's alignments."""
    corpus = write_corpus(tmp_path / "corpus", pairs=300)
    for split, pairs in (("train", 300), ("valid", 40), ("test", 40)):
        (corpus / f"{split}.align").write_text("".join(f"0-0 1-{i % 3}\n" for i in range(pairs)))
    words = {"align_suffix": "align", "tokenizer": "none", "filters": {}}
    tokenmill.prepare(settings_for(corpus, tmp_path / "plain", **words), progress=False)
    summary = tokenmill.prepare(settings_for(corpus, tmp_path / "one", tasks=1, **words), progress=False)
    assert summary.tasks == {}
    assert (tmp_path / "one" / "train.align.en-zh.bin").exists()
    assert_same_output(tmp_path / "plain", tmp_path / "one")
