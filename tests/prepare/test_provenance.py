"""Provenance maps and ``tokenmill.trace`` on real text: every row a batch serves re-encodes, from the input
line its map names, to the very tokens served; through dedup, held-out leaks, filters in pieces, tasks, shards
and a temperature-sampled mix of directions. The maps are the same bytes for any task count, and
``source=FILE:LINE`` finds each row where ``step=`` put it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import sentencepiece as spm

import tokenmill
from tests.loader.trace_corpus import Encoder, prepare_runs, real_pairs, settings, write_corpus, write_data_bin
from tokenmill.batching.config import BatchConfig
from tokenmill.data.pairs import PairDataset
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import ConfigError, FormatError
from tokenmill.loader.trace import TraceSettings, served_at, step_rows, trace_iterator
from tokenmill.prepare.stages import clean as clean_stage
from tokenmill.store import IndexedDataset
from tokenmill.store.provenance import InputTable, Provenance, encode_numbers, write_provenance
from tokenmill.vocab import Dictionary
from tokenmill.vocab.tokenizer import load_tokenizer, train_tokenizer

BATCH = BatchConfig(max_tokens=400, seed=3)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The sample's real pairs with duplicates, held-out leaks, empty sources and pairs too long in pieces."""
    return write_corpus(tmp_path_factory.mktemp("real"))


@pytest.fixture(scope="module")
def runs(corpus, tmp_path_factory) -> dict[int, Path]:
    """The corpus prepared with 1 and 3 tasks, train in shards of 150 pairs."""
    return prepare_runs(corpus, tmp_path_factory.mktemp, 150)


def test_the_maps_are_the_same_bytes_for_one_and_three_tasks(runs):
    maps = {tasks: sorted(p.relative_to(root) for p in root.glob("*/*.prov")) for tasks, root in runs.items()}
    shards = len(list(runs[1].glob("shard*")))
    assert shards > 1 and maps[1] == maps[3]
    assert len(maps[1]) == 2 * shards + 2, "one map per store and side (valid in shard000)"
    for relative in maps[1]:
        assert (runs[1] / relative).read_bytes() == (runs[3] / relative).read_bytes(), relative


def test_each_stored_item_re_encodes_from_the_line_its_map_names(runs, corpus):
    root = runs[3]
    encode = Encoder(root)
    lines = {name: (corpus / name).read_text(encoding="utf-8").split("\n") for name in ("a.en", "a.zh", "b.en", "b.zh")}
    seen: list[tuple[str, int]] = []
    for shard in sorted(root.glob("shard*")):
        for lang in ("en", "zh"):
            store = IndexedDataset(shard / f"train.en-zh.{lang}")
            prov = Provenance(shard / f"train.en-zh.{lang}.prov")
            files, where = prov.table.locate(prov.numbers())
            assert prov.items == len(store)
            for item, (f, line) in enumerate(zip(files.tolist(), where.tolist(), strict=True)):
                name = Path(prov.table.files[f][0 if lang == "en" else 1]).name
                assert encode(lines[name][line - 1], lang) == store[item].tolist()
                if lang == "en":
                    seen.append((name, line))
    assert len(seen) == len(set(seen)), "no input line stored twice"
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    inputs = manifest["summary"]["splits"]["train"]["inputs"]
    assert [row["read"] for row in inputs["files"]] == [len(lines["a.en"]) - 1, len(lines["b.en"]) - 1]
    assert sum(row["kept"] for row in inputs["files"]) == len(seen)


def test_every_row_of_every_step_re_encodes_and_source_finds_it_there(runs):
    root = runs[1]
    encode = Encoder(root)
    for shard in (0, 2):
        plan_settings = TraceSettings(config=BATCH, world_size=2, shard=shard, cache=False)
        iterator = trace_iterator(str(root), plan_settings)
        dataset: PairDataset = iterator.dataset  # type: ignore[assignment]
        for step in range(iterator.num_steps(1)):
            for rank in range(2):
                rows = step_rows(iterator, 1, step, rank)
                assert [r.sample for r in rows] == np.asarray(iterator.plan(1).indices(step, rank)).tolist()
                for row in rows:
                    assert encode(row.source, "en") == dataset.src[row.sample].tolist()
                    assert encode(row.target, "zh") == dataset.tgt[row.sample].tolist()
                    served = served_at(iterator, row.file, row.line, [1, 2])
                    assert [(s.step, s.rank, s.row) for s in served if s.epoch == 1] == [(step, rank, row.row)]
                    assert len([s for s in served if s.epoch == 2]) == 1


def test_a_dropped_duplicate_is_served_nowhere_and_its_first_copy_is(runs, corpus):
    lines = (corpus / "a.en").read_text(encoding="utf-8").splitlines()
    first: dict[str, int] = {}
    duplicate = None
    for number, text in enumerate(lines, 1):
        if text and text in first and len(text) < 100:
            duplicate = number
            break
        first.setdefault(text, number)
    assert duplicate is not None
    original = first[lines[duplicate - 1]]
    found = [tokenmill.trace(str(runs[1]), source=f"a.en:{n}", epoch=[1], config=BATCH, shard=s, cache=False)
             for n in (duplicate, original) for s in range(3)]
    assert sum(len(f) for f in found[:3]) == 0 and sum(len(f) for f in found[3:]) == 1


def test_the_encoding_is_compact_and_reads_back():
    rng = np.random.default_rng(1)
    dense = np.arange(10_000, dtype=np.int64)
    fields, body = encode_numbers(dense)
    assert fields["encoding"] == "runs" and len(body) == 12, "nothing dropped: one run"
    sparse = np.flatnonzero(rng.random(100_000) < 0.7)
    fields, body = encode_numbers(sparse)
    assert fields["encoding"] == "bitmap" and len(body) == 100_000 // 8


@pytest.mark.parametrize("kept", [1.0, 0.999, 0.9, 0.4])
def test_lookups_without_decoding_agree_with_the_plain_numbers(tmp_path, kept):
    rng = np.random.default_rng(int(kept * 1000))
    for trial in range(4):
        n = int(rng.integers(1, 4000))
        total = int(n / kept) + int(rng.integers(0, 40))
        numbers = np.sort(rng.choice(total, size=n, replace=False)) + int(rng.integers(0, 90))
        path = write_provenance(tmp_path / f"{trial}.prov", numbers, InputTable(["f"], [total + 100]))
        items = rng.integers(0, n, size=200)
        assert Provenance(path).numbers_of(items).tolist() == numbers[items].tolist()
        assert Provenance(path).numbers().tolist() == numbers.tolist()
        prov, kept_set = Provenance(path), set(numbers.tolist())
        for number in rng.integers(0, total + 120, size=200).tolist():
            expected = int(np.searchsorted(numbers, number)) if number in kept_set else None
            assert prov.item_of(number) == expected


def test_trace_asks_for_one_of_step_or_source_and_names_a_missing_map(runs, tmp_path):
    with pytest.raises(ConfigError, match=r"step= .* or source="):
        tokenmill.trace(str(runs[1]), shard=0)
    with pytest.raises(ConfigError, match="FILE:LINE"):
        tokenmill.trace(str(runs[1]), source="a.en", shard=0)
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in (runs[1] / "shard000").iterdir():
        if path.suffix != ".prov":
            (copy / path.name).write_bytes(path.read_bytes())
    with pytest.raises(FormatError, match=r"no provenance map .* run the same tokenmill prepare command again"):
        tokenmill.trace(str(copy), step=0, config=BATCH, cache=False)


# ----------------------------------------------------------------------------- many directions
@pytest.fixture(scope="module")
def data_bin(tmp_path_factory) -> Path:
    return write_data_bin(tmp_path_factory.mktemp("raw"))


def test_a_temperature_mix_traces_to_the_tokens_served(data_bin):
    sampling = SamplingConfig(temperature=5.0, seed=2)
    plan_settings = TraceSettings(config=BatchConfig(max_tokens=200), world_size=2, sampling=sampling, cache=False)
    iterator = trace_iterator(str(data_bin), plan_settings)
    sp = spm.SentencePieceProcessor(model_file=str(data_bin / "spm.model"))
    shared = Dictionary.load(data_bin / "dict.txt")
    copies = 0
    for step in range(iterator.num_steps(1)):
        for rank in range(2):
            rows = step_rows(iterator, 1, step, rank)
            for row in rows:
                part, item = iterator.dataset.locate(np.asarray([row.sample]))  # type: ignore[attr-defined]
                pair = iterator.dataset.parts[int(part[0])]  # type: ignore[attr-defined]
                pieces = sp.encode(row.source, out_type=str)
                assert [shared.indices.get(p, shared.unk_index) for p in pieces] + [shared.eos_index] == \
                    pair.src[int(item[0])].tolist()
                assert row.direction in ("eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl")
                served = served_at(iterator, row.file, row.line, [1])
                assert (step, rank, row.row) in [(s.step, s.rank, s.row) for s in served]
                copies += len(served) > 1
    assert copies > 0, "T=5 upsamples the small direction: some lines are served more than once"


# ----------------------------------------------------------------------------- packed language-model samples
def test_gpt_samples_trace_to_their_documents_token_ranges_and_lines(tmp_path):
    lines = [text for text, _ in real_pairs("train")]
    lines += lines[:40]  # duplicates: dedup drops them, the map skips their lines
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": line}) + "\n" for line in lines), encoding="utf-8")
    model = tmp_path / "tokenizer.json"
    train_tokenizer("hf", lines, {"kind": "byte-level-bpe", "vocab_size": 600}, model)
    tokenmill.prepare({"input": str(corpus), "output_prefix": str(tmp_path / "out" / "lm"), "json_keys": "text",
                       "tokenizer_type": "HuggingFaceTokenizer", "tokenizer_model": str(model), "append_eod": True,
                       "dedup": True, "workers": 1}, progress=False)
    store = IndexedDataset(tmp_path / "out" / "lm_text_document")
    assert len(store) == len(set(lines)), "dedup dropped the repeated documents"
    dataset = tokenmill.GPTDataset(store, tokenmill.GPTDatasetConfig(seq_length=64, seed=3), cache=False)
    config = tokenmill.GPTBatchConfig(global_batch_size=8, micro_batch_size=2)
    tokenizer = load_tokenizer("hf", model)
    eod = int(store[0][-1])
    for step in (0, 5):
        for rank in range(2):
            rows = tokenmill.trace(dataset, epoch=1, step=step, rank=rank, config=config, world_size=2)
            for row in rows:
                assert sum(p.stop - p.start for p in row.pieces) == 64 + 1  # seq_length + the extra token
                for piece in row.pieces:
                    text = lines[piece.line - 1]
                    ids = [int(i) for i in tokenizer.encode_batch([text])[0]] + [eod]
                    assert store[piece.document].tolist() == ids
                    assert piece.file.endswith("corpus.jsonl") and lines.index(text) == piece.line - 1
                found = tokenmill.trace(dataset, source=f"corpus.jsonl:{row.pieces[0].line}", config=config,
                                        world_size=2)
                assert (1, step, rank, row.row) in [(s.epoch, s.step, s.rank, s.row) for s in found]
    assert tokenmill.trace(dataset, source=f"corpus.jsonl:{len(lines)}", config=config, world_size=2) == []


def test_worker_processes_give_the_same_maps(corpus, tmp_path, monkeypatch):
    """Workers that read and clean their own input ranges send the kept items' numbers back with them."""
    monkeypatch.setattr(clean_stage, "PARALLEL_CLEAN_MIN_LINES", 0)
    made = {}
    for workers in (1, 2):
        destdir = tmp_path / f"w{workers}"
        tokenmill.prepare(settings(corpus, destdir, workers=workers), progress=False)
        made[workers] = {p.name: p.read_bytes() for p in destdir.glob("*.prov")}
    assert len(made[1]) == 4 and made[1] == made[2]


def test_skipped_bad_rows_have_no_item_and_the_map_steps_over_them(tmp_path):
    """Megatron's flags read the input as it is; rows skipped under on_malformed=skip keep their line numbers."""
    lines = [text for text, _ in real_pairs("valid")]
    rows = [json.dumps({"text": line}) for line in lines]
    rows[3], rows[10] = '{"title": "no text here"}', "not json at all"
    corpus = tmp_path / "in.jsonl"
    corpus.write_text("\n".join(rows) + "\n", encoding="utf-8")
    model = tmp_path / "tokenizer.json"
    train_tokenizer("hf", lines, {"kind": "byte-level-bpe", "vocab_size": 400}, model)
    tokenmill.prepare({"input": str(corpus), "output_prefix": str(tmp_path / "out" / "lm"), "json_keys": "text",
                       "tokenizer_type": "HuggingFaceTokenizer", "tokenizer_model": str(model),
                       "append_eod": True, "on_malformed": "skip", "workers": 1}, progress=False)
    store = IndexedDataset(tmp_path / "out" / "lm_text_document")
    prov = Provenance(tmp_path / "out" / "lm_text_document.prov")
    tokenizer = load_tokenizer("hf", model)
    _, where = prov.table.locate(prov.numbers())
    assert len(store) == len(lines) - 2 and 4 not in where.tolist() and 11 not in where.tolist()
    for item, line in enumerate(where.tolist()):
        assert store[item].tolist()[:-1] == [int(i) for i in tokenizer.encode_batch([lines[line - 1]])[0]]
